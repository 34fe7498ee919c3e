"""A run's verdict knows its coverage: a partial run is never ``pass``, and runs that errored or timed out
are listed by ``rescore`` and ``verdicts`` with the reason, never dropped or shown as "not judged yet"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from assay.core.criteria import CriteriaSpec
from assay.core.runner import RunContext
from assay.flows import judging, operations as ops, rescoring
from assay.flows.demo import SUITES
from assay.flows.workspace import Workspace
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import get_run, job_for_run
from assay.core.plugins import runner_class
from assay.transforms.verdicts import VERDICT_COLUMNS, with_coverage

ADVISORY_ONLY = CriteriaSpec(required=[], threshold=[], ignore=[])
RECORDED = SUITES[1]


@pytest.fixture
def ws(assay_home: Path, request: pytest.FixtureRequest) -> Workspace:
    assay_home.mkdir(parents=True, exist_ok=True)
    return request.getfixturevalue("demo_ws")


def killed_after_first_report(ws: Workspace) -> str:
    """A recorded run that reported its first batch of calls, then its process died; the reaper timed it out."""
    run_id = ops.start_run(ws, RECORDED).run_id
    runner = runner_class("recorded")()
    runner.batch_size = 2
    job = job_for_run(ws.engine, run_id)
    lease = ws.ledger.claim(run_id, "doomed", 5)
    first = next(iter(runner.execute(job, RunContext(lambda: None))))
    assert ws.ledger.report(lease, first).status == "accepted"
    later = datetime.now(UTC) + timedelta(seconds=60)
    assert CatalogLedger(ws.engine, ws.lake, clock=lambda: later).reap()["lease_expired"] == [run_id]
    judging.judge_runs(ws, [run_id], trigger="rejudge")  # its evidence is judged: what it has may all pass
    return run_id


def test_a_run_killed_mid_way_is_never_pass(ws: Workspace) -> None:
    run_id = killed_after_first_report(ws)
    run = get_run(ws.engine, run_id)
    assert run.status == "timed_out" and 0 < run.case_runs < 5
    for consumer in ("blueprint_ci", "publish_gate", "nightly_sweep"):
        [row] = [r for r in rescoring.rescore(ws, RECORDED, consumer)["runs"] if r["run_id"] == run_id]
        assert row["verdict"] == "error", row
        assert row["reason"].startswith("partial: the run ended timed_out (lease_expired) with 2 case run(s)"), row
    verdicts = {v["consumer"]: v for v in judging.verdicts_for(ws, [run_id])}
    assert {v["verdict"] for v in verdicts.values()} == {"error"}
    assert "partial" in verdicts["publish_gate"]["reason"]


def test_a_run_that_errored_before_any_report_is_listed_not_dropped(ws: Workspace) -> None:
    run_id = ops.start_run(ws, RECORDED).run_id
    lease = ws.ledger.claim(run_id, "broken", 60)
    ws.ledger.release(lease, error="the vendor refused the key")
    [row] = [r for r in rescoring.rescore(ws, RECORDED, "nightly_sweep")["runs"] if r["run_id"] == run_id]
    assert row["verdict"] == "error" and "the run ended error" in row["reason"], row
    [v] = [v for v in judging.verdicts_for(ws, [run_id]) if v["consumer"] == "nightly_sweep"]
    assert v["verdict"] == "error" and v["reason"] != "not judged yet"


def _frame(**columns) -> pl.DataFrame:
    return pl.DataFrame(columns)


def test_with_coverage_rules() -> None:
    spec = CriteriaSpec(required=["a"])
    verdicts = pl.DataFrame({"run_id": ["done", "short", "lost"], "verdict": ["pass"] * 3, "reason": ["ok"] * 3,
                             **{c: [None] * 3 for c in VERDICT_COLUMNS[2:]}})
    runs = _frame(run_id=["done", "short", "lost", "empty", "fresh"],
                  status=["completed", "completed", "timed_out", "error", "running"],
                  status_reason=[None, None, "lease_expired", "boom", None],
                  case_count=[2, 4, 4, 4, 4], case_runs=[2, 3, 4, 0, 0])
    out = {r["run_id"]: r for r in with_coverage(verdicts, runs, spec).to_dicts()}
    assert (out["done"]["verdict"], out["done"]["reason"]) == ("pass", "ok")
    assert out["short"]["verdict"] == "error" and out["short"]["reason"].startswith("partial: 1 of 4 case(s)")
    assert out["lost"]["verdict"] == "error" and "timed_out (lease_expired)" in out["lost"]["reason"]
    assert out["empty"]["verdict"] == "error" and "boom" in out["empty"]["reason"]
    assert (out["fresh"]["verdict"], out["fresh"]["reason"]) == (None, "not judged yet")
    advisory = {r["run_id"]: r["verdict"] for r in with_coverage(verdicts, runs, ADVISORY_ONLY).to_dicts()}
    assert advisory["lost"] == "pass"  # a criteria that counts nothing has nothing left undetermined


def test_with_coverage_keeps_the_verdicts_own_case_run_counts() -> None:
    """The verdict's ``case_runs`` are those judged; the run's stored count only decides partiality."""
    verdicts = pl.DataFrame({"run_id": ["r"], "verdict": ["pass"], "reason": ["ok"],
                             **{c: [None] for c in VERDICT_COLUMNS[2:] if c not in ("case_runs", "case_runs_counted")},
                             "case_runs": [3], "case_runs_counted": [2]})
    runs = _frame(run_id=["r"], status=["completed"], status_reason=[None], case_count=[3], case_runs=[5])
    [row] = with_coverage(verdicts, runs, CriteriaSpec(required=["a"])).to_dicts()
    assert (row["case_runs"], row["case_runs_counted"]) == (3, 2)


def test_rejudging_a_run_that_is_not_final_says_why(ws: Workspace) -> None:
    from assay.core.errors import ConfigError
    from assay.flows.selection import select_runs

    run_id = ops.start_run(ws, RECORDED).run_id
    ops.execute_run(ws, run_id)  # released, not finalised: what a kill while judging leaves
    with pytest.raises(ConfigError, match=rf"{run_id} is released: not final yet.*assay reap"):
        select_runs(ws, runs=[run_id])
