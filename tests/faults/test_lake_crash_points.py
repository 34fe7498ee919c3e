"""kill -9 at every step between writing a lake file and committing the manifest, then recovery, then a check.

Each case runs the real operation in a child process with ``ASSAY_FAILPOINTS`` naming one step; the
child dies by SIGKILL exactly there (no rollback by Python, no cleanup). Recovery is what an operator
runs: the reaper (leases of dead writers), then vacuum. The invariants, checked against the catalog
and the lake's files afterwards:

- nothing is visible that the catalog did not accept (every live file's report or pass is recorded,
  and visible rows equal the accepted counts);
- nothing that was accepted is missing (every named file exists and holds the rows the manifest says);
- no outcome is ever visible without its atoms;
- no row is visible twice, and vacuum leaves no unnamed file behind.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from assay.core.failpoints import ENV, STEPS
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.lake.upkeep import vacuum
from assay.transforms.rescore import key_counts
from assay.transforms.verdicts import latest

CHILD = r"""
import sys
from assay.flows import judging, operations as ops, rescoring
from assay.flows.workspace import open_workspace

ws = open_workspace()
action, suite = sys.argv[1], sys.argv[2]
if action == "run":
    ops.run_to_final(ws, suite)
elif action == "rejudge":
    with ws.engine.connect() as conn:
        runs = list(conn.execute(__import__("sqlalchemy").text("select run_id from runs")).scalars())
    judging.judge_runs(ws, runs, trigger="rejudge", force=True)
elif action == "rescore":
    rescoring.rescore(ws, suite, "nightly_sweep", materialise=True)
elif action == "vacuum":
    from datetime import UTC, datetime, timedelta
    from assay.storage.lake.upkeep import vacuum
    vacuum(ws.lake, grace_seconds=1, now=datetime.now(UTC) + timedelta(hours=2))
