"""The run path's smaller faults, on SQLite and PostgreSQL: a deadline that passes ends the run ``timed_out``
(never ``error``), a full disk while reaping leaves the run to be finalised later (never frozen ``error``
without verdicts), a first batch slower than the lease keeps the run held, and a refused report is kept as
a bounded summary, not its payload.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from factories import Clock, seed_suite
from runner_kit import case_runs

from assay.adapters.runners.fixed import FixedRunner
from assay.core import runner as runner_module
from assay.core.errors import LeaseError
from assay.core.evidence import CaseRun, Evaluation, Report, Turn
from assay.core.runner import RunJob, drive
from assay.fakes.serve import running, settings_env
from assay.flows import operations as ops
from assay.flows.demo import SUITES
from assay.flows.demo_vendors import AGENT_RULES
from assay.flows.demo_vendors import SUITE as CHAT_SUITE
from assay.flows.workspace import Workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.rejected import SUMMARY_BYTES
from assay.storage.catalog.runs import create_run, get_run, job_for_run
from assay.storage.lake import Lake



def later(ws: Workspace, seconds: float) -> None:
    """Let the workspace's ledger see a later time, as a process running that much later would."""
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    ws.ledger = CatalogLedger(ws.engine, ws.lake, clock=lambda: at)


def stamped(ws: Workspace, run_id: str) -> list[str | None]:
    with ws.engine.connect() as conn:
        return list(conn.execute(sa.select(t.run_criteria.c.verdict).where(t.run_criteria.c.run_id == run_id)).scalars())


# -- 1. a deadline that passes ends the run timed_out ---------------------------------------------------------
def test_a_deadline_passing_while_the_vendor_works_ends_the_run_timed_out(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "REPORT_RESERVE", timedelta(seconds=0.3))
    with running() as fakes:
        for key, value in settings_env(fakes).items():
            monkeypatch.setenv(key, value)
        fakes["vapi"].faults.scripts["replies"] = AGENT_RULES
        fakes["vapi"].faults.hang = {"POST /chat": 1.0}  # every turn answers after the run stops waiting
        run = ops.start_run(ws, CHAT_SUITE, "vapi_chat", deadline=timedelta(seconds=1.5))
        result = ops.execute_run(ws, run.run_id)
    row = get_run(ws.engine, run.run_id)
    assert (row.status, row.status_reason) == ("timed_out", "deadline_passed")
    assert result.error is not None and result.error.startswith("timed out") and "lease" not in result.error


def test_a_deadline_that_passed_before_the_claim_ends_the_run_timed_out(ws: Workspace) -> None:
    run = ops.start_run(ws, SUITES[0], deadline=timedelta(seconds=30))
    later(ws, 31)  # the flow started late: its deadline passed before the runner could claim the run
    result = ops.execute_run(ws, run.run_id)  # no LeaseError escapes: the command ends by the run's status
    row = get_run(ws.engine, run.run_id)
    assert (row.status, row.status_reason) == ("timed_out", "deadline_passed")
    assert result.error is not None and result.error.startswith("timed out: the deadline passed at")
    assert row.case_runs == 0 and stamped(ws, run.run_id) and set(stamped(ws, run.run_id)) == {None}


def test_a_run_lost_to_another_holder_is_not_called_timed_out(ws: Workspace) -> None:
    run = ops.start_run(ws, SUITES[0])
    ws.ledger.claim(run.run_id, "another-worker", 600)
    with pytest.raises(LeaseError, match="held by 'another-worker'"):
        ops.execute_run(ws, run.run_id)
    assert get_run(ws.engine, run.run_id).status == "running"


# -- 2. a full disk while the reaper finalises -----------------------------------------------------------------
def released_run(ws: Workspace) -> str:
    """A run executed and released, then abandoned before judging (what a kill while judging leaves)."""
    run_id = ops.start_run(ws, SUITES[0]).run_id
    assert ops.execute_run(ws, run_id).error is None
    assert get_run(ws.engine, run_id).status == "released"
    return run_id


