"""A suite's re-judge, run by run, on SQLite and PostgreSQL: killed after one run's pass it keeps that pass and
leaves the other runs as they were, and the same command then judges the rest; it holds one run at a time;
and a pass over one run of a state file shared by several (a compaction merged them) keeps the others' rows."""

from __future__ import annotations

import os
import sys

import polars as pl
import pytest
import sqlalchemy as sa
from prefect_api import prefect_env
from test_lake_crash_points import check_invariants, recover

from assay.flows import judging
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.storage.catalog import tables as t
from assay.storage.lake.compact import compact

SUITE = SUITES[0]  # a config check: judged without any vendor; the revised bundle rewords one of its assertions



def rejudge_outcomes(ws) -> pl.DataFrame:
    """The outcomes written by re-judges: run, case run, pass."""
    return ws.lake.read("outcomes").filter(pl.col("trigger") == "rejudge").select("run_id", "case_run_id", "pass_id")


def test_a_rejudge_killed_after_one_run_keeps_it_and_the_same_command_judges_the_rest(ws, failpoint_kill) -> None:
    runs = [ops.run_to_final(ws, SUITE).run_id for _ in range(3)]
    ops.load(ws, str(DEMO / "revised.yaml"))  # a reworded assertion: every run has a pair to evaluate afresh
    env = ({k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))} | prefect_env()
           | {"ASSAY_HOME": str(ws.settings.home), "ASSAY_CATALOG_URL": os.environ["ASSAY_CATALOG_URL"],
              "PREFECT_HOME": str(ws.settings.prefect_home)})
    command = [sys.executable, "-m", "assay.flows.cli", "rejudge", "--suite", SUITE]
    failpoint_kill("rejudge.run_committed", command, env=env)

    first = rejudge_outcomes(ws)
    assert first["run_id"].n_unique() == 1 and first["pass_id"].n_unique() == 1, first  # one run's pass, whole
    judged = first["run_id"][0]
    assert first.height == ws.lake.read("case_runs", run_id=judged).height
    recover(ws)
    check_invariants(ws)

    import subprocess

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    after = rejudge_outcomes(ws)
    assert set(after["run_id"]) == set(runs)
    assert after.filter(pl.col("run_id") == judged).equals(first)  # nothing new to say about the run judged before
    assert after["case_run_id"].is_unique().all()  # one re-judged outcome per case run, none twice
    assert after.height == ws.lake.read("case_runs").filter(pl.col("run_id").is_in(runs)).height
    check_invariants(ws)


def test_a_suites_rejudge_holds_one_run_at_a_time(prefect_harness, ws, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.flows import orchestration
    from assay.flows.flow_context import listen

    runs = [ops.run_to_final(ws, SUITE).run_id for _ in range(3)]
    per_run = ws.lake.read("case_runs", run_id=runs[0]).height
    monkeypatch.setenv("PREFECT_HOME", str(ws.settings.prefect_home))
    heard: list[tuple[int, int]] = []  # (case runs done, case runs of the runs begun): summed over the runs

    def progress(done: int, total: int | None, unit: str) -> None:
        if unit == "case runs":
            heard.append((done, total or 0))

    listen(None, progress=progress)
    try:
        result = orchestration.attend(orchestration.rejudge, runs, force=True)
    finally:
        listen(None)
    assert result["runs"] == 3 and result["outcomes"] == 3 * per_run
    assert heard[-1] == (3 * per_run, 3 * per_run)
    held = max(total - done for done, total in heard)  # case runs begun and not yet written
    assert held == per_run, f"{held} case runs held at once, one run has {per_run}: {heard}"


def test_a_pass_over_one_run_of_a_merged_state_file_keeps_the_other_runs_rows(ws) -> None:
    runs = [ops.run_to_final(ws, SUITE).run_id for _ in range(3)]
    compact(ws.lake, target_bytes=2**30)  # the runs' state files merged: one per table and partition
    with ws.engine.connect() as conn:
        shared = conn.execute(sa.select(sa.func.count()).select_from(t.lake_files).where(
            t.lake_files.c.table_name == "current_results", t.lake_files.c.removed_at.is_(None))).scalar_one()
    assert shared == 1
    before = ws.lake.read("current_results").sort("result_id")

    done = judging.judge_runs(ws, [runs[1]], trigger="rejudge", force=True)

    assert done["outcomes"] == ws.lake.read("case_runs", run_id=runs[1]).height
    after = ws.lake.read("current_results").sort("result_id")
    others = pl.col("run_id") != runs[1]
    assert after.filter(others).equals(before.filter(others))  # copied as they were
    assert after.filter(~others)["outcome_id"].is_in(before["outcome_id"].to_list()).sum() == 0  # the new pass's
    check_invariants(ws)