print("finished without reaching the failpoint")
"""

# step -> (what the child does, whether a complete run exists before it starts)
CASES = {
    "report.staged": ("run", False),
    "report.recorded": ("run", False),
    "judge.staged": ("rejudge", True),
    "judge.recorded": ("rejudge", True),
    "rescore.staged": ("rescore", True),
}


@pytest.fixture(params=["local", "s3"])
def lake_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "lake") if request.param == "local" else request.getfixturevalue("s3_lake").url


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, lake_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    monkeypatch.setenv("ASSAY_LAKE_URL", lake_url)
    workspace = open_workspace(create=True)
    ops.load(workspace, str(DEMO / "bundle.yaml"))
    yield workspace
    workspace.close()


def crash(ws, step: str, action: str, suite: str) -> None:
    env = {**os.environ, ENV: step, "ASSAY_HOME": str(ws.settings.home), "PREFECT_HOME": str(ws.settings.prefect_home)}
    proc = subprocess.run([sys.executable, "-c", CHILD, action, suite], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == -signal.SIGKILL, f"the child was not killed at {step}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def recover(ws) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    CatalogLedger(ws.engine, ws.lake, clock=lambda: later).reap()
    vacuum(ws.lake, grace_seconds=1, now=later)


def check_invariants(ws) -> None:
    lake, engine = ws.lake, ws.engine
    with engine.connect() as conn:
        live = conn.execute(sa.select(t.lake_files).where(t.lake_files.c.removed_at.is_(None))).all()
        reports = {f"{r.run_id}:{r.request_id}": r for r in conn.execute(sa.select(t.run_reports))}
        passes = {r.pass_id: r for r in conn.execute(sa.select(t.judging_passes))}
        runs = {r.run_id: r for r in conn.execute(sa.select(t.runs))}
        named = {r.path for r in conn.execute(sa.select(t.lake_files.c.path))}
    for f in live:  # nothing visible that the catalog did not accept
        accepted = {"report": reports, "judging": passes}.get(f.origin)
        if accepted is not None:
            assert f.origin_ref in accepted, f"{f.path} is visible but its {f.origin} {f.origin_ref} was never accepted"
        assert lake.fs.exists(lake.path(f.path)), f"{f.path} was accepted but is missing"  # nothing accepted is missing
        assert pq.ParquetFile(io.BytesIO(lake.fs.cat_file(lake.path(f.path)))).metadata.num_rows == f.rows
    case_runs = lake.read("case_runs")
    assert case_runs["case_run_id"].is_unique().all()
    visible = dict(case_runs.group_by("run_id").len().iter_rows())
    for run_id, run in runs.items():
        assert visible.get(run_id, 0) == run.case_runs, f"run {run_id}: {visible.get(run_id, 0)} visible, {run.case_runs} accepted"
        assert run.finalised_at is not None, f"run {run_id} is not final after recovery ({run.status})"
    outcomes, atoms = lake.read("outcomes"), lake.read("assertion_results")
    assert atoms["result_id"].is_unique().all() and outcomes["outcome_id"].is_unique().all()
    per_outcome = atoms.group_by("outcome_id").len()
    joined = outcomes.join(per_outcome, on="outcome_id", how="left").with_columns(pl.col("len").fill_null(0))
    bare = joined.filter(pl.col("len") != pl.col("evaluated") + pl.col("carried"))
    assert bare.is_empty(), f"{bare.height} outcome(s) visible without (all) their atoms"
    assert set(atoms["outcome_id"].unique().to_list()) <= set(outcomes["outcome_id"].to_list())
    # The re-score state is exactly the atoms of each case run's latest outcome, by the one definition.
    latest_ids = latest(atoms.lazy()).select("result_id").collect()["result_id"].sort().to_list()
    current = lake.read("current_results")
    assert current["result_id"].sort().to_list() == latest_ids
    counts = lake.read("run_key_counts").drop("run_id", "computed_at", "team_id", "date").sort("run", "key")
    assert counts.equals(key_counts(current.lazy()).collect().sort("run", "key"))
    on_disk = {p[len(lake.root) + 1:] for p in lake.fs.find(lake.root) if p.endswith(".parquet")}
    assert on_disk <= named, f"vacuum left unnamed files: {sorted(on_disk - named)[:3]}"


def test_every_step_between_writing_and_committing_has_a_crash_test() -> None:
    covered = set(CASES) | set(COVERED_ELSEWHERE)
    assert covered == set(STEPS), f"failpoints without a crash test: {sorted(set(STEPS) - covered)}"


COVERED_ELSEWHERE = {"compact.staged": "tests/storage/test_compaction.py", "compact.recorded": "tests/storage/test_compaction.py",
                     "vacuum.forgotten": "test_vacuum_killed_after_forgetting_leaves_only_unlisted_files",
                     "scratch.intended": "tests/faults/test_scratch_crash_points.py",
                     "scratch.created": "tests/faults/test_scratch_crash_points.py",
                     "load.written": "tests/faults/test_catalog_crash_points.py",
                     "finalise.judged": "tests/faults/test_catalog_crash_points.py",
                     "projection.staged": "tests/flows/test_projections.py",
                     "projection.recorded": "tests/flows/test_projections.py",
                     "legacy.staged": "tests/flows/test_legacy.py", "legacy.recorded": "tests/flows/test_legacy.py",
                     "rejudge.run_committed": "tests/faults/test_rejudge_bounded.py"}


@pytest.mark.parametrize("step", sorted(CASES))
def test_a_crash_at_each_step_loses_nothing_and_shows_nothing_unaccepted(ws, step: str) -> None:
    action, needs_a_run = CASES[step]
    suite = SUITES[1]  # recorded calls: case runs, runner evaluations, outcomes and atoms all written
    if needs_a_run:
        ops.run_to_final(ws, suite)
    before = {name: ws.lake.read(name).height for name in ("case_runs", "outcomes", "assertion_results", "verdicts")}
    crash(ws, step, action, suite)
    recover(ws)
    check_invariants(ws)
    after = {name: ws.lake.read(name).height for name in before}
    assert after == before, f"a crash at {step} changed what readers see: {before} -> {after}"
    # The system goes on: the same operation, uninterrupted, succeeds afterwards.
    ops.run_to_final(ws, suite)
    check_invariants(ws)


def test_vacuum_killed_after_forgetting_leaves_only_unlisted_files(ws) -> None:
    from assay.storage.lake.compact import compact

    for _ in range(2):
        ops.run_to_final(ws, SUITES[1])
    assert compact(ws.lake)["files_in"] > 0
    before = {name: ws.lake.read(name).height for name in ("case_runs", "outcomes", "assertion_results")}
    crash(ws, "vacuum.forgotten", "vacuum", SUITES[1])
    with ws.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).where(t.lake_files.c.removed_at.is_not(None))).scalar_one() == 0
    assert {name: ws.lake.read(name).height for name in before} == before
    recover(ws)  # the retired files it did not get to delete are unlisted now: the next vacuum takes them
    check_invariants(ws)
