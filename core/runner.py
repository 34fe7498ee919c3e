"""The runner contract: claim -> report -> release.

A runner is a class registered by name that declares, as data, what it can do: the mechanisms its
evidence supports, the run targets it accepts, whether it is synchronous, and the conformance tests it
is known to fail (``known_gaps``). It never writes assertion results and never decides whether a test
passed; it produces :class:`~.evidence.Report` batches, and :func:`drive` hands them to a
:class:`Ledger` under a lease.

Synchronous runners implement :meth:`Runner.execute`. Asynchronous runners (a vendor that answers
hours later) implement :meth:`Runner.submit` and :meth:`Runner.collect`: a run is submitted under one
lease and collected under later ones by a scheduled flow.

Runners are plug-ins, found through the ``assay.runners`` entry-point group: see :mod:`.plugins`.
"""

from __future__ import annotations

import logging
from abc import ABC
from collections.abc import Callable, Iterator, Mapping, Sequence
import itertools
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from .errors import (
    AssayError,
    ConfigError,
    DeadlineError,
    LeaseError,
    MalformedResponseError,
    PermanentVendorError,
    RunnerError,
)
from .failpoints import failpoint
from .evidence import Report

log = logging.getLogger(__name__)

TargetKind = Literal["config", "call_set", "exam"]
TARGET_KINDS: tuple[str, ...] = ("config", "call_set", "exam")


@dataclass(frozen=True)
class CaseSpec:
    """One case as a runner sees it: the situation, never a mechanism."""

    case_id: str
    case_key: str
    content: dict[str, Any]
    """The case as snapshotted for this run: ``{"case_key", "title", "content": {"title", "situation"},
    "source_recipe_id"}``."""
    source_ref: str = ""
    """Which replay of the case this is (``replay-0003``) when the run repeats its cases; empty when each
    case runs once. A runner reports its case run under this ``source_ref``."""

    @property
    def situation(self) -> dict[str, Any]:
        """Who calls, what they want, what they must be told, what is true in the world, scripted turns."""
        inner = self.content.get("content")
        situation = (inner if isinstance(inner, dict) else self.content).get("situation")
        return dict(situation) if isinstance(situation, dict) else {}


@dataclass(frozen=True)
class AssertionSpec:
    """One assertion version a run is judged on, as a runner that translates assertions into a vendor's
    own slots sees it (VAPI eval judge plans, Hamming's selected assertions). Most runners ignore these."""

    assertion_id: str
    key: str
    version: int
    mechanism: str
    params: dict[str, Any]
    role: str | None = None
    """The vendor-slot hint: which designated slot of a vendor this assertion goes into."""
    case_id: str | None = None
    """The case it belongs to; None for an assertion on the whole suite."""
    description: str = ""


@dataclass(frozen=True)
class RunJob:
    """Everything a runner needs to execute one run."""

    run_id: str
    team_id: str
    suite_key: str
    target_kind: str
    target: dict[str, Any]
    """The run target: ``{"config": {...}}`` (a compiled assistant config) or
    ``{"call_set": {"path": ..., "sha256": ...}}`` (a file of recorded calls) or
    ``{"exam": {"repo": ..., "dir": ..., "harness": ..., "sha256": ...}}`` (a coding-agent exam)."""
    cases: tuple[CaseSpec, ...]
    deadline_at: datetime | None = None
    assertions: tuple[AssertionSpec, ...] = ()
    """The latest version of every assertion of the suite and its cases when the job was read."""

    def case_by_key(self) -> dict[str, CaseSpec]:
        return {c.case_key: c for c in self.cases}

    @property
    def waits_until(self) -> datetime | None:
        """When a runner stops waiting for its vendor: the deadline less :data:`REPORT_RESERVE`, the time kept
        to store what arrived (a report after the deadline is refused). None without a deadline."""
        if self.deadline_at is None:
            return None
        deadline = self.deadline_at if self.deadline_at.tzinfo else self.deadline_at.replace(tzinfo=UTC)
        return deadline - REPORT_RESERVE


