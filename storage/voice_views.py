"""Turn-level voice metrics as views of :func:`assay.connect`: ``turns``, ``turn_metrics`` and ``turn_metrics_daily``.

The SQL form of the turn arithmetic the ``timing.*`` mechanisms judge with
(:mod:`assay.transforms.mechanisms.turns`): a turn's gap is its ``t`` minus the previous turn's ``end_t``;
an agent turn after a caller turn is a reply, its gap the response latency; a caller turn starting
before the agent turn before it ended is a barge-in, an agent turn starting before the caller turn
before it ended a talk-over (strict overlap: no tolerance here). Timings that are NaN read as unknown.

Only case runs that executed count. A turn's id is ``<case_run_id>:<position>`` (0-based): stable,
since evidence is written once and never changed.

Each entry: its SQL, what it is, and its columns' meaning (as :data:`assay.storage.views.DERIVED`).
"""

from __future__ import annotations

SILENCE_MS = 2000
"""A gap between turns longer than this many milliseconds is a long silence in ``turn_metrics``."""

_TURNS = """
WITH flat AS (
  SELECT c.case_run_id, c.run_id, c.team_id, s.suite_key, c.case_key, c.date, c.runner,
         generate_subscripts(c.transcript, 1) - 1 AS position, unnest(c.transcript) AS turn
  FROM case_runs c LEFT JOIN suites s ON s.suite_id = c.suite_id
  WHERE c.status = 'executed'
), timed AS (
  SELECT * EXCLUDE (turn), turn.role AS role,
         CASE WHEN NOT isnan(turn.t) THEN turn.t END AS t, CASE WHEN NOT isnan(turn.end_t) THEN turn.end_t END AS end_t
  FROM flat
), paired AS (
  SELECT *, lag(role) OVER w AS prev_role, (t - lag(end_t) OVER w) * 1000 AS gap_ms
  FROM timed WINDOW w AS (PARTITION BY case_run_id ORDER BY position)
)
SELECT case_run_id || ':' || position AS turn_id, case_run_id, run_id, team_id, suite_key, case_key, date, runner,
  CAST(position AS INTEGER) AS position, role, t, end_t, (end_t - t) * 1000 AS duration_ms, gap_ms,
  CASE WHEN role = 'agent' AND prev_role = 'caller' THEN gap_ms END AS latency_ms,
  CASE WHEN role = 'caller' AND prev_role = 'agent' THEN gap_ms < 0 ELSE false END AS barge_in,
  CASE WHEN role = 'agent' AND prev_role = 'caller' THEN gap_ms < 0 ELSE false END AS talk_over
FROM paired
"""

_TURN_METRICS = f"""
SELECT case_run_id, any_value(run_id) AS run_id, any_value(team_id) AS team_id, any_value(suite_key) AS suite_key,
  any_value(case_key) AS case_key, any_value(date) AS date, any_value(runner) AS runner,
  count(*) AS turns, count(*) FILTER (WHERE t IS NULL OR end_t IS NULL) AS untimed_turns,
  count(latency_ms) AS replies,
  quantile_cont(latency_ms, 0.5) AS latency_p50_ms, quantile_cont(latency_ms, 0.95) AS latency_p95_ms,
  max(latency_ms) AS latency_max_ms,
  count(*) FILTER (WHERE barge_in) AS barge_ins, count(*) FILTER (WHERE talk_over) AS talk_overs,
  count(*) FILTER (WHERE gap_ms > {SILENCE_MS}) AS long_silences, max(gap_ms) AS longest_gap_ms,
  CASE WHEN count(duration_ms) = count(*) AND sum(duration_ms) > 0
       THEN coalesce(sum(duration_ms) FILTER (WHERE role = 'agent'), 0) / sum(duration_ms) END AS talk_ratio
FROM turns GROUP BY case_run_id
"""

