"""The fleet-wide rollups of :func:`assay.connect`: views over the projected tables (product §5).

The projections flow keeps one row per run in each projected table
(:mod:`assay.storage.lake.projection_tables`); these views group them by team, period, assertion
version and evaluator, so a fleet question is one ``SELECT``. Every view that adds up results from
more than one evaluator lists them (``evaluators``) and says so (``mixed_evaluators``): a vendor's
guardrail, our judge and a transcript check are different measurements. A result whose runner cannot
evaluate it (evaluator ``assay:unsupported``) is *not applicable*, counted apart from the failures.

Each entry: its SQL, what it is, and its columns' meaning (as :data:`assay.storage.views.DERIVED`).
"""

from __future__ import annotations

from assay.core.criteria import UNSUPPORTED

_APPLIES = f"evaluator <> '{UNSUPPORTED}'"
"""A result its runner could evaluate: only those are failures when not met."""
_MIX = """list_sort(list_distinct(list(evaluator))) AS evaluators, count(DISTINCT evaluator) > 1 AS mixed_evaluators"""
_FAILED = f"coalesce(sum(not_met) FILTER (WHERE {_APPLIES}), 0)"
_COUNTS = f"""CAST(sum(results) AS BIGINT) AS results, CAST(sum(met) AS BIGINT) AS met,
  CAST({_FAILED} AS BIGINT) AS not_met, CAST(coalesce(sum(not_met) FILTER (WHERE NOT {_APPLIES}), 0) AS BIGINT)
  AS not_applicable, CAST(sum(undetermined) AS BIGINT) AS undetermined,
  sum(met) / nullif(sum(met) + {_FAILED}, 0) AS met_rate"""

_VERDICT_COUNTS = """
SELECT date, team_id, suite_key, consumer_key,
  count(*) FILTER (WHERE is_current) AS runs,
  count(*) FILTER (WHERE is_current AND verdict = 'pass') AS pass,
  count(*) FILTER (WHERE is_current AND verdict = 'fail') AS fail,
  count(*) FILTER (WHERE is_current AND verdict = 'error') AS error,
  count(*) FILTER (WHERE is_current AND verdict IS NULL) AS not_judged,
  count(*) FILTER (WHERE is_stamped AND stamped_verdict = 'pass') AS stamped_pass,
  count(*) FILTER (WHERE is_stamped AND stamped_verdict = 'fail') AS stamped_fail,
  count(*) FILTER (WHERE is_stamped AND stamped_verdict = 'error') AS stamped_error,
  coalesce(bool_or(mixed_evaluators), false) AS mixed_evaluators
FROM run_verdicts GROUP BY date, team_id, suite_key, consumer_key
"""

_FLEET_WEEKLY = f"""
SELECT assertion_key, team_id, week, count(DISTINCT run_id) AS runs, {_COUNTS},
  list_sort(list_distinct(list(assertion_version))) AS versions, {_MIX}
FROM behaviour_stats GROUP BY assertion_key, team_id, week
"""

_BEHAVIOUR_TEAMS = f"""
SELECT assertion_key, week,
  count(DISTINCT team_id) FILTER (WHERE not_met > 0 AND {_APPLIES}) AS teams_failing,
  count(DISTINCT team_id) AS teams_measured,
  coalesce(list_sort(list_distinct(list(team_id) FILTER (WHERE not_met > 0 AND {_APPLIES}))), []) AS failing_teams,
  {_COUNTS}, {_MIX}
FROM behaviour_stats GROUP BY assertion_key, week
"""

_BEHAVIOUR_TREND = f"""
SELECT assertion_key, assertion_version, week, count(DISTINCT team_id) AS teams, count(DISTINCT run_id) AS runs,
  {_COUNTS}, {_MIX}
FROM behaviour_stats GROUP BY assertion_key, assertion_version, week
"""

_EVALUATOR_AGREEMENT = """
SELECT behaviour, vendor_key, our_evaluator, vendor_evaluator, team_id,
  count(*) AS pairs, count(agree) AS decided,
  count(*) FILTER (WHERE agree) AS agree, count(*) FILTER (WHERE NOT agree) AS disagree,
  count(*) FILTER (WHERE agree) / nullif(count(agree), 0) AS agreement_rate,
  count(*) FILTER (WHERE our_met AND NOT vendor_met) AS we_pass_vendor_fails,
  count(*) FILTER (WHERE NOT our_met AND vendor_met) AS we_fail_vendor_passes
FROM evaluator_pairs GROUP BY behaviour, vendor_key, our_evaluator, vendor_evaluator, team_id
"""

_COST_COLUMNS = """count(*) AS runs, CAST(sum(case_runs) AS BIGINT) AS case_runs,
  sum(runner_cost_usd) AS runner_cost_usd, sum(judge_cost_usd) AS judge_cost_usd, sum(total_cost_usd) AS total_cost_usd"""

_RUNNER_COSTS = f"""
SELECT team_id, week, runner, {_COST_COLUMNS} FROM run_costs GROUP BY team_id, week, runner
"""

_CONSUMER_COSTS = f"""
SELECT v.consumer_key, c.team_id, c.week, {_COST_COLUMNS}
FROM (SELECT DISTINCT run_id, consumer_key FROM run_verdicts) v JOIN run_costs c USING (run_id)
GROUP BY v.consumer_key, c.team_id, c.week
"""

