"""``voice.metrics``: turn-level voice metrics over 1 M turns, ``turn_metrics`` against a hand-written DuckDB query.

The lake: 50,000 recorded calls of 20 turns (agent and caller in turn), written through the product's
own write path: a call set loaded as a suite and replayed by the ``recorded`` runner
(``ops.start_run`` + ``ops.execute_run``, as ``assay run`` does; see :mod:`.ingest`). Timings are
shaped like production calls: response latency log-normal with median 1.5 s and p95 4.8 s, 3% of
caller turns barge in, 2% of replies talk over the caller, 2% of the gaps before a caller turn are
long silences (2.5-8 s).

Timed: the analyst's path, ``assay.connect()`` then every case run's ``turn_metrics`` figures, against
a hand-written DuckDB query computing the same figures from the same Parquet files (the files the
manifest lists), each including its connection; median of 5 each, target <= 1.5x. The two answers are
checked equal.

``python -m bench.voice_metrics CALLS`` runs it at another size (e.g. 1000 calls = 20,000 turns).
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import sys
from pathlib import Path

import yaml

from .common import Result, median_seconds, workdir

CALLS = 50_000
TURNS = 20
CASES = [f"case-{i:02d}" for i in range(20)]
LATENCY_MU, LATENCY_SIGMA = math.log(1.5), math.log(4.8 / 1.5) / 1.6449  # log-normal: p50 1.5 s, p95 4.8 s
FIGURES = ["case_run_id", "turns", "replies", "latency_p50_ms", "latency_p95_ms", "latency_max_ms", "barge_ins",
           "talk_overs", "long_silences", "longest_gap_ms", "talk_ratio"]

HAND_WRITTEN = """
WITH turns AS (
  SELECT case_run_id, unnest(transcript) AS turn, generate_subscripts(transcript, 1) AS pos
  FROM read_parquet({files}) WHERE status = 'executed'
), paired AS (
  SELECT case_run_id, turn.role AS role, turn.end_t - turn.t AS dur,
         lag(turn.role) OVER w AS prev_role, (turn.t - lag(turn.end_t) OVER w) * 1000 AS gap
  FROM turns WINDOW w AS (PARTITION BY case_run_id ORDER BY pos)
), marked AS (
  SELECT *, CASE WHEN role = 'agent' AND prev_role = 'caller' THEN gap END AS latency FROM paired
)
SELECT case_run_id, count(*) AS turns, count(latency) AS replies,
  quantile_cont(latency, 0.5) AS latency_p50_ms, quantile_cont(latency, 0.95) AS latency_p95_ms,
  max(latency) AS latency_max_ms,
  count(*) FILTER (WHERE role = 'caller' AND prev_role = 'agent' AND gap < 0) AS barge_ins,
  count(*) FILTER (WHERE latency < 0) AS talk_overs,
  count(*) FILTER (WHERE gap > 2000) AS long_silences, max(gap) AS longest_gap_ms,
  sum(dur) FILTER (WHERE role = 'agent') / sum(dur) AS talk_ratio
FROM marked GROUP BY case_run_id
"""


def write_call_set(path: Path, n: int, seed: int = 7) -> None:
    """``n`` recorded calls of :data:`TURNS` timed turns each, for :data:`CASES` in turn."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(n):
            turns, end = [], 0.0
            for k in range(TURNS):
                agent = k % 2 == 0
                u = rng.random()
                if k == 0:
                    gap = 0.0
                elif agent:  # a reply: log-normal latency, or the agent talks over the caller
                    gap = -rng.uniform(0.1, 0.8) if u < 0.02 else rng.lognormvariate(LATENCY_MU, LATENCY_SIGMA)
                else:  # the caller: a short pause, a barge-in, or a long silence
                    gap = -rng.uniform(0.1, 1.0) if u < 0.03 else rng.uniform(2.5, 8.0) if u < 0.05 else rng.uniform(0.2, 1.5)
                t = max(0.0, end + gap)
                end = t + (rng.uniform(1.0, 6.0) if agent else rng.uniform(0.5, 4.0))
                turns.append({"role": "agent" if agent else "caller", "text": f"turn {k}", "t": round(t, 3),
                              "end_t": round(end, 3)})
            f.write(json.dumps({"call_id": f"call-{i:06d}", "case": CASES[i % len(CASES)],
                                "duration_ms": round(end * 1000), "transcript": turns}) + "\n")


