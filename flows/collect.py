"""Asynchronous runs: submitting them, and the ``collect`` pass that polls, reports, judges and finalises.

A vendor such as Hamming answers hours later, or never. :func:`submit_run` claims the run, asks the
runner to submit it and hands the lease back with the provider's reference: the run then waits at the
vendor with no lease (see :mod:`assay.storage.catalog.ledger`), ended only by its deadline or by a
collect that finds it finished.

:func:`collect_outstanding` is one pass over every outstanding run, ``concurrency`` at a time (so at
most that many vendor requests are in flight):

- a run past its deadline is resolved ``timed_out``, then polled one last time: results the vendor
  has by then are late, and are reported anyway so that the ledger drops them loudly (kept in
  ``rejected_reports``, logged, counted here);
- any other run is claimed, polled, and while this worker holds it a
  :class:`~assay.core.leases.LeaseKeeper` renews its lease; unfinished, it is handed back; finished, its reports are stored and it is released;
- a transient vendor failure hands the run back for the next pass, and so does a failure that is ours
  to fix (a missing setting); a vendor's permanent refusal (an unknown run, a malformed answer)
  releases it with that error, final;
- at the end, every run released this pass (or left released by an earlier, interrupted one) is judged
  in one judging pass and finalised with its verdicts.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.core.errors import AssayError, DeadlineError, LeaseError, RunFinalisedError, VendorError
from assay.core.leases import LeaseKeeper
from assay.core.plugins import runner_class
from assay.core.runner import DriveResult, Lease, Runner, RunJob
from assay.storage.catalog.runs import RunRow, job_for_run, outstanding_runs, record_vendor_mappings

from .workspace import Workspace

log = logging.getLogger(__name__)


def submit_run(ws: Workspace, job: RunJob, runner: Runner, *, owner: str) -> DriveResult:
    """Claim the run, submit it to the runner's vendor, keep the reference and give the lease back.
    A submission the vendor refuses releases the run with that error (final). The runner stays open."""
    result = DriveResult(run_id=job.run_id)
    ledger = ws.ledger
    lease = ledger.claim(job.run_id, owner, ws.settings.lease_seconds)
    try:
        with LeaseKeeper(ledger, ws.settings.lease_seconds) as keeper:  # a vendor may ask us to wait
            keeper.hold(lease)
            ref = runner.submit(job)
    except AssayError as exc:
        result.error = str(exc)
        log.error("run %s: runner %s could not submit: %s", job.run_id, runner.name, exc)
        ledger.release(lease, error=result.error)
        return result
    except BaseException as exc:
        ledger.release(lease, error=f"{type(exc).__name__}: {exc}")
        raise
    mappings = runner.vendor_mappings(job, ref)
    if mappings:
        record_vendor_mappings(ws.engine, job.run_id, runner.name, mappings)
    ledger.submitted(lease, ref, provider=runner.name)
    return result


@dataclass
class CollectResult:
    """What one collect pass did, by run."""

    outstanding: int = 0
    waiting: list[str] = field(default_factory=list)
    """Polled; the vendor is still working."""
    collected: list[str] = field(default_factory=list)
    """The vendor had finished: results stored, run released."""
    finalised: list[str] = field(default_factory=list)
    """Judged and finalised with their verdicts this pass."""
    timed_out: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Released with an error (final): the vendor refused for good."""
    retry: dict[str, str] = field(default_factory=dict)
    """A transient failure or a busy lease: left for the next pass."""
    late_reports: int = 0
    """Reports that came after their run was final: dropped, kept in rejected_reports."""
    late_runs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lease_renewals: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: sorted(v) if isinstance(v, list) and k != "warnings" else v for k, v in asdict(self).items()}


def collect_outstanding(ws: Workspace, concurrency: int | None = None, *,
                        runners: Mapping[str, Runner] | None = None) -> CollectResult:
    """One collect pass over every outstanding asynchronous run (see the module's docstring)."""
    from .operations import owner_name

    concurrency = concurrency or ws.settings.collect_concurrency
    result = CollectResult()
    open_runs = outstanding_runs(ws.engine, ws.ledger.clock())
    result.outstanding = len(open_runs)
    pool_of = dict(runners or {})
    made = {name: runner_class(name)() for name in sorted({r.runner for r in open_runs} - set(pool_of))}
    pool_of |= made
    owner = f"{owner_name()}:collect:{secrets.token_hex(3)}"
    finished = [r.run_id for r in open_runs if r.status == "released"]
    polled = [r for r in open_runs if r.status != "released"]
    lock = threading.Lock()
    with LeaseKeeper(ws.ledger, ws.settings.lease_seconds) as keeper:

        def work(run: RunRow) -> None:
            outcome = _collect_one(ws, pool_of[run.runner], run, owner, keeper)
            with lock:
                _tally(result, run.run_id, outcome)

        try:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="assay-collect") as pool:
                list(pool.map(work, polled))
        finally:
            for runner in made.values():
                runner.close()
        result.lease_renewals = keeper.renewals
    _finish(ws, [*finished, *result.collected], result)
    return result


Outcome = tuple[str, Any]


