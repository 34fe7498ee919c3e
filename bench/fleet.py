"""The fleet analytics benchmarks: the projections over a 50 M-atom lake of 40 teams.

The lake (:mod:`.lakegen`, ``teams=40``): 50 k finalised runs of 100 case runs and 10 assertions each,
one suite per team read by two consumers, the last key a vendor's guardrail set against our judge's
``stays_in_role``; one judging pass per 50 runs of a team over 20 dates, then a re-judge of 5% of the
case runs.
It is written once and kept under ``bench/.work/fleet-50m`` (delete it to rebuild); each benchmark
works on a copy-free sequence over it:

The passes are ``assay`` processes with the workspace's Prefect server up (``assay server start``, as a
deployment's worker or an analyst's workspace has it), so none pays for a temporary server.

- ``fleet.build``: ``assay project --full`` as a CLI process, every projection from scratch; wall time
  and peak RSS (target: peak < 8 GB). Baseline, for scale: DuckDB in a process of its own computing the
  largest of them (per run, assertion version and evaluator over each case run's latest outcome) from
  the same atom files.
- ``fleet.increment``: 1% new atoms (500 runs on a new day, through the judging write path), then
  ``assay project`` (incremental: only the new runs) against ``assay project --full``, each a fresh
  process; target >= 20x faster; the tables after each are checked equal.
- ``fleet.queries``: five analyst questions through ``assay.connect()`` over the projected tables,
  median of 5 each (target <= 1 s each); baseline: the same question asked of the raw atoms by DuckDB
  (each case run's latest outcome by a window), which is what an analyst without projections writes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import WORK, Result, workdir
from .lake import _child
from .lakegen import build, extend

TEAMS, RUNS, NEW_RUNS = 40, 50_000, 500
HOME = WORK / "fleet-50m"

QUERIES: dict[str, tuple[str, str]] = {  # name -> (over the projections, over the raw atoms)
    "verdicts_per_day": (
        "SELECT date, team_id, consumer_key, pass, fail, error FROM verdict_counts ORDER BY ALL",
        None,  # verdicts need the criteria arithmetic: no one-query raw form (assay rescore is that path)
    ),
    "common_failures": (
        "SELECT * FROM common_failures(30, DATE '2026-09-28', DATE '2026-11-02')",
        """SELECT assertion_key, count(DISTINCT team_id) FILTER (WHERE met = false) AS teams_failing
           FROM (SELECT * FROM assertion_results QUALIFY row_number() OVER (PARTITION BY case_run_id, assertion_id
                 ORDER BY judged_at DESC, outcome_id DESC) = 1)
           GROUP BY assertion_key HAVING teams_failing >= 30 ORDER BY teams_failing DESC""",
    ),
    "weekly_met_rate": (
        "SELECT assertion_key, team_id, week, met_rate, mixed_evaluators FROM fleet_weekly WHERE team_id = 'team-07' "
        "ORDER BY ALL",
        """SELECT assertion_key, date_trunc('week', judged_at) AS week,
                  count(*) FILTER (WHERE met) / nullif(count(met), 0) AS met_rate, count(DISTINCT evaluator) > 1 AS mixed
           FROM (SELECT * FROM assertion_results WHERE team_id = 'team-07' QUALIFY row_number() OVER (
                 PARTITION BY case_run_id, assertion_id ORDER BY judged_at DESC, outcome_id DESC) = 1)
           GROUP BY ALL ORDER BY ALL""",
    ),
    "behaviour_trend": (
        "SELECT * FROM behaviour_trend WHERE assertion_key = 'answers_question' ORDER BY week, assertion_version",
        """SELECT assertion_version, count(*) FILTER (WHERE met) / nullif(count(met), 0) AS met_rate
           FROM (SELECT * FROM assertion_results WHERE assertion_key = 'answers_question' QUALIFY row_number() OVER (
                 PARTITION BY case_run_id, assertion_id ORDER BY judged_at DESC, outcome_id DESC) = 1)
           GROUP BY ALL ORDER BY ALL""",
    ),
    "judge_vs_vendor": (
        "SELECT * FROM evaluator_agreement ORDER BY team_id, our_evaluator",
        """WITH cur AS (SELECT * FROM assertion_results WHERE assertion_key IN ('stays_in_role', 'polite_greeting')
                        QUALIFY row_number() OVER (PARTITION BY case_run_id, assertion_id
                                                   ORDER BY judged_at DESC, outcome_id DESC) = 1)
           SELECT o.team_id, count(*) AS pairs, count(*) FILTER (WHERE o.met = v.met) AS agree
           FROM cur o JOIN cur v ON o.case_run_id = v.case_run_id AND o.assertion_key = 'stays_in_role'
                AND v.assertion_key = 'polite_greeting' GROUP BY ALL""",
    ),
}

BASELINE = r"""
import sqlite3, sys, time
import duckdb
home = sys.argv[1]
db = sqlite3.connect(f"{home}/catalog.db")
paths = [f"{home}/lake/{p}" for (p,) in db.execute(
    "SELECT path FROM lake_files WHERE table_name = 'assertion_results' AND removed_at IS NULL")]
started = time.perf_counter()
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f"CREATE VIEW assertion_results AS SELECT * FROM read_parquet({paths!r}, hive_partitioning = true)")
rows = con.sql('''SELECT run_id, assertion_id, evaluator, count(*) AS results, count(*) FILTER (WHERE met) AS met,
                         count(*) FILTER (WHERE NOT met) AS not_met, count(*) FILTER (WHERE met IS NULL) AS undetermined
                  FROM (SELECT * FROM assertion_results QUALIFY row_number() OVER (
                        PARTITION BY case_run_id, assertion_id ORDER BY judged_at DESC, outcome_id DESC) = 1)
                  GROUP BY ALL''').fetchall()
