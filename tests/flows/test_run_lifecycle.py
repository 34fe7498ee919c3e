"""Every run reaches a final state by itself: a run left released (its process killed while judging) is
judged and finalised by the reaper, or ends ``error`` with the reason when judging fails and can still be
judged later; a retried run creation returns the run the first attempt made."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.flows import operations as ops
from assay.flows.cli import main
from assay.flows.demo import SUITES
from assay.flows.workspace import Workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import get_run


@pytest.fixture
def ws(assay_home: Path, request: pytest.FixtureRequest) -> Workspace:
    """The demo workspace (its home made first: only `assay init` and the demo create one)."""
    assay_home.mkdir(parents=True, exist_ok=True)
    return request.getfixturevalue("demo_ws")


def released_run(ws: Workspace) -> str:
    """A run executed and released, then abandoned before judging (what a kill while judging leaves)."""
    run_id = ops.start_run(ws, SUITES[0]).run_id
    assert ops.execute_run(ws, run_id).error is None
    assert get_run(ws.engine, run_id).status == "released"
    return run_id


def move_clock(ws: Workspace, seconds: float) -> None:
    """Let the workspace's ledger see a later time, as a reaper running that much later would."""
    later = datetime.now(UTC) + timedelta(seconds=seconds)
    ws.ledger = CatalogLedger(ws.engine, ws.lake, clock=lambda: later)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    assert done.value.code in (0, None)
    return capsys.readouterr().out


def test_reap_judges_and_finalises_a_run_left_released(ws: Workspace) -> None:
    run_id = released_run(ws)
    assert ops.reap(ws)["finalised_released"] == []  # a live flow may still be judging it
    move_clock(ws, ws.settings.lease_seconds + 1)
    assert ops.reap(ws)["finalised_released"] == [run_id]
    run = get_run(ws.engine, run_id)
    assert run.status == "completed" and run.finalised_at is not None and run.outcome in ("pass", "fail", "error")
    with ws.engine.connect() as conn:
        verdicts = conn.execute(sa.select(t.run_criteria.c.verdict).where(t.run_criteria.c.run_id == run_id)).scalars()
        assert all(v is not None for v in verdicts)
    assert ops.reap(ws)["finalised_released"] == []  # nothing twice


def test_a_judging_crash_ends_the_run_error_and_assay_judge_finishes_it_later(
    prefect_harness, ws: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = released_run(ws)

    def judge_down(*_args, **_kwargs):
        raise RuntimeError("the judge endpoint refused the connection")

    with monkeypatch.context() as patch:
        patch.setattr(ops, "judge_run", judge_down)
        move_clock(ws, ws.settings.lease_seconds + 1)
        assert ops.reap(ws)["finalised_released"] == [run_id]
    run = get_run(ws.engine, run_id)
    assert run.status == "error" and run.finalised_at is not None
    assert "judging failed" in run.status_reason and "refused the connection" in run.status_reason
    assert not ws.lake.files("outcomes")
    ws.close()
    judged = json.loads(cli(capsys, "judge", run_id, "--json"))["judged"]
    assert judged["case_runs"] > 0 and judged["outcomes"] > 0
    assert get_run(ws.engine, run_id).status == "error"  # final stays final


def test_assay_reap_names_the_runs_it_finalised(
    prefect_harness, ws: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = released_run(ws)
    ws.close()
    monkeypatch.setenv("ASSAY_LEASE_SECONDS", "0")  # no grace: the run was released a moment ago
    out = cli(capsys, "reap")
    assert f"judged and finalised 1 run(s) left released: {run_id}" in out
    assert get_run(ws.engine, run_id).status == "completed"


def test_a_retried_create_run_task_returns_the_same_run(ws: Workspace) -> None:
    from assay.flows.flow_context import flow_workspace
    from assay.flows.orchestration import create_run_task

    with flow_workspace():  # what the run-suite flow opens for its tasks
        first = create_run_task.fn(SUITES[0], None, None, "run-suite:flow-1")
        again = create_run_task.fn(SUITES[0], None, None, "run-suite:flow-1")
    assert again == first
    with ws.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.runs)).scalar_one() == 1
