"""``drive()`` with a staging ledger: the next report is written while the previous one commits, commits stay
in the runner's order, and a failure stops every later commit (what was written ahead stays unnamed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from assay.core.errors import EvidenceError, RunnerError
from assay.core.evidence import CaseRun, Report
from assay.core.runner import Heartbeat, Lease, Receipt, Runner, RunJob, StagingLedger, drive

JOB = RunJob(run_id="r1", team_id="team-a", suite_key="suite-a", target_kind="config", target={}, cases=())


class StagingFake:
    """A staging ledger that records what it staged and committed, in order."""

    def __init__(self, bad: str | None = None, wait_for_next: bool = False) -> None:
        self.bad, self.wait_for_next = bad, wait_for_next
        self.staged: list[str] = []
        self.committed: list[str] = []
        self.released_with: list[str | None] = []
        self.next_began = threading.Event()
        self.lock = threading.Lock()

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease:
        return Lease(run_id, owner, datetime.now(UTC) + timedelta(seconds=ttl_seconds))

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease:
        return lease

    def report(self, lease: Lease, report: Report) -> Receipt:
        raise AssertionError("a staging ledger's reports are staged, then committed")

    def stage_report(self, lease: Lease, report: Report) -> str:
        name = report.request_id
        if name.endswith(":1"):
            self.next_began.set()
        if self.wait_for_next and name.endswith(":0"):  # only returns if report 1 is staged meanwhile
            assert self.next_began.wait(30), "report 1 was not staged while report 0 was"
        if name == self.bad:
            raise EvidenceError(f"{name}: a row breaks the schema")
        with self.lock:
            self.staged.append(name)
        return name

    def commit_report(self, lease: Lease, staged: str) -> Receipt:
        self.committed.append(staged)
        return Receipt("accepted", case_runs=1)

    def release(self, lease: Lease, *, error: str | None = None) -> None:
        self.released_with.append(error)


class Batches(Runner):
    name: ClassVar[str] = "batches"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})

    def __init__(self, n: int, fail_after: int | None = None) -> None:
        self.n, self.fail_after = n, fail_after

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        for i in range(self.n):
            if i == self.fail_after:
                raise RunnerError("the vendor stopped answering")
            yield Report.from_case_runs(f"{job.run_id}:batches:{i}", [CaseRun(case_id=f"c{i}", status="executed")])


def test_reports_are_staged_ahead_and_committed_in_order() -> None:
    ledger = StagingFake(wait_for_next=True)
    assert isinstance(ledger, StagingLedger)
    result = drive(Batches(6), ledger, JOB, owner="me", ttl_seconds=30)
    assert result.error is None and result.reports == 6 and result.case_runs == 6
    assert ledger.committed == [f"r1:batches:{i}" for i in range(6)]
    assert ledger.released_with == [None]


def test_a_failed_staging_stops_every_later_commit() -> None:
    ledger = StagingFake(bad="r1:batches:2")
    result = drive(Batches(6), ledger, JOB, owner="me", ttl_seconds=30)
    assert result.error == "r1:batches:2: a row breaks the schema"
    assert ledger.committed == ["r1:batches:0", "r1:batches:1"]  # 3 may be written ahead: never committed
    assert set(ledger.staged) - set(ledger.committed) <= {"r1:batches:3"}
    assert ledger.released_with == [result.error]


def test_a_runner_failure_commits_nothing_written_after_it() -> None:
    ledger = StagingFake()
    result = drive(Batches(6, fail_after=3), ledger, JOB, owner="me", ttl_seconds=30)
    assert result.error == "the vendor stopped answering"
    assert ledger.committed == ["r1:batches:0", "r1:batches:1"]
    # report 2 was handed over, not committed: written ahead, or cancelled before its writing began
    assert set(ledger.staged) - set(ledger.committed) <= {"r1:batches:2"}


@pytest.mark.parametrize("n", [0, 1])
def test_short_runs_commit_everything(n: int) -> None:
    ledger = StagingFake()
    result = drive(Batches(n), ledger, JOB, owner="me", ttl_seconds=30)
    assert result.reports == n and ledger.committed == [f"r1:batches:{i}" for i in range(n)]