def disk_full(*_args: Any, **_kwargs: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "outcomes/part-0.parquet")


def catalog_full(*_args: Any, **_kwargs: Any) -> Any:
    import sqlite3

    raise sa.exc.OperationalError("UPDATE runs", {}, sqlite3.OperationalError("database or disk is full"))


@pytest.mark.parametrize(("step", "target", "fault"), [
    ("judging", (Lake, "stage"), disk_full),  # writing the outcomes' files
    ("stamping", (CatalogLedger, "finalise"), catalog_full),  # freezing the run with its verdicts
])
def test_a_full_disk_while_reaping_leaves_the_run_to_be_finalised_later(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch, step: str, target: tuple[type, str], fault: Any) -> None:
    run_id = released_run(ws)
    later(ws, ws.settings.lease_seconds + 1)
    with monkeypatch.context() as patch:
        patch.setattr(*target, fault)
        assert ops.reap(ws)["finalised_released"] == []
        assert ops.reap(ws)["finalised_released"] == []  # still full: still waiting, never frozen
    run = get_run(ws.engine, run_id)
    assert run.status == "released" and run.finalised_at is None, (step, run.status)
    assert run.status_reason.startswith("finalisation deferred") and "the next `assay reap` tries again" in run.status_reason
    assert ("No space left on device" if step == "judging" else "disk is full") in run.status_reason
    assert set(stamped(ws, run_id)) == {None}

    assert ops.reap(ws)["finalised_released"] == [run_id]  # space freed: the next reap finishes it
    run = get_run(ws.engine, run_id)
    assert run.status == "completed" and run.outcome in ("pass", "fail", "error")
    assert None not in stamped(ws, run_id)
    assert run.status_reason.startswith("judged and finalised by the reaper after: finalisation deferred")


def test_a_failure_that_does_not_pass_still_ends_the_run_error(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = released_run(ws)
    later(ws, ws.settings.lease_seconds + 1)

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), "outcomes/part-0.parquet")

    with monkeypatch.context() as patch:
        patch.setattr(Lake, "stage", refused)
        assert ops.reap(ws)["finalised_released"] == [run_id]
    run = get_run(ws.engine, run_id)
    assert run.status == "error" and "judging failed while reaping" in run.status_reason


def test_transient_failures_are_told_from_the_rest() -> None:
    wrapped = RuntimeError("could not write the lake file outcomes/part-1.parquet")
    wrapped.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert ops.transient_failure(wrapped)
    assert ops.transient_failure(OSError("Arrow: IOError: No space left on device"))
    assert not ops.transient_failure(OSError(errno.ENOENT, "No such file or directory"))
    assert not ops.transient_failure(ValueError("unknown mechanism"))


# -- 3. the lease is kept while a large first batch is prepared and staged -------------------------------------
TTL = 1.0
"""The lease's length here: preparing and staging each take several of them."""
SLOW = 2.5 * TTL


class SlowFirstBatch(FixedRunner):
    """The fixed runner, but its first batch takes :data:`SLOW` seconds to prepare (a large call set parsed),
    with no heartbeat meanwhile; ``then`` is called once the time has passed."""

    def __init__(self, then: Callable[[str], None]):
        super().__init__()
        self.then = then
        self.batch_size = 1

    def execute(self, job: RunJob, heartbeat: Any):
        time.sleep(SLOW)
        self.then("preparing")
        yield from super().execute(job, heartbeat)


class SlowFlakyCatalog(CatalogLedger):
    """A ledger whose first report takes :data:`SLOW` seconds to stage (then ``then`` is called), and whose
    first renewal from the lease keeper's thread meets a passing catalog fault."""

    def __init__(self, *args: Any, then: Callable[[str], None]):
        super().__init__(*args)
        self.then = then
        self.flaked = False

    def renew(self, lease, ttl_seconds):
        if threading.current_thread().name == "assay-lease-keeper" and not self.flaked:
            self.flaked = True
            raise sa.exc.OperationalError("UPDATE runs", {}, Exception("database is locked"))
        return super().renew(lease, ttl_seconds)

    def stage_report(self, lease, report):
        if report.request_id.endswith(":0"):
            time.sleep(SLOW)
            self.then("staging")
        return super().stage_report(lease, report)