_RATE = "Met / (met + not met): undetermined results are in neither; null when none was decided."
_MIXED = "True when more than one evaluator stands behind these figures (they mix measurements)."
_EVALUATORS = "The evaluators behind these figures, sorted."
_COUNT_NOTES = {
    "results": "Current results (each case run's latest outcome).",
    "met": "Of those, met.",
    "not_met": "Of those, not met: failures (a result its runner could not evaluate is not one).",
    "not_applicable": "Of those, not met because the runner cannot evaluate the key (evaluator "
                      f"`{UNSUPPORTED}`): not applicable there, never a failure.",
    "undetermined": "Of those, could not be determined: never a pass, never a failure.",
    "met_rate": _RATE,
    "evaluators": _EVALUATORS,
    "mixed_evaluators": _MIXED,
}
_COST_NOTES = {
    "runs": "Runs.",
    "case_runs": "Their case runs.",
    "runner_cost_usd": "What the runners reported spending (null when none reported a cost).",
    "judge_cost_usd": "What our judge spent on them, each judgement once (null when no price is configured).",
    "total_cost_usd": "Both together.",
}

FLEET: dict[str, tuple[str, str, dict[str, str]]] = {
    "verdict_counts": (
        _VERDICT_COUNTS,
        "Pass, fail and error per day, team, suite and consumer: the verdict under each consumer's current criteria "
        "over the current results, next to the verdicts stamped at finalisation (from `run_verdicts`).",
        {
            "runs": "Finalised runs the consumer reads.",
            "pass": "Of those, pass under the consumer's current criteria, now.",
            "fail": "Of those, fail.",
            "error": "Of those, error.",
            "not_judged": "Of those, with nothing judged.",
            "stamped_pass": "Runs whose stamped verdict was pass (under the version stamped at their start).",
            "stamped_fail": "Runs whose stamped verdict was fail.",
            "stamped_error": "Runs whose stamped verdict was error.",
            "mixed_evaluators": "True when any of these verdicts counts results of more than one evaluator.",
        },
    ),
    "fleet_weekly": (
        _FLEET_WEEKLY,
        "Per assertion key, team and week: how the behaviour's current results came out, across its versions.",
        {"runs": "Runs with a result of the key.", "versions": "The assertion versions judged.", **_COUNT_NOTES},
    ),
    "behaviour_teams": (
        _BEHAVIOUR_TEAMS,
        "Per assertion key and week: in how many teams the behaviour failed. A failure common to forty teams is "
        "`WHERE teams_failing >= 40`; over any period, `SELECT * FROM common_failures(40, DATE '2026-11-01', "
        "DATE '2026-12-01')` (a table macro: key, teams failing, the teams, failures, results, evaluators).",
        {
            "teams_failing": "Teams with at least one failure (not met) of the key that week.",
            "teams_measured": "Teams with any result of the key that week.",
            "failing_teams": "The failing teams, sorted.",
            **_COUNT_NOTES,
        },
    ),
    "behaviour_trend": (
        _BEHAVIOUR_TREND,
        "Per assertion key, version and week: a behaviour's history across its rewordings (a rewording starts a "
        "new version; the key keeps the history).",
        {"teams": "Teams with a result of this version that week.", "runs": "Runs with one.", **_COUNT_NOTES},
    ),
    "evaluator_agreement": (
        _EVALUATOR_AGREEMENT,
        "Our evaluation of a behaviour against a vendor's evaluation of the same behaviour on the same case runs "
        "(from `evaluator_pairs`; the disagreeing examples are its rows `WHERE NOT agree`).",
        {
            "pairs": "Case runs both evaluated.",
            "decided": "Of those, where both decided (met not null).",
            "agree": "Of those decided, where both agree.",
            "disagree": "Of those decided, where they differ.",
            "agreement_rate": "agree / decided; null when none was decided.",
            "we_pass_vendor_fails": "We say met, the vendor says not met.",
            "we_fail_vendor_passes": "We say not met, the vendor says met.",
        },
    ),
    "runner_costs": (
        _RUNNER_COSTS,
        "Cost per team, week and runner (team totals: group by `team_id`).",
        _COST_NOTES,
    ),
    "consumer_costs": (
        _CONSUMER_COSTS,
        "Cost per consumer, team and week: the full cost of every run the consumer reads. Runs serve every "
        "consumer at once, so the consumers' figures overlap and do not add up to the total.",
        _COST_NOTES,
    ),
}
"""Each rollup view: its SQL, what it is, and its columns' meaning."""

MACROS: dict[str, str] = {
    "common_failures": f"""
CREATE MACRO common_failures(min_teams, since, until) AS TABLE
SELECT * FROM (
  SELECT assertion_key, count(DISTINCT team_id) FILTER (WHERE not_met > 0 AND {_APPLIES}) AS teams_failing,
    list_sort(list_distinct(list(team_id) FILTER (WHERE not_met > 0 AND {_APPLIES}))) AS failing_teams,
    CAST({_FAILED} AS BIGINT) AS failures, CAST(sum(results) AS BIGINT) AS results,
    list_sort(list_distinct(list(evaluator))) AS evaluators, count(DISTINCT evaluator) > 1 AS mixed_evaluators
  FROM behaviour_stats WHERE week >= since AND week < until GROUP BY assertion_key
) WHERE teams_failing >= min_teams
ORDER BY teams_failing DESC, assertion_key
""",
}
"""Table macros over the projected tables: behaviours failing in at least ``min_teams`` teams in [since, until)
(a result its runner could not evaluate is not a failure)."""
