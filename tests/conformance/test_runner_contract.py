"""The conformance kit: every registered runner, on SQLite and PostgreSQL, honours the contract.

claim -> report -> release: no report without the lease; renew extends it; release ends it; a late
report is dropped and recorded; a duplicate report is idempotent; declared mechanisms are honest; a
runner that dies mid-run leaves a run that resolves timed_out; N processes racing to claim one run
leave exactly one winner. A runner declares its own known gaps (``Runner.known_gaps``: test name ->
reason); each is a strict xfail with that reason, listed at the end of the session.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from factories import seed_suite
import test_flow_backends  # noqa: F401  (its per-runner tests are kit tests too: a runner may declare gaps in them)
from kit import (
    DOOMED_LEASE_SECONDS, KIT_TESTS, RUNNERS, Contract, claim_once, die_after_first_report, drive_any, gap_params,
    per_runner, prepare, reports_of,
)

from assay.core.errors import LeaseError
from assay.core.mechanisms import FAMILY_EVIDENCE, MECHANISMS, family
from assay.core.plugins import runner_class
from assay.core.runner import TARGET_KINDS, Lease, RunContext, teardown_scratch
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, get_run, run_details
from assay.storage.lake import Lake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


@pytest.fixture
def contract(engine: sa.Engine, lake: Lake, tmp_path: Path, runner_name: str) -> Iterator[Contract]:
    suite = seed_suite(engine, criteria={})
    contract = prepare(engine, lake, runner_name, tmp_path / "work", suite)
    yield contract
    contract.runner.close()


def _drive(c: Contract, ttl: float = 60) -> None:
    drive_any(c.runner, c.ledger, c.job, owner="kit", ttl_seconds=ttl)


def _scratch_rows(c: Contract) -> list:
    from assay.storage.catalog import tables as t

    with c.ledger.engine.connect() as conn:
        return list(conn.execute(sa.select(t.scratch_objects).where(t.scratch_objects.c.run_id == c.run_id)))


def _reports(c: Contract) -> list:
    """Every report the runner makes for the contract's job, without the ledger's lease (and its scratch
    objects torn down afterwards, so the fakes are left as they were found). An asynchronous runner submits
    once per contract; calling this again is a retried collection of that submission."""
    scratch = c.ledger.scratch
    ctx = RunContext(lambda: None, run_id=c.run_id, runner=c.runner.name, scratch=scratch)
    if not c.runner.synchronous and c.ref is None:
        c.ref = c.runner.submit(c.job)
    try:
        return reports_of(c.runner, c.job, ctx, ref=c.ref)
    finally:
        teardown_scratch(c.runner, scratch, scratch.outstanding(c.run_id))


def test_the_built_in_runners_are_installed() -> None:
    assert {"config_check", "fixed", "recorded"} <= set(RUNNERS)


@pytest.mark.parametrize("runner_name", RUNNERS)
def test_every_runner_loads_with_honest_declarations(runner_name: str) -> None:
    cls = runner_class(runner_name)  # a broken plug-in fails here, naming its distribution
    assert cls.name == runner_name
    assert cls.mechanisms and set(cls.mechanisms) <= set(MECHANISMS), runner_name
    assert cls.target_kinds and set(cls.target_kinds) <= set(TARGET_KINDS), runner_name
    assert isinstance(cls.synchronous, bool)
    unknown = sorted(set(cls.known_gaps) - KIT_TESTS)
    assert not unknown, f"{runner_name} declares gaps in tests the kit lacks: {unknown}; kit tests: {sorted(KIT_TESTS)}"


@per_runner
def test_no_report_without_the_lease(contract: Contract) -> None:
    report = _reports(contract)[0]
    unclaimed = Lease(contract.run_id, "kit", get_run(contract.ledger.engine, contract.run_id).created_at)
    with pytest.raises(LeaseError, match="nobody holds the lease"):
        contract.ledger.report(unclaimed, report)
    assert contract.ledger.lake.files("case_runs") == []


@per_runner
def test_renew_extends_and_release_ends(contract: Contract) -> None:
    lease = contract.ledger.claim(contract.run_id, "kit", 30)
    renewed = contract.ledger.renew(lease, 300)
    assert renewed.expires_at > lease.expires_at
    contract.ledger.release(renewed)
    with pytest.raises(LeaseError):
        contract.ledger.report(renewed, _reports(contract)[0])
    with pytest.raises(LeaseError):
        contract.ledger.renew(renewed, 30)


@per_runner
def test_a_full_drive_stores_one_case_run_per_case(contract: Contract) -> None:
    _drive(contract)
    contract.ledger.finalise(contract.run_id)
    run = get_run(contract.ledger.engine, contract.run_id)
    assert run.status == "completed" and run.case_runs >= run.case_count == 2
    stored = contract.ledger.lake.read("case_runs", run_id=contract.run_id)
    assert stored.height == run.case_runs
    assert set(stored["case_key"]) == {"case-1", "case-2"}
    assert set(stored["runner"]) == {contract.runner.name}


@per_runner
def test_duplicate_reports_change_nothing(contract: Contract) -> None:
    lease = contract.ledger.claim(contract.run_id, "kit", 60)
    first = [contract.ledger.report(lease, r).status for r in _reports(contract)]
    again = [contract.ledger.report(lease, r).status for r in _reports(contract)]  # a retried execution
    assert set(first) == {"accepted"} and set(again) == {"duplicate"}
    run = get_run(contract.ledger.engine, contract.run_id)
    assert contract.ledger.lake.read("case_runs").height == run.case_runs
    assert len(contract.ledger.lake.files("case_runs")) == len(first)


@per_runner
def test_a_late_report_is_dropped_and_recorded(contract: Contract) -> None:
    ledger = contract.ledger
    lease = ledger.claim(contract.run_id, "kit", 60)
    ledger.release(lease)
    ledger.finalise(contract.run_id, status="completed")
    receipt = ledger.report(lease, _reports(contract)[0])
    assert receipt.status == "rejected"
    details = run_details(ledger.engine, contract.run_id)
    assert len(details["rejected_reports"]) == 1 and details["case_runs"] == 0
    assert ledger.lake.files("case_runs") == []


@per_runner
def test_declared_mechanisms_are_honest(contract: Contract) -> None:
    """Every mechanism family a runner declares finds its evidence in what the runner stored."""
    _drive(contract)
    lake = contract.ledger.lake
    runs = lake.read("case_runs", run_id=contract.run_id)
    executed = runs.filter(runs["status"] == "executed")
    assert executed.height > 0
    evaluated = set(lake.read("runner_evaluations", run_id=contract.run_id)["case_run_id"])
    for fam in sorted({family(m) for m in contract.runner.mechanisms}):
        field = FAMILY_EVIDENCE[fam]
        for row in executed.iter_rows(named=True):
            present = row["case_run_id"] in evaluated if field == "evaluations" else bool(row[field])
            assert present, f"{contract.runner.name} declares {fam} but case run {row['case_key']} has no {field}"


@per_runner
def test_a_runner_that_dies_mid_run_times_out(
    contract: Contract, catalog_url: str, lake: Lake, tmp_path: Path, fake_vendors: dict
) -> None:
    ctx = mp.get_context("spawn")
    proc = ctx.Process(
        target=die_after_first_report,
        args=(catalog_url, lake.url, contract.run_id, contract.runner.name, str(tmp_path / "work")),
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == 17
    run = get_run(contract.ledger.engine, contract.run_id)
    assert run.status == "running" and run.lease_owner == "doomed" and run.case_runs == 1
    assert contract.ledger.reap()["lease_expired"] == []  # the lease is still live
    expires = run.lease_expires_at
    assert contract.ledger.clock() + timedelta(seconds=DOOMED_LEASE_SECONDS / 2) < expires
    # the lease runs out: the reaper's clock steps to a second before its end, then to a second after
    before, after = (CatalogLedger(contract.ledger.engine, lake, clock=lambda at=expires + timedelta(seconds=s): at)
                     for s in (-1, 1))
    assert before.reap()["lease_expired"] == []
    assert after.reap()["lease_expired"] == [contract.run_id]
    run = get_run(contract.ledger.engine, contract.run_id)
    assert (run.status, run.status_reason) == ("timed_out", "lease_expired")
    # Whatever the dead process created at a vendor is found and deleted by the reaper's sweep.
    scratch = contract.ledger.scratch
    left = scratch.abandoned()
    teardown_scratch(contract.runner, scratch, [o for o in left if o.run_id == contract.run_id])
    assert scratch.outstanding(contract.run_id) == []
    created = _scratch_rows(contract)
    held = {i for fake in fake_vendors.values() for ids in fake.live_objects().values() for i in ids}
    assert not {r.vendor_id for r in created if r.vendor_id} & held, "a dead run's vendor objects are still there"


def test_racing_processes_claim_exactly_once(engine: sa.Engine, catalog_url: str, lake: Lake) -> None:
    run_id = create_run(engine, seed_suite(engine, criteria={}), "fixed").run_id
    ctx = mp.get_context("spawn")
    start, ready, results = ctx.Event(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=claim_once, args=(catalog_url, lake.url, run_id, f"p{i}", start, ready, results))
             for i in range(8)]
    for p in procs:
        p.start()
    for _ in procs:  # every process has imported and connected: release them together
        ready.get(timeout=120)
    start.set()
    outcomes = dict(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
    winners = [o for o, r in outcomes.items() if r == "won"]
    assert len(winners) == 1, outcomes
    assert all("held by" in r for o, r in outcomes.items() if o not in winners), outcomes
    assert get_run(engine, run_id).lease_owner == winners[0]


def test_a_known_gap_becomes_a_strict_xfail_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_class("fixed"), "known_gaps", {"test_some_contract": "fixed cannot do this yet"})
    params = gap_params("test_some_contract")
    [gap] = [p for p in params if not isinstance(p, str)]
    assert gap.values == ("fixed",)
    [mark] = gap.marks
    assert mark.name == "xfail" and mark.kwargs == {"strict": True, "reason": "fixed cannot do this yet"}
    assert sorted(p for p in params if isinstance(p, str)) == sorted(set(RUNNERS) - {"fixed"})