REPORT_RESERVE = timedelta(seconds=5)
"""Kept before a run's deadline to store the evidence gathered: waits for a vendor end this early."""


@dataclass(frozen=True)
class Lease:
    """Proof of holding a run: only the holder may report, renew or release."""

    run_id: str
    owner: str
    expires_at: datetime


ReceiptStatus = Literal["accepted", "duplicate", "rejected"]


@dataclass(frozen=True)
class Receipt:
    """What became of a report."""

    status: ReceiptStatus
    case_runs: int = 0
    evaluations: int = 0
    reason: str | None = None


class Ledger(Protocol):
    """The run ledger a runner reports into (implemented by the catalog in ``storage``)."""

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease: ...

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease: ...

    def report(self, lease: Lease, report: Report) -> Receipt: ...

    def release(self, lease: Lease, *, error: str | None = None) -> None: ...


@runtime_checkable
class StagingLedger(Ledger, Protocol):
    """A ledger whose :meth:`report` is two steps: writing the evidence (invisible to every reader, safe to
    run in several threads at once) and the short commit that makes it visible. :func:`drive` writes the
    next report while the previous one commits; commits stay in the runner's order."""

    def stage_report(self, lease: Lease, report: Report) -> Any: ...

    def commit_report(self, lease: Lease, staged: Any) -> Receipt: ...


@dataclass(frozen=True)
class ScratchObject:
    """A vendor object a runner created for one run (a scratch assistant, an agent), to be deleted at release."""

    scratch_id: str
    run_id: str
    runner: str
    kind: str
    """The vendor's kind of object (``assistant``, ``agent``), for the runner's own teardown."""
    name: str
    """Unique, chosen before creation: a crash between asking the vendor and recording its id still
    leaves this name to find the object by."""
    vendor_id: str | None = None
    """The vendor's id, once it answered."""


class ScratchBook(Protocol):
    """Where a run's scratch objects are recorded (the catalog, in ``storage``): before creation, after, at deletion."""

    def intend(self, run_id: str, runner: str, kind: str, name: str) -> ScratchObject: ...

    def created(self, obj: ScratchObject, vendor_id: str) -> ScratchObject: ...

    def deleted(self, obj: ScratchObject) -> None: ...

    def failed(self, obj: ScratchObject, error: str) -> None: ...

    def outstanding(self, run_id: str | None = None) -> list[ScratchObject]: ...


class RunContext:
    """What a runner holds while it works. Call it to renew the lease (it is the heartbeat);
    :meth:`provision` creates a vendor object so that it is always torn down, even after a crash."""

    def __init__(self, renew: Callable[[], None], *, run_id: str = "", runner: str = "",
                 scratch: ScratchBook | None = None):
        self._renew, self.run_id, self.runner, self.scratch = renew, run_id, runner, scratch

    def __call__(self) -> None:
        self._renew()

    def provision(self, kind: str, create: Callable[[str], str], *, label: str = "") -> ScratchObject:
        """Record a scratch object's name, then ``create(name)`` it at the vendor (returning its id), then
        record the id. A creation the vendor refused outright (a 4xx, a refused key) made nothing: its row is
        closed at once, so neither release nor ``assay reap`` goes looking for it. Raises if there is no scratch book (a runner that provisions needs a ledger that keeps one)."""
        if self.scratch is None:
            raise RunnerError(f"runner {self.runner!r} creates vendor objects, but this ledger keeps no scratch book")
        name = f"assay-{self.run_id}-{kind}-{label or new_suffix()}"[:200]
        obj = self.scratch.intend(self.run_id, self.runner, kind, name)
        failpoint("scratch.intended")
        try:
            vendor_id = create(name)
        except (ConfigError, PermanentVendorError) as exc:
            if not isinstance(exc, MalformedResponseError):  # refused outright: the vendor holds nothing to delete
                self.scratch.deleted(obj)
            raise
        failpoint("scratch.created")
        return self.scratch.created(obj, vendor_id)


