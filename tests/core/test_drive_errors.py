"""``drive()`` never hides the first error: when the runner fails and the release then fails too (another
owner took the lease meanwhile), the runner's own error is what the caller gets."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from assay.core.errors import ConfigError, LeaseError
from assay.core.evidence import Report
from assay.core.runner import Heartbeat, Lease, Receipt, Runner, RunJob, drive


class LostLeaseLedger:
    """A ledger whose lease is taken by someone else while the runner works: release refuses."""

    def __init__(self) -> None:
        self.released_with: list[str | None] = []

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease:
        return Lease(run_id, owner, datetime.now(UTC) + timedelta(seconds=ttl_seconds))

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease:
        return lease

    def report(self, lease: Lease, report: Report) -> Receipt:
        return Receipt("accepted")

    def release(self, lease: Lease, *, error: str | None = None) -> None:
        self.released_with.append(error)
        raise LeaseError(lease.run_id, lease.owner, "held by 'other' until later")


class FailingRunner(Runner):
    name: ClassVar[str] = "failing"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        if self.error is not None:
            raise self.error
        yield from ()  # a generator, like every runner's execute


JOB = RunJob(run_id="r1", team_id="team-a", suite_key="suite-a", target_kind="config", target={}, cases=())


def test_a_runner_error_survives_a_lost_lease(caplog: pytest.LogCaptureFixture) -> None:
    ledger = LostLeaseLedger()
    with caplog.at_level(logging.ERROR):
        result = drive(FailingRunner(ConfigError("vendor said 500")), ledger, JOB, owner="me", ttl_seconds=30)
    assert result.error == "vendor said 500"
    assert ledger.released_with == ["vendor said 500"]
    assert "could not release after the runner failed" in caplog.text and "held by 'other'" in caplog.text


def test_an_unexpected_runner_exception_is_raised_not_the_release_error() -> None:
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        drive(FailingRunner(ZeroDivisionError("division by zero")), LostLeaseLedger(), JOB, owner="me", ttl_seconds=30)


def test_a_lost_lease_after_a_clean_run_is_raised() -> None:
    with pytest.raises(LeaseError, match="held by 'other'"):
        drive(FailingRunner(None), LostLeaseLedger(), JOB, owner="me", ttl_seconds=30)