def _collect_one(ws: Workspace, runner: Runner, run: RunRow, owner: str, keeper: LeaseKeeper) -> Outcome:
    ledger = ws.ledger
    job = job_for_run(ws.engine, run.run_id)
    if run.deadline_at is not None and run.deadline_at <= ledger.clock():
        return _past_deadline(ws, runner, run, job, owner)
    try:
        lease = ledger.claim(run.run_id, owner, ws.settings.lease_seconds)
    except LeaseError as exc:
        return "retry", f"not claimed: {exc.reason}"
    keeper.hold(lease)
    try:
        reports = runner.collect(job, str(run.provider_ref))
        if reports is None:
            keeper.drop(run.run_id)
            ledger.hand_back(lease)
            return "waiting", None
        warnings, late = [], 0
        for report in reports:
            warnings += report.meta.get("warnings", [])
            late += ledger.report(lease, report).status == "rejected"
        keeper.drop(run.run_id)
        if late:  # the run became final while we worked (its deadline passed): dropped, kept, counted
            return "late", (late, warnings)
        ledger.release(lease)
        return "collected", warnings
    except LeaseError as exc:  # our lease lapsed and another collector has the run: it carries on
        keeper.drop(run.run_id)
        return "retry", f"lost the lease: {exc.reason}"
    except VendorError as exc:
        keeper.drop(run.run_id)
        if exc.transient:
            _give_back(ledger, lease, f"will retry: {exc}")
            return "retry", str(exc)
        log.error("run %s: collecting from %s failed for good: %s", run.run_id, runner.name, exc)
        _release_with_error(ledger, lease, str(exc))
        return "failed", str(exc)
    except DeadlineError as exc:  # the run's deadline is upon it: the next pass times it out and takes a last look
        keeper.drop(run.run_id)
        _give_back(ledger, lease, str(exc))
        return "retry", str(exc)
    except AssayError as exc:  # ours to fix (a setting, a reference this build cannot read): the vendor goes on
        keeper.drop(run.run_id)
        log.error("run %s: cannot collect from %s: %s", run.run_id, runner.name, exc)
        _give_back(ledger, lease, f"cannot collect: {exc}")
        return "retry", str(exc)
    except Exception as exc:  # a runner bug: give the run back for the next pass, keep the pass going
        log.exception("run %s: runner %s failed while collecting", run.run_id, runner.name)
        keeper.drop(run.run_id)
        _give_back(ledger, lease, f"{type(exc).__name__}: {exc}")
        return "retry", f"{type(exc).__name__}: {exc}"


def _past_deadline(ws: Workspace, runner: Runner, run: RunRow, job: RunJob, owner: str) -> Outcome:
    """Time the run out, then take one last look: results the vendor has now are late, and dropped loudly."""
    ledger = ws.ledger
    timed_out = ledger.time_out(run.run_id)
    late = 0
    try:
        reports = runner.collect(job, str(run.provider_ref))
    except AssayError as exc:
        log.warning("run %s: last look after the deadline failed: %s", run.run_id, exc)
        reports = None
    stale = Lease(run.run_id, owner, ledger.clock())
    for report in reports or ():
        try:
            late += ledger.report(stale, report).status == "rejected"
        except LeaseError as exc:  # not final after all (someone else resolved it differently)
            log.warning("run %s: late report refused: %s", run.run_id, exc)
    return "timed_out", (timed_out, late)


def _give_back(ledger: Any, lease: Lease, reason: str) -> None:
    try:
        ledger.hand_back(lease, reason)
    except LeaseError as exc:  # lost meanwhile; the next pass sees what became of it
        log.warning("run %s: could not hand the run back: %s", lease.run_id, exc)


def _release_with_error(ledger: Any, lease: Lease, error: str) -> None:
    try:
        ledger.release(lease, error=error)
    except LeaseError as exc:
        log.warning("run %s: could not release with the error (%s): %s", lease.run_id, error, exc)


def _tally(result: CollectResult, run_id: str, outcome: Outcome) -> None:
    kind, detail = outcome
    if kind == "waiting":
        result.waiting.append(run_id)
    elif kind == "collected":
        result.collected.append(run_id)
        result.warnings += detail
    elif kind == "late":
        late, warnings = detail
        result.late_reports += late
        result.late_runs.append(run_id)
        result.warnings += warnings
    elif kind == "timed_out":
        timed_out, late = detail
        if timed_out:
            result.timed_out.append(run_id)
        if late:
            result.late_reports += late
            result.late_runs.append(run_id)
    elif kind == "failed":
        result.failed[run_id] = detail
    else:
        result.retry[run_id] = detail


def _finish(ws: Workspace, run_ids: list[str], result: CollectResult) -> None:
    """Judge the released runs in one pass, then finalise each with its verdicts."""
    if not run_ids:
        return
    from .judging import judge_runs, verdicts_for
    from .operations import finalise_run

    judge_runs(ws, run_ids, trigger="run")  # the run's first judging, as for a synchronous run
    by_run: dict[str, list[dict[str, Any]]] = {r: [] for r in run_ids}
    for verdict in verdicts_for(ws, run_ids):
        by_run[verdict["run_id"]].append(verdict)
    for run_id, verdicts in by_run.items():
        try:
            finalise_run(ws, run_id, verdicts)
        except RunFinalisedError as exc:  # resolved meanwhile (a deadline): nothing to stamp
            log.warning("run %s: not finalised by collect: %s", run_id, exc)
            continue
        result.finalised.append(run_id)


__all__ = ["CollectResult", "LeaseKeeper", "collect_outstanding", "submit_run"]