def new_suffix() -> str:
    import secrets

    return secrets.token_hex(4)


Heartbeat = Callable[[], None]
"""Called by a runner while it works; renews the lease. (A :class:`RunContext` is one.)"""


class Runner(ABC):
    """Base of every runner. Subclasses set the class attributes and implement execute (or submit/collect)."""

    name: ClassVar[str]
    """The registry name (``config_check``, ``recorded``, ``vapi_chat``, ...)."""
    mechanisms: ClassVar[frozenset[str]]
    """Mechanisms whose evidence this runner's reports carry."""
    synchronous: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]]
    """Run targets this runner can execute (``config``, ``call_set``, ``exam``)."""
    repeats: ClassVar[bool] = True
    """Whether the runner can replay a case several times in one run (``assay run --repeat``): each replay is a
    case run reported under the case's ``source_ref``. A recording cannot be replayed afresh, nor can a vendor
    run whose results are keyed by case alone."""
    known_gaps: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Conformance-kit tests this runner is known to fail: test name -> why. The kit runs each as a
    strict expected failure with that reason, so fixing the gap shows up as a failure to update this."""

    batch_size: int = 10_000
    """Case runs per report: large enough to write few files, small enough to renew often."""

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        """Synchronous runners: execute the job, yielding report batches."""
        raise NotImplementedError(f"runner {self.name!r} is asynchronous: use submit/collect")

    def submit(self, job: RunJob) -> str:
        """Asynchronous runners: start the job remotely; return the provider's reference."""
        raise NotImplementedError(f"runner {self.name!r} is synchronous: use execute")

    def collect(self, job: RunJob, provider_ref: str) -> Iterator[Report] | None:
        """Asynchronous runners: reports if the provider has finished, None if not yet."""
        raise NotImplementedError(f"runner {self.name!r} is synchronous: use execute")

    def close(self) -> None:
        """Release what the runner holds open between calls (an HTTP client). Runners that hold nothing keep this."""

    def vendor_mappings(self, job: RunJob, provider_ref: str) -> Mapping[str, tuple[str, str | None]]:
        """Asynchronous runners that send our assertions into a vendor's own slots: our assertion id ->
        (the vendor's id, its name at submission), kept in the catalog so a renamed vendor assertion is
        detected at collection instead of silently mis-joined. Most runners send none."""
        return {}

    def teardown(self, objects: Sequence[ScratchObject]) -> dict[str, str | None]:
        """Delete these scratch objects at the vendor (found by ``vendor_id``, else by ``name``).

        Returns scratch id -> None when deleted (or already gone), or the error that stopped it. Called
        at release, and by the reaper for runs whose process died. Runners that create nothing keep this.
        """
        return {o.scratch_id: f"runner {self.name!r} cannot delete {o.kind} objects" for o in objects}

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        """A small valid run target (kind, target) for these cases, written under ``workdir``.

        The conformance kit runs every registered runner against its own example target.
        """
        raise NotImplementedError(f"runner {cls.name!r} provides no example target for the conformance kit")


@dataclass
class DriveResult:
    """What a drive did, for the caller to print or log."""

    run_id: str
    reports: int = 0
    case_runs: int = 0
    evaluations: int = 0
    duplicates: int = 0
    error: str | None = None


