"""The asynchronous life cycle on the fake Hamming: submit, collect until done, judge, finalise; deadlines,
late results, lease renewal while the vendor works, the concurrency bound, rate limits, vendor failures."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from command_line import assay

from assay.adapters.http import RetryPolicy
from assay.adapters.runners.hamming import HammingRunner
from assay.core.settings import Settings
from assay.fakes.hamming import FakeHamming
from assay.flows import operations as ops
from assay.flows.collect import collect_outstanding
from assay.flows.judging import verdicts_for
from assay.flows.workspace import Workspace, open_workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.runs import get_run, outstanding_runs, run_details, vendor_mappings

from fake_servers import fake_hamming, hamming_env

SUITE = "acme/voice"
BUNDLE = {
    "schema": "assay.bundle/v1",
    "consumers": [{"key": "ci"}],
    "teams": [{
        "id": "acme", "name": "Acme",
        "cases": [
            {"key": "leak", "title": "Leaking heater", "situation": {"caller": "Dana Whitfield, homeowner", "wants": "A repair"}},
            {"key": "burst", "title": "Burst pipe", "situation": {"caller": "Marcus, tenant", "wants": "The water off"}},
        ],
        "suites": [{
            "key": "voice", "name": "Voice line", "target": {"config": "config.json"}, "cases": ["leak", "burst"],
            "assertions": [
                {"key": "greets", "mechanism": "vendor.evaluation", "params": {"vendor_id": "as-greeting", "name": "Greets the caller"},
                 "role": "hamming"},
                {"key": "offers_help", "mechanism": "transcript.contains", "params": {"text": "look into", "role": "agent"}},
            ],
            "criteria": {"ci": {"required": ["greets", "offers_help"]}},
        }],
    }],
}


@pytest.fixture
def hamming() -> Iterator[FakeHamming]:
    with fake_hamming() as fake:
        yield fake


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, hamming: FakeHamming, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A workspace with the voice suite loaded, on each catalog database, pointed at the fake Hamming."""
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    yield from _workspace(assay_home, hamming, monkeypatch)