print(len(rows), time.perf_counter() - started)
"""


def _lake() -> dict[str, Any]:
    built = HOME / "built.json"
    if not built.exists():
        workdir("fleet-50m")
        built.write_text(json.dumps(build(HOME, RUNS, teams=TEAMS, runs_per_pass=50)))
    return json.loads(built.read_text())


def _env() -> dict[str, str]:
    return {"ASSAY_HOME": str(HOME), "PREFECT_HOME": str(HOME / "prefect")}


def _server(action: str) -> None:
    """``assay server start|stop``: the workspace's Prefect server, up while the passes are timed (as for a
    deployment's worker or an analyst's workspace), so no pass pays for a temporary server."""
    subprocess.run([sys.executable, "-m", "assay.flows.cli", "server", action], env={**os.environ, **_env()},
                   check=True, capture_output=True)


def _project(*flags: str) -> tuple[float, int, dict[str, Any]]:
    wall, rss, out = _child([sys.executable, "-m", "assay.flows.cli", "project", *flags, "--json"], _env())
    return wall, rss, json.loads(out)


def _tables() -> dict[str, Any]:
    """Every projected table, sorted by its key, without the time of the pass that wrote it."""
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace
    from assay.storage.lake.projection_tables import PROJECTED

    ws = open_workspace(Settings(home=HOME))
    try:
        return {name: ws.lake.read(name).drop("computed_at").sort(list(t.natural_key)) for name, t in PROJECTED.items()}
    finally:
        ws.close()


def build_and_increment(built: dict[str, Any]) -> list[Result]:
    wall, rss, full = _project("--full")
    baseline_out = _child([sys.executable, "-c", BASELINE, str(HOME)])[2].split()
    results = [Result(
        "fleet.build", round(wall, 1), "s", round(float(baseline_out[1]), 1), round(wall / float(baseline_out[1]), 2),
        "peak memory < 8 GB; time reported", rss < 8 * 1024,
        f"assay project --full over {built['atoms']:,} atoms ({TEAMS} teams, {built['runs']:,} runs): every projected "
        f"table ({', '.join(f'{v:,} {k}' for k, v in full['rows'].items())}); peak RSS {rss} MiB. Baseline: DuckDB "
        f"computing behaviour_stats alone from the same atom files ({int(baseline_out[0]):,} rows)",
    )]
    added = extend(HOME, NEW_RUNS, TEAMS, date="2026-10-21", seed=11 + built.get("extended", 0))
    built = {**built, "atoms": built["atoms"] + added["atoms"], "runs": built["runs"] + NEW_RUNS,
             "extended": built.get("extended", 0) + 1}
    (HOME / "built.json").write_text(json.dumps(built))  # the lake keeps the new day: the next run adds another
    inc_wall, _, inc = _project()
    incremental = _tables()
    again_wall, _, again = _project("--full")
    equal = all(incremental[name].equals(frame) for name, frame in _tables().items())
    ratio = again_wall / inc_wall
    results.append(Result(
        "fleet.increment", round(inc_wall, 2), "s", round(again_wall, 1), round(ratio, 1),
        ">= 20x faster than a full rebuild, tables equal", ratio >= 20 and equal and inc["runs"] == NEW_RUNS,
        f"assay project after {added['atoms']:,} new atoms ({NEW_RUNS} runs on a new day, "
        f"{added['atoms'] / built['atoms']:.1%} of the lake): {inc['runs']} run(s) recomputed; "
        f"baseline: assay project --full over all {again['runs']:,} runs; tables equal after both: {equal}",
    ))
    return results


def queries() -> list[Result]:
    import assay
    from assay.core.settings import Settings

    started = time.perf_counter()
    con = assay.connect(Settings(home=HOME))
    opened = time.perf_counter() - started
    raw = _atom_paths()
    results = []
    for name, (ours, theirs) in QUERIES.items():
        mine = _median(lambda: con.sql(ours).fetchall())
        base = None
        if theirs is not None:
            import duckdb

            plain = duckdb.connect()
            plain.execute("SET enable_progress_bar = false")
            plain.execute(f"CREATE VIEW assertion_results AS SELECT * FROM read_parquet({raw!r}, hive_partitioning = true)")
            base = _median(lambda: plain.sql(theirs).fetchall(), repeats=3)
        results.append(Result(
            f"fleet.queries.{name}", round(mine * 1000, 1), "ms", None if base is None else round(base * 1000, 1),
            None if base is None else round(mine / base, 3), "<= 1 s each at 50 M atoms", mine <= 1.0,
            f"through assay.connect() (opened in {opened:.1f} s) over the projected tables, median of 5; baseline: "
            + ("none (verdicts need the criteria arithmetic)" if base is None else
               "the same question by DuckDB over the raw atoms (latest outcome by a window), median of 3"),
        ))
    return results


def _atom_paths() -> list[str]:
    """The live atom files, as the manifest lists them (what the baseline's DuckDB reads)."""
    import sqlite3

    with sqlite3.connect(HOME / "catalog.db") as db:
        return [f"{HOME}/lake/{path}" for (path,) in db.execute(
            "SELECT path FROM lake_files WHERE table_name = 'assertion_results' AND removed_at IS NULL")]


def _median(fn: Any, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run() -> list[Result]:
    built = _lake()
    _server("start")
    try:
        results = build_and_increment(built)
    finally:
        _server("stop")
    return results + queries()


if __name__ == "__main__":  # a smaller lake for trying it out: python -m bench.fleet RUNS
    RUNS, HOME = int(sys.argv[1]), Path(WORK / f"fleet-{sys.argv[1]}")
    for r in run():
        print(r)