def _lake(work: Path, calls: int) -> Path:
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import Workspace

    write_call_set(work / "calls.jsonl", calls)
    bundle = {"schema": "assay.bundle/v1", "teams": [{
        "id": "bench-team", "name": "Bench",
        "cases": [{"key": k, "title": k, "situation": {"caller": "a caller", "wants": "help"}} for k in CASES],
        "suites": [{"key": "calls", "name": "calls", "target": {"call_set": "calls.jsonl"}, "cases": CASES}],
    }]}
    (work / "bundle.yaml").write_text(yaml.safe_dump(bundle))
    home = work / "home"
    ws = Workspace(Settings(home=home), upgrade=True)
    try:
        ops.load(ws, str(work / "bundle.yaml"))
        run_id = ops.start_run(ws, "bench-team/calls").run_id
        result = ops.execute_run(ws, run_id)
        assert result.case_runs == calls and result.error is None, result
    finally:
        ws.close()
    return home


def _files(home: Path) -> list[str]:
    """The live case-run files, as the manifest lists them."""
    with sqlite3.connect(home / "catalog.db") as db:
        return [f"{home}/lake/{path}" for (path,) in db.execute(
            "SELECT path FROM lake_files WHERE table_name = 'case_runs' AND removed_at IS NULL")]


def run(calls: int = CALLS) -> list[Result]:
    import duckdb
    import polars as pl
    from polars.testing import assert_frame_equal

    import assay
    from assay.core.settings import Settings

    home = _lake(workdir(f"voice-metrics-{calls}"), calls)
    files = _files(home)
    ours_sql = f"SELECT {', '.join(FIGURES)} FROM turn_metrics"

    def ours() -> pl.DataFrame:
        return pl.from_arrow(assay.connect(Settings(home=home)).sql(ours_sql).arrow())  # type: ignore[return-value]

    def theirs() -> pl.DataFrame:
        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        con.execute("SET enable_progress_bar = false")
        return pl.from_arrow(con.sql(HAND_WRITTEN.format(files=files)).arrow())  # type: ignore[return-value]

    got, want = ours().sort("case_run_id"), theirs().sort("case_run_id")
    assert got.height == want.height == calls, (got.height, want.height)
    assert_frame_equal(got, want, check_dtypes=False)
    figures = got.select(pl.col("latency_p50_ms").median(), pl.col("latency_p95_ms").median(),
                         barge=pl.col("barge_ins").sum() / (calls * TURNS / 2)).row(0)
    mine, base = median_seconds(ours, repeats=5), median_seconds(theirs, repeats=5)
    ratio = mine / base
    return [Result(
        "voice.metrics", round(calls * TURNS / mine), "turns/s", round(calls * TURNS / base), round(ratio, 2),
        "<= 1.5x the hand-written DuckDB query's time", ratio <= 1.5,
        f"{calls} calls x {TURNS} turns; assay.connect() + turn_metrics median of 5 runs of {mine:.2f}s; hand-written "
        f"DuckDB over the same {len(files)} Parquet file(s) median of 5 runs of {base:.2f}s; results equal; per-call "
        f"latency p50/p95 medians {figures[0]:.0f}/{figures[1]:.0f} ms, {figures[2]:.1%} of caller turns barge in",
    )]


if __name__ == "__main__":  # a smaller lake for trying it out: python -m bench.voice_metrics CALLS
    for r in run(int(sys.argv[1]) if len(sys.argv) > 1 else CALLS):
        print(r)