def test_a_first_batch_slower_than_the_lease_still_commits_and_nobody_takes_the_run(
        engine: sa.Engine, tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"), engine)
    run_id = create_run(engine, seed_suite(engine), "fixed").run_id
    refusals: list[tuple[str, str]] = []

    def rival(when: str) -> None:
        """Another worker tries to take the run: refused, the lease being ours and live."""
        try:
            CatalogLedger(engine, lake).claim(run_id, "rival", TTL)
        except LeaseError as exc:
            refusals.append((when, exc.reason))
        else:
            refusals.append((when, "claimed"))

    ledger = SlowFlakyCatalog(engine, lake, then=rival)
    result = drive(SlowFirstBatch(rival), ledger, job_for_run(engine, run_id), owner="worker", ttl_seconds=TTL)
    assert result.error is None and result.case_runs == 2
    assert [when for when, _ in refusals] == ["preparing", "staging"]
    assert all(reason.startswith("held by 'worker'") for _, reason in refusals), refusals
    assert ledger.flaked  # a renewal met the fault, and the keeper carried on
    assert get_run(engine, run_id).status == "released" and case_runs(lake, run_id).height == 2


# -- 4. a refused report is kept as a bounded summary ----------------------------------------------------------
def test_a_large_refused_report_is_kept_as_a_bounded_summary(engine: sa.Engine, tmp_path: Path) -> None:
    clock = Clock()
    ledger = CatalogLedger(engine, Lake(str(tmp_path / "lake"), engine), clock=clock)
    run_id = create_run(engine, seed_suite(engine), "fixed").run_id
    lease = ledger.claim(run_id, "worker", 30)
    clock.advance(60)
    assert ledger.reap()["lease_expired"] == [run_id]  # final: the report below comes too late
    cases = job_for_run(engine, run_id).cases
    calls = [CaseRun(case_id=cases[n % 2].case_id, source_ref=f"call-{n:05d}",
                     transcript=[Turn(role="agent", text=f"turn {k} of call {n}: " + "x" * 200) for k in range(12)],
                     evaluations=[Evaluation(name="fixed", evaluator="fixed", verdict="pass")])
             for n in range(10_000)]
    receipt = ledger.report(lease, Report.from_case_runs("late-10k", calls))
    assert receipt.status == "rejected" and "finalised" in receipt.reason
    with engine.connect() as conn:
        row = conn.execute(sa.select(t.rejected_reports)).one()
    stored = len(json.dumps(row.payload))
    assert stored < SUMMARY_BYTES  # the whole report would be tens of megabytes
    summary = row.payload
    assert (summary["request_id"], summary["case_runs_total"], summary["evaluations_total"]) == ("late-10k", 10_000, 10_000)
    assert len(summary["payload_sha256"]) == 64 and summary["payload_bytes"] > 100 * SUMMARY_BYTES
    assert summary["truncated"] and 1 <= len(summary["case_runs"]) <= 3
    first = summary["case_runs"][0]
    assert first["source_ref"] == "call-00000" and first["transcript"][0]["text"].startswith("turn 0 of call 0")
    assert first["transcript"][-1] == "… (2 more items)"  # 12 turns: the first 10 kept, the rest counted
    assert row.request_id == "late-10k" and "finalised" in row.reason

    again = CatalogLedger(engine, ledger.lake, clock=clock)  # the same report again: the same hash
    again.report(lease, Report.from_case_runs("late-10k", calls))
    with engine.connect() as conn:
        hashes = conn.execute(sa.select(t.rejected_reports.c.payload)).scalars().all()
    assert len({h["payload_sha256"] for h in hashes}) == 1