@pytest.fixture
def local_ws(assay_home: Path, hamming: FakeHamming, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """The same on the embedded default only (for the Prefect flows and the command line)."""
    yield from _workspace(assay_home, hamming, monkeypatch)


def _workspace(assay_home: Path, hamming: FakeHamming, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    for key, value in hamming_env(hamming).items():
        monkeypatch.setenv(key, value)
    assay_home.mkdir(parents=True, exist_ok=True)
    (assay_home / "config.json").write_text(json.dumps({"name": "Voice line", "prompt": "Deployed."}))
    (assay_home / "bundle.json").write_text(json.dumps(BUNDLE))
    workspace = open_workspace(create=True)
    ops.load(workspace, str(assay_home / "bundle.json"))
    yield workspace
    workspace.close()


def submit(ws: Workspace, deadline: timedelta | None = None) -> str:
    run_id = ops.start_run(ws, SUITE, "hamming", deadline).run_id
    assert ops.execute_run(ws, run_id).error is None
    return run_id


def runner(**kwargs: Any) -> HammingRunner:
    return HammingRunner(**{"retry": RetryPolicy(base_delay=0.01), **kwargs})


def move_deadline(ws: Workspace, run_id: str, seconds_ago: float = 1.0) -> None:
    with ws.engine.begin() as conn:
        conn.execute(t.runs.update().where(t.runs.c.run_id == run_id)
                     .values(deadline_at=datetime.now(UTC) - timedelta(seconds=seconds_ago)))


def test_submit_then_collect_until_done_judges_and_finalises(ws: Workspace, hamming: FakeHamming) -> None:
    hamming.faults.never_finish = True
    run_id = submit(ws)
    run = get_run(ws.engine, run_id)
    assert run.awaiting_vendor and run.lease_owner is None and run.deadline_at is not None  # a default deadline
    assert list(vendor_mappings(ws.engine, run_id).values()) == [("as-greeting", "Greets the caller")]
    assert ws.ledger.reap() == {"deadline_passed": [], "lease_expired": [], "never_started": []}  # waiting is not abandoned
    first = collect_outstanding(ws)
    assert (first.outstanding, first.waiting, first.finalised) == (1, [run_id], [])
    assert get_run(ws.engine, run_id).awaiting_vendor
    [test_run] = hamming.objects("test_runs").values()
    test_run["finish_at"] = time.monotonic()  # Hamming finishes
    second = collect_outstanding(ws)
    assert second.collected == second.finalised == [run_id]
    run = get_run(ws.engine, run_id)
    assert (run.status, run.outcome, run.case_runs) == ("completed", "pass", 2)
    [verdict] = verdicts_for(ws, [run_id])
    assert (verdict["stamped"], verdict["verdict"]) == ("pass", "pass")
    assert "hamming:assertion" in verdict["evaluators"]
    assert outstanding_runs(ws.engine, ws.ledger.clock()) == []
    assert collect_outstanding(ws).outstanding == 0  # nothing left: a second pass does nothing


def test_a_run_that_never_finishes_times_out_at_its_deadline(ws: Workspace, hamming: FakeHamming) -> None:
    hamming.faults.never_finish = True
    run_id = submit(ws, deadline=timedelta(hours=1))
    assert collect_outstanding(ws).waiting == [run_id]
    move_deadline(ws, run_id)
    result = collect_outstanding(ws)
    assert result.timed_out == [run_id] and result.late_reports == 0
    run = get_run(ws.engine, run_id)
    assert (run.status, run.status_reason) == ("timed_out", "deadline_passed")
    assert run_details(ws.engine, run_id)["rejected_reports"] == []


def test_results_after_the_deadline_are_dropped_loudly(ws: Workspace, hamming: FakeHamming,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    run_id = submit(ws)  # Hamming has the results at once, but nobody collected before the deadline
    move_deadline(ws, run_id)
    with caplog.at_level(logging.WARNING):
        result = collect_outstanding(ws)
    assert result.timed_out == [run_id] and result.late_reports == 1 and result.late_runs == [run_id]
    details = run_details(ws.engine, run_id)
    assert details["status"] == "timed_out" and details["case_runs"] == 0
    [rejected] = details["rejected_reports"]
    assert "finalised" in rejected["reason"] and f"dropped report {rejected['request_id']}" in caplog.text
    with ws.engine.connect() as conn:
        payload = conn.execute(sa.select(t.rejected_reports.c.payload)).scalar_one()
    assert len(payload["case_runs"]) == 2  # its summary keeps the late report's first case runs
    assert ws.lake.files("case_runs") == []


def test_a_deadline_passing_while_results_are_fetched_drops_them(ws: Workspace) -> None:
    run_id = submit(ws)

    class DeadlineDuringFetch(HammingRunner):
        def collect(self, job, provider_ref):
            reports = super().collect(job, provider_ref)
            move_deadline(ws, run_id)
            assert ws.ledger.reap()["deadline_passed"] == [run_id]
            return reports

    late = DeadlineDuringFetch()
    try:
        result = collect_outstanding(ws, runners={"hamming": late})
    finally:
        late.close()
    assert result.late_runs == [run_id] and result.late_reports == 1 and result.finalised == []
    assert get_run(ws.engine, run_id).status == "timed_out"
    assert len(run_details(ws.engine, run_id)["rejected_reports"]) == 1


@pytest.fixture
def slow_vendor(hamming: FakeHamming) -> FakeHamming:
    """The fake Hamming taking a real second over every answer: longer than a lease, which only real time
    shows (the lease keeper renews on its own thread meanwhile)."""
    hamming.faults.latency = 1.0
    return hamming


def test_leases_are_renewed_while_the_vendor_is_slow(ws: Workspace, slow_vendor: FakeHamming) -> None:
    run_id = submit(ws)
    ws.settings = Settings(lease_seconds=0.8)  # each poll and fetch outlasts the lease
    result = collect_outstanding(ws)
    assert result.collected == [run_id] and result.retry == {}
    assert result.lease_renewals >= 4
    assert get_run(ws.engine, run_id).status == "completed"


def test_a_collector_that_died_leaves_the_run_to_the_next_one(ws: Workspace) -> None:
    run_id = submit(ws)
    ws.ledger.claim(run_id, "dead-collector", -1)  # claimed, then its lease lapsed: the process died
    assert ws.ledger.reap()["lease_expired"] == []  # the vendor still has it: not timed out
    assert collect_outstanding(ws).finalised == [run_id]


def test_polls_stay_within_the_concurrency_bound(local_ws: Workspace, hamming: FakeHamming) -> None:
    ws = local_ws
    run_ids = [submit(ws) for _ in range(8)]
    hamming.faults.latency = 0.02  # each poll held long enough for the next ones to start meanwhile
    shared = runner()
    try:
        result = collect_outstanding(ws, concurrency=3, runners={"hamming": shared})
        assert shared.client.peak_in_flight <= 3
    finally:
        shared.close()
    assert sorted(result.finalised) == sorted(run_ids)
    assert 2 <= hamming.peak_in_flight <= 3


def test_rate_limits_are_honoured(ws: Workspace, hamming: FakeHamming) -> None:
    run_id = submit(ws)
    waits: list[float] = []
    hamming.faults.rate_limited, hamming.faults.retry_after = 2, 5
    patient = runner(sleep=waits.append)
    try:
        result = collect_outstanding(ws, runners={"hamming": patient})
    finally:
        patient.close()
    assert result.finalised == [run_id] and waits == [5.0, 5.0]
    assert [r["status"] for r in hamming.requests if r["path"].endswith("/status")] == [429, 429, 200]


def test_transient_failures_wait_for_the_next_pass_and_permanent_ones_end_the_run(ws: Workspace, hamming: FakeHamming) -> None:
    flaky, lost = submit(ws), submit(ws)
    hamming.objects("test_runs").clear()  # Hamming forgot one of them: 404 for ever
    flaky_ref = json.loads(get_run(ws.engine, flaky).provider_ref)["test_run"]
    with hamming.lock:
        hamming.objects("test_runs")[flaky_ref] = {
            "id": flaky_ref, "started": time.monotonic(), "finish_at": time.monotonic(), "assertion_ids": ["as-greeting"],
            "case_runs": [{"id": i, "testCaseId": "tc-template", "config": {}} for i, _ in
                          json.loads(get_run(ws.engine, flaky).provider_ref)["case_runs"]],
            "final_status": "COMPLETED"}
    hamming.faults.server_errors = 100
    first = collect_outstanding(ws, runners={"hamming": (one := runner(retry=RetryPolicy(attempts=2, base_delay=0.01)))})
    one.close()
    assert set(first.retry) == {flaky, lost} and "503" in first.retry[flaky]
    assert get_run(ws.engine, flaky).awaiting_vendor
    hamming.faults.server_errors = 0
    second = collect_outstanding(ws)
    assert second.finalised == [flaky] and lost in second.failed and "404" in second.failed[lost]
    assert (get_run(ws.engine, lost).status, get_run(ws.engine, flaky).status) == ("error", "completed")


def test_the_collect_flow_and_the_run_suite_flow(prefect_harness, local_ws: Workspace) -> None:
    from assay.flows.orchestration import collect, run_suite

    started = run_suite(SUITE, "hamming")
    assert started["run"]["status"] == "running" and started["verdicts"] == []
    result = collect()
    assert result["finalised"] == [started["run"]["run_id"]]


def test_assay_collect_on_the_command_line(local_ws: Workspace) -> None:
    run_id = submit(local_ws)
    settings = {k: v for k, v in os.environ.items() if k.startswith("ASSAY_")}  # the workspace and the fake
    doc = json.loads(assay("collect", "--json", extra_env=settings).stdout)
    assert doc["schema"] == "assay.collect" and doc["finalised"] == [run_id]
    assert assay("collect", extra_env=settings).stdout.startswith("0 outstanding")


def test_a_rename_at_hamming_is_an_error_verdict_with_a_warning(ws: Workspace, hamming: FakeHamming) -> None:
    run_id = submit(ws)
    hamming.faults.rename_assertions = {"as-greeting": "Greets the caller by name"}
    result = collect_outstanding(ws)
    assert result.finalised == [run_id] and len(result.warnings) == 2  # one per case run
    assert "'Greets the caller by name'" in result.warnings[0]
    [verdict] = verdicts_for(ws, [run_id])
    assert verdict["verdict"] == "error" and get_run(ws.engine, run_id).outcome == "error"  # never a silent pass
