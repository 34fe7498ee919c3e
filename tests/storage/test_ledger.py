"""The run ledger on both databases: leases, reports, rejected reports, finalisation, the reaper."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from factories import Clock, seed_suite

from assay.core.errors import CriteriaError, ImmutableError, LeaseError, RunFinalisedError
from assay.core.evidence import CaseRun, Evaluation, Report, Turn
from assay.storage.catalog import tables as t
from assay.storage.catalog.engine import refusing_changes
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, get_run, job_for_run, run_details
from assay.storage.lake import Lake


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(engine: sa.Engine, tmp_path: Path, clock: Clock) -> CatalogLedger:
    return CatalogLedger(engine, Lake(str(tmp_path / "lake"), engine), clock=clock)


@pytest.fixture
def run_id(engine: sa.Engine) -> str:
    return create_run(engine, seed_suite(engine), "fixed").run_id


def report_for(engine: sa.Engine, run_id: str, request_id: str = "r1") -> Report:
    job = job_for_run(engine, run_id)
    return Report.from_case_runs(
        request_id,
        [
            CaseRun(
                case_id=c.case_id,
                transcript=[Turn(role="agent", text=f"hello from {c.case_key}")],
                evaluations=[Evaluation(name="fixed", evaluator="fixed", verdict="pass")],
            )
            for c in job.cases
        ],
    )


def test_create_run_snapshots_cases_and_stamps_criteria(engine: sa.Engine, run_id: str) -> None:
    details = run_details(engine, run_id)
    assert details["status"] == "pending" and details["case_count"] == 2
    assert details["criteria"] == {"ci": 1}
    job = job_for_run(engine, run_id)
    assert [c.case_key for c in job.cases] == ["case-1", "case-2"]
    assert job.cases[0].content["content"] == {"situation": {"caller": "caller of case-1"}}


def test_unresolvable_criteria_stop_the_run_before_it_exists(engine: sa.Engine) -> None:
    suite = seed_suite(engine, criteria={"required": ["no_such_key"]})
    with pytest.raises(CriteriaError, match="required key 'no_such_key' matches no assertion"):
        create_run(engine, suite, "fixed")
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.runs)).scalar_one() == 0


def test_claim_is_exclusive_until_the_lease_expires(ledger: CatalogLedger, run_id: str, clock: Clock) -> None:
    lease = ledger.claim(run_id, "a", 30)
    with pytest.raises(LeaseError, match="held by 'a'"):
        ledger.claim(run_id, "b", 30)
    clock.advance(31)
    taken = ledger.claim(run_id, "b", 30)
    assert taken.owner == "b"
    with pytest.raises(LeaseError, match="held by 'b'"):
        ledger.renew(lease, 30)


def test_renew_extends_and_release_ends(ledger: CatalogLedger, run_id: str, clock: Clock) -> None:
    lease = ledger.claim(run_id, "a", 30)
    clock.advance(20)
    renewed = ledger.renew(lease, 30)
    assert renewed.expires_at == clock.now + timedelta(seconds=30)
    clock.advance(20)  # past the first expiry, within the renewed one
    with pytest.raises(LeaseError):
        ledger.claim(run_id, "b", 30)
    ledger.release(renewed)
    assert get_run(ledger.engine, run_id).lease_owner is None
    with pytest.raises(LeaseError, match="nobody holds the lease"):
        ledger.report(renewed, report_for(ledger.engine, run_id))


def test_only_the_holder_reports_and_refusals_are_kept(ledger: CatalogLedger, engine: sa.Engine, run_id: str) -> None:
    ledger.claim(run_id, "a", 30)
    from assay.core.runner import Lease

    impostor = Lease(run_id, "b", get_run(engine, run_id).lease_expires_at)
    with pytest.raises(LeaseError, match="held by 'a'"):
        ledger.report(impostor, report_for(engine, run_id))
    details = run_details(engine, run_id)
    assert details["case_runs"] == 0 and details["reports"] == []
    assert [r["owner"] for r in details["rejected_reports"]] == ["b"]
    assert ledger.lake.files("case_runs") == []


def test_report_stores_evidence_and_is_idempotent(ledger: CatalogLedger, engine: sa.Engine, run_id: str) -> None:
    lease = ledger.claim(run_id, "a", 30)
    first = ledger.report(lease, report_for(engine, run_id, "r1"))
    again = ledger.report(lease, report_for(engine, run_id, "r1"))
    assert (first.status, first.case_runs, first.evaluations) == ("accepted", 2, 2)
    assert again.status == "duplicate"
    run = get_run(engine, run_id)
    assert (run.case_runs, run.evaluations) == (2, 2)
    rows = ledger.lake.read("case_runs")
    assert rows.height == 2 and len(ledger.lake.files("case_runs")) == 1
    assert set(rows["case_key"]) == {"case-1", "case-2"}
    assert rows["case_snapshot_hash"].null_count() == 0 and set(rows["team_id"]) == {"team-a"}
    evals = ledger.lake.read("runner_evaluations")
    assert set(evals["case_run_id"]) == set(rows["case_run_id"])


def test_late_report_into_a_finalised_run_is_dropped_loudly(
    ledger: CatalogLedger, engine: sa.Engine, run_id: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    lease = ledger.claim(run_id, "a", 30)
    clock.advance(60)
    assert ledger.reap() == {"deadline_passed": [], "lease_expired": [run_id], "never_started": []}
    with caplog.at_level(logging.WARNING):
        receipt = ledger.report(lease, report_for(engine, run_id, "late"))
    assert receipt.status == "rejected" and "finalised" in receipt.reason
    assert "dropped report late" in caplog.text
    details = run_details(engine, run_id)
    assert details["status"] == "timed_out" and details["status_reason"] == "lease_expired"
    assert details["case_runs"] == 0
    [rejected] = details["rejected_reports"]
    assert rejected["request_id"] == "late"
    with engine.connect() as conn:
        payload = conn.execute(sa.select(t.rejected_reports.c.payload)).scalar_one()
    assert len(payload["case_runs"]) == 2 and payload["case_runs"][0]["transcript"][0]["role"] == "agent"
    assert ledger.lake.files("case_runs") == []


def test_finalised_runs_are_frozen_by_the_database(ledger: CatalogLedger, engine: sa.Engine, run_id: str) -> None:
    ledger.release(ledger.claim(run_id, "a", 30))
    ledger.finalise(run_id)
    with pytest.raises(RunFinalisedError):
        ledger.claim(run_id, "a", 30)
    with pytest.raises(ImmutableError, match="finalised and frozen"), refusing_changes(), engine.begin() as conn:
        conn.execute(t.runs.update().where(t.runs.c.run_id == run_id).values(outcome="pass"))


def test_release_with_error_finalises(ledger: CatalogLedger, run_id: str) -> None:
    ledger.release(ledger.claim(run_id, "a", 30), error="vendor said 500")
    run = get_run(ledger.engine, run_id)
    assert (run.status, run.status_reason) == ("error", "vendor said 500") and run.finalised_at is not None


def test_reaper_resolves_passed_deadlines_and_leaves_live_runs(
    ledger: CatalogLedger, engine: sa.Engine, clock: Clock
) -> None:
    suite = seed_suite(engine)
    waiting = create_run(engine, suite, "fixed", deadline=timedelta(minutes=5)).run_id
    working = create_run(engine, suite, "fixed").run_id
    lease = ledger.claim(working, "a", 600)
    clock.advance(301)
    with pytest.raises(LeaseError, match="deadline passed"):
        ledger.claim(waiting, "b", 30)
    assert ledger.reap() == {"deadline_passed": [waiting], "lease_expired": [], "never_started": []}
    assert get_run(engine, working).status == "running"
    ledger.renew(lease, 600)
    with pytest.raises(RunFinalisedError, match="timed_out"):
        ledger.claim(waiting, "b", 30)


def test_the_deadline_holds_after_claim(ledger: CatalogLedger, engine: sa.Engine, clock: Clock) -> None:
    run_id = create_run(engine, seed_suite(engine), "fixed", deadline=timedelta(seconds=30)).run_id
    lease = ledger.claim(run_id, "a", 600)  # the lease outlives the deadline
    clock.advance(31)
    with pytest.raises(LeaseError, match="deadline passed"):
        ledger.renew(lease, 600)
    with pytest.raises(LeaseError, match="deadline passed"):
        ledger.report(lease, report_for(engine, run_id, "after"))
    details = run_details(engine, run_id)
    assert details["case_runs"] == 0 and details["reports"] == []
    [rejected] = details["rejected_reports"]  # kept as a summary, like a late report
    assert rejected["request_id"] == "after" and "deadline passed" in rejected["reason"]
    assert ledger.lake.files("case_runs") == []
    assert ledger.reap()["deadline_passed"] == [run_id]


def test_a_run_never_started_times_out_after_the_pending_timeout(
    ledger: CatalogLedger, engine: sa.Engine, clock: Clock
) -> None:
    suite = seed_suite(engine)
    pending = create_run(engine, suite, "fixed").run_id
    released = create_run(engine, suite, "fixed").run_id
    ledger.release(ledger.claim(released, "a", 30))
    clock.advance(3599)
    assert ledger.reap(pending_timeout_seconds=3600)["never_started"] == []
    clock.advance(2)
    assert ledger.reap(pending_timeout_seconds=3600) == {
        "deadline_passed": [], "lease_expired": [], "never_started": [pending]
    }
    run = get_run(engine, pending)
    assert (run.status, run.status_reason) == ("timed_out", "never_started") and run.finalised_at is not None
    assert get_run(engine, released).status == "released"  # it needs judging, not timing out
    assert ledger.released(idle_seconds=60) == [released]


def test_finalise_keeps_its_reason(ledger: CatalogLedger, run_id: str) -> None:
    ledger.release(ledger.claim(run_id, "a", 30))
    ledger.finalise(run_id, status="error", reason="judging failed")
    run = get_run(ledger.engine, run_id)
    assert (run.status, run.status_reason, run.finalised_at is not None) == ("error", "judging failed", True)


def test_create_run_is_idempotent_on_its_request_id(engine: sa.Engine) -> None:
    suite = seed_suite(engine)
    first = create_run(engine, suite, "fixed", request_id="flow-1")
    again = create_run(engine, suite, "fixed", request_id="flow-1")
    other = create_run(engine, suite, "fixed", request_id="flow-2")
    assert again.run_id == first.run_id != other.run_id
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.runs)).scalar_one() == 2