_TURN_METRICS_DAILY = """
WITH replies AS (
  SELECT date, team_id, suite_key, count(latency_ms) AS replies, quantile_cont(latency_ms, 0.5) AS latency_p50_ms,
         quantile_cont(latency_ms, 0.95) AS latency_p95_ms, max(latency_ms) AS latency_max_ms
  FROM turns GROUP BY date, team_id, suite_key
), calls AS (
  SELECT date, team_id, suite_key, count(*) AS case_runs, CAST(sum(turns) AS BIGINT) AS turns,
         sum(barge_ins) / count(*) AS barge_ins_per_call, sum(talk_overs) / count(*) AS talk_overs_per_call,
         sum(long_silences) / count(*) AS long_silences_per_call, avg(talk_ratio) AS talk_ratio
  FROM turn_metrics GROUP BY date, team_id, suite_key
)
SELECT * FROM calls JOIN replies USING (date, team_id, suite_key)
"""

_WHERE = {
    "case_run_id": "The case run (`case_runs.case_run_id`).",
    "suite_key": "The suite's key (from `suites`).",
    "runner": "The runner that produced the evidence.",
}
_LATENCY = {
    "replies": "Agent turns right after a caller turn whose latency is known.",
    "latency_p50_ms": "The median response latency in ms (linear interpolation, as `timing.response_latency`).",
    "latency_p95_ms": "Its 95th percentile in ms.",
    "latency_max_ms": "The slowest reply in ms.",
}

VOICE: dict[str, tuple[str, str, dict[str, str]]] = {
    "turns": (
        _TURNS,
        "One row per turn of every case run that executed, with the timings the `timing.*` mechanisms read: "
        "the gap since the previous turn, the response latency of a reply, barge-ins and talk-overs.",
        {
            **_WHERE,
            "turn_id": "`<case_run_id>:<position>`: stable, since evidence is written once.",
            "position": "The turn's 0-based position in the transcript.",
            "role": "caller, agent or system.",
            "t": "Seconds from the start of the conversation when the turn began; null when unknown.",
            "end_t": "When it ended; null when unknown.",
            "duration_ms": "`(end_t - t) * 1000`.",
            "gap_ms": "`(t - previous turn's end_t) * 1000`: negative when they overlap; null for a first turn or "
                      "when a timing is unknown.",
            "latency_ms": "For an agent turn right after a caller turn, its gap: the response latency.",
            "barge_in": "A caller turn starting before the agent turn before it ended (null when unknown).",
            "talk_over": "An agent turn starting before the caller turn before it ended (null when unknown).",
        },
    ),
    "turn_metrics": (
        _TURN_METRICS,
        f"Per case run with turns: response latency, interruptions, silences longer than {SILENCE_MS} ms and the "
        "talk ratio, from `turns`. Figures are over the turns whose timings are known (`untimed_turns` says "
        "how many are not); the talk ratio needs them all.",
        {
            **_WHERE, **_LATENCY,
            "turns": "Turns in the transcript.",
            "untimed_turns": "Turns without `t` or `end_t`.",
            "barge_ins": "Caller turns starting before the agent's turn ended.",
            "talk_overs": "Agent turns starting before the caller's turn ended.",
            "long_silences": f"Gaps between consecutive turns longer than {SILENCE_MS} ms.",
            "longest_gap_ms": "The longest gap between consecutive turns, in ms.",
            "talk_ratio": "The agent's share of the speaking time (its turns' durations over all turns'); null "
                          "unless every turn is timed and some time was spoken.",
        },
    ),
    "turn_metrics_daily": (
        _TURN_METRICS_DAILY,
        "Per day, team and suite: response-latency percentiles over every reply of the day, and interruptions, "
        "long silences and the talk ratio per call (from `turn_metrics`).",
        {
            **_WHERE, **_LATENCY,
            "case_runs": "Case runs with turns.",
            "turns": "Their turns.",
            "barge_ins_per_call": "Barge-ins per case run.",
            "talk_overs_per_call": "Talk-overs per case run.",
            "long_silences_per_call": f"Gaps longer than {SILENCE_MS} ms per case run.",
            "talk_ratio": "The mean of the case runs' talk ratios (those that have one).",
        },
    ),
}
"""The voice views: SQL, what each is, and its columns' meaning."""

__all__ = ["SILENCE_MS", "VOICE"]