def drive(
    runner: Runner,
    ledger: Ledger,
    job: RunJob,
    *,
    owner: str,
    ttl_seconds: float,
    on_report: Callable[[Receipt], None] | None = None,
    more: Callable[[Heartbeat], RunJob | None] | None = None,
) -> DriveResult:
    """Claim the run, execute it, report every batch, tear down its scratch objects, release.
    The one life cycle every sync runner follows.

    ``more`` (escalation) is asked, under the same lease, after each execution: it returns a further job of
    the same run (more replays of the cases the evidence has not decided yet) or None when there is nothing
    more to run. It gets the heartbeat, to renew the lease while it works (it judges what arrived). Every
    round's reports land in the one run before it is released.

    A runner failure that is ours to name (an :class:`AssayError`) releases the run with that error; any
    other exception releases it with the error too and is re-raised, so nothing hangs on a lease. A
    failure to release (another owner took the lease meanwhile) is logged and never hides the runner's
    own error.

    The lease is renewed from a thread of its own (:class:`~.leases.LeaseKeeper`) while the runner waits,
    so a vendor answering later than a lease lasts is still stored. When the run's deadline comes (a
    :class:`DeadlineError` from a wait it cut short, or a lease that cannot be renewed past it), the run
    ends ``timed_out``, keeping what was reported, and the result's error says so in the user's terms.
    """
    if not runner.synchronous:
        raise TypeError(f"runner {runner.name!r} is asynchronous; drive() runs synchronous runners")
    from .leases import LeaseKeeper

    result = DriveResult(run_id=job.run_id)
    lease = ledger.claim(job.run_id, owner, ttl_seconds)
    scratch: ScratchBook | None = getattr(ledger, "scratch", None)
    try:
        # The keeper renews the lease from its own thread while the runner waits for a vendor: a request that
        # outlasts the lease still lands. Each heartbeat also renews at once, and meets a lost lease.
        with LeaseKeeper(ledger, ttl_seconds) as keeper:
            keeper.hold(lease)

            def heartbeat() -> None:
                keeper.renew(job.run_id)

            context = RunContext(heartbeat, run_id=job.run_id, runner=runner.name, scratch=scratch)
            todo: RunJob | None = job
            for round_no in itertools.count():
                if todo is None:
                    break
                reports = runner.execute(todo, context)
                if round_no:  # a runner names its reports by run and batch: each round's are new reports
                    reports = (replace(r, request_id=f"{r.request_id}:round-{round_no}") for r in reports)
                for receipt in _reported(ledger, reports, lambda: keeper.lease(job.run_id), heartbeat):
                    result.reports += 1
                    result.case_runs += receipt.case_runs
                    result.evaluations += receipt.evaluations
                    result.duplicates += receipt.status == "duplicate"
                    if on_report:
                        on_report(receipt)
                heartbeat()
                todo = more(context) if more is not None else None
    except AssayError as exc:
        timed_out = _timed_out(ledger, job, exc)
        result.error = timed_out or str(exc)
        log.error("run %s: runner %s failed: %s", job.run_id, runner.name, result.error)
        _finish(runner, ledger, lease, scratch, error=None if timed_out else result.error, timed_out=bool(timed_out))
        return result
    except BaseException as exc:
        _finish(runner, ledger, lease, scratch, error=f"{type(exc).__name__}: {exc}")
        raise
    _finish(runner, ledger, lease, scratch, error=None)
    return result


def _timed_out(ledger: Ledger, job: RunJob, exc: AssayError) -> str | None:
    """Why the run timed out, when ``exc`` is its deadline coming (a wait cut short, a lease that could not be
    renewed past it) and the ledger can end a run ``timed_out``; else None."""
    if job.deadline_at is None or not isinstance(exc, DeadlineError | LeaseError):
        return None
    if not hasattr(ledger, "time_out"):
        return None
    if isinstance(exc, DeadlineError):
        return str(exc)
    deadline = job.deadline_at if job.deadline_at.tzinfo else job.deadline_at.replace(tzinfo=UTC)
    clock = getattr(ledger, "clock", None)
    if clock is None or clock() < deadline:  # lost to another holder, not to the deadline
        return None
    return f"timed out: the run's deadline passed at {deadline:%Y-%m-%d %H:%M:%S} UTC"


STAGED_AHEAD = 2
"""How many reports a staging ledger writes at once: this one and the next."""


