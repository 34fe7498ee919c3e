"""``drive()`` with escalation rounds: under one claim and one release, each further job the ``more`` callback
returns is executed and reported as new reports (a runner names its reports by run and batch, so a round's
batch 0 must not read as a duplicate of the first round's), the callback renews the lease through the
heartbeat it is given, and it is asked again until it returns None."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from assay.core.evidence import CaseRun, Report
from assay.core.runner import CaseSpec, Heartbeat, Lease, Receipt, Runner, RunJob, drive


class RecordingLedger:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.request_ids: list[str] = []

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease:
        self.calls.append("claim")
        return Lease(run_id, owner, datetime.now(UTC) + timedelta(seconds=ttl_seconds))

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease:
        self.calls.append("renew")
        return lease

    def report(self, lease: Lease, report: Report) -> Receipt:
        self.calls.append("report")
        duplicate = report.request_id in self.request_ids
        self.request_ids.append(report.request_id)
        return Receipt("duplicate" if duplicate else "accepted", case_runs=0 if duplicate else report.size)

    def release(self, lease: Lease, *, error: str | None = None) -> None:
        self.calls.append(f"release:{error}")


class ReplayRunner(Runner):
    name: ClassVar[str] = "replay"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        runs = [CaseRun(case_id=c.case_id, source_ref=c.source_ref) for c in job.cases]
        yield Report.from_case_runs(f"{job.run_id}:{self.name}:0", runs)


def _job(*refs: str) -> RunJob:
    cases = tuple(CaseSpec(case_id="c1", case_key="k", content={}, source_ref=ref) for ref in refs)
    return RunJob(run_id="r1", team_id="t", suite_key="s", target_kind="config", target={}, cases=cases)


def test_each_round_is_reported_under_the_one_claim_as_new_reports() -> None:
    ledger = RecordingLedger()
    rounds = [_job("replay-0003", "replay-0004"), _job("replay-0005")]
    asked = []

    def more(heartbeat: Heartbeat) -> RunJob | None:
        before = ledger.calls.count("renew")
        heartbeat()  # escalation judges between rounds, renewing the lease as it goes
        asked.append(ledger.calls.count("renew") - before)
        return rounds.pop(0) if rounds else None

    result = drive(ReplayRunner(), ledger, _job("replay-0001", "replay-0002"), owner="me", ttl_seconds=30, more=more)
    assert (result.error, result.reports, result.case_runs, result.duplicates) == (None, 3, 5, 0)
    assert ledger.request_ids == ["r1:replay:0", "r1:replay:0:round-1", "r1:replay:0:round-2"]
    assert ledger.calls[0] == "claim" and ledger.calls[-1] == "release:None" and ledger.calls.count("claim") == 1
    assert asked == [1, 1, 1]  # asked after every round, the last answering None