def _reported(ledger: Ledger, reports: Iterator[Report], lease: Callable[[], Lease],
              heartbeat: Callable[[], None]) -> Iterator[Receipt]:
    """Each report's receipt, in the runner's order; the lease renewed before each report is handed over.

    A :class:`StagingLedger` writes report k+1's files in a second thread while report k commits and the
    runner produces the next: writing Parquet, redacting and validating mostly release the GIL, so on
    two cores a large run's reports land up to twice as fast. Commits stay in order, and a failure (of
    the runner, a write or a commit) stops every later commit: files written ahead and never committed
    are named by no manifest row, so nobody reads them and vacuum removes them, as after a crash.

    A runner that stops at the run's deadline (:class:`DeadlineError`) has handed over what it gathered
    before it: every report is committed, then the error is raised.
    """
    stopped: list[DeadlineError] = []

    def until_deadline() -> Iterator[Report]:
        try:
            yield from reports
        except DeadlineError as exc:
            stopped.append(exc)

    yield from _committed(ledger, until_deadline(), lease, heartbeat)
    if stopped:
        raise stopped[0]


def _committed(ledger: Ledger, reports: Iterator[Report], lease: Callable[[], Lease],
               heartbeat: Callable[[], None]) -> Iterator[Receipt]:
    if not isinstance(ledger, StagingLedger):
        for report in reports:
            heartbeat()
            yield ledger.report(lease(), report)
        return
    pending: deque[Future[Any]] = deque()
    with ThreadPoolExecutor(max_workers=STAGED_AHEAD, thread_name_prefix="assay-report") as pool:
        try:
            for report in reports:
                heartbeat()
                pending.append(pool.submit(ledger.stage_report, lease(), report))
                while len(pending) >= STAGED_AHEAD:
                    yield ledger.commit_report(lease(), pending.popleft().result())
            while pending:
                heartbeat()
                yield ledger.commit_report(lease(), pending.popleft().result())
        finally:
            for staging in pending:  # not started: never will be; started: finishes, then is left unnamed
                staging.cancel()


def teardown_scratch(runner: Runner, scratch: ScratchBook, objects: Sequence[ScratchObject]) -> dict[str, str | None]:
    """Ask the runner to delete ``objects`` and record what became of each. Never raises for a vendor's refusal."""
    if not objects:
        return {}
    try:
        outcome = runner.teardown(objects)
    except Exception as exc:  # a teardown bug must not hide the run's own outcome; the reaper retries
        outcome = {o.scratch_id: f"{type(exc).__name__}: {exc}" for o in objects}
    for obj in objects:
        error = outcome.get(obj.scratch_id, "the runner did not say whether it was deleted")
        if error is None:
            scratch.deleted(obj)
        else:
            log.warning("run %s: scratch %s %s not deleted: %s", obj.run_id, obj.kind, obj.name, error)
            scratch.failed(obj, error)
    return outcome


def _finish(runner: Runner, ledger: Ledger, lease: Lease, scratch: ScratchBook | None, *, error: str | None,
            timed_out: bool = False) -> None:
    """Tear down the run's scratch objects, then release (or, its deadline come, end it ``timed_out``); a lost
    lease is logged, never raised over a runner error."""
    if scratch is not None:
        teardown_scratch(runner, scratch, scratch.outstanding(lease.run_id))
    if timed_out:
        if not ledger.time_out(lease.run_id, owner=lease.owner):  # type: ignore[attr-defined]
            log.warning("run %s: not timed out by its holder: another process ended it first", lease.run_id)
        return
    try:
        ledger.release(lease, error=error)
    except LeaseError as exc:
        if error is None:
            raise
        log.error("run %s: could not release after the runner failed (%s): %s", lease.run_id, error, exc)


__all__ = [
    "TARGET_KINDS", "AssertionSpec", "CaseSpec", "DriveResult", "Heartbeat", "Lease", "Ledger", "Receipt", "ReceiptStatus", "RunContext",
    "RunJob", "Runner", "ScratchBook", "ScratchObject", "StagingLedger", "TargetKind", "drive", "teardown_scratch",
]
