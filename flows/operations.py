"""The plain functions behind the flows and commands: testable without Prefect."""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from assay.core.errors import ConfigError, HistoryError, LeaseError, RunFinalisedError
from assay.core.failpoints import failpoint
from assay.core.plugins import runner_class
from assay.core.runner import DriveResult, Receipt, drive
from assay.core.suite_runners import runners_to_start, scheduled_runners
from assay.storage.catalog.load import load_bundle
from assay.storage.catalog.runs import (HISTORY_TAG, RunRow, create_run, find_suite, get_run, job_for_run,
                                        suite_mechanisms)

from .workspace import Workspace

log = logging.getLogger(__name__)

ASYNC_DEADLINE = timedelta(hours=24)
"""The deadline of an asynchronous runner's run when none is given: `assay collect` stops waiting then."""


def owner_name() -> str:
    """This process's lease-owner name: host and pid, so a stuck lease names its holder."""
    return f"{socket.gethostname()}:{os.getpid()}"


def load(ws: Workspace, path: str) -> dict[str, Any]:
    """Load a bundle into the catalog (all or nothing)."""
    return load_bundle(ws.engine, path).to_dict()


def _runnable(conn: Any, suite: str) -> Any:
    """The suite's catalog row; imported history is refused: it has nothing to run."""
    found = find_suite(conn, suite)
    if HISTORY_TAG in found.tags:
        raise HistoryError(
            f"suite {found.team_id}/{found.suite_key} is imported legacy history: its runs arrived final and it has "
            "nothing to run; run a suite of your own (`assay ls suites`)")
    return found


def runners_for(ws: Workspace, suite: str, runner: str | None = None, *, scheduled: bool = False) -> list[str]:
    """The runners a run of ``suite`` starts on, one run each: ``runner`` alone when named; else the suite's
    declared runners; else its target's default runner, which ``scheduled`` work (the nightly sweep, a
    deployment) takes only when it evaluates every mechanism of the suite's assertions
    (:mod:`assay.core.suite_runners`)."""
    with ws.engine.connect() as conn:
        found = _runnable(conn, suite)
        if scheduled and runner is None:
            mechanisms = suite_mechanisms(conn, found.suite_id)
            return scheduled_runners(suite, found.runners, found.target_kind, mechanisms)
    return runners_to_start(suite, found.runners, found.target_kind, runner)


def start_run(
    ws: Workspace, suite: str, runner: str | None = None, deadline: timedelta | None = None,
    request_id: str | None = None, repeat: int | None = None, budget: int | None = None,
) -> RunRow:
    """Create the run: resolve the suite and its criteria, snapshot the cases, stamp criteria versions.

    With ``request_id`` a repeat (a retried task) returns the run the first call created. ``repeat`` and
    ``budget`` override the suite's repeat plan (replays per case; the most escalation may reach).
    """
    name, deadline = check_run(ws, suite, runner, deadline, repeat, budget)
    return create_run(ws.engine, suite, name, deadline=deadline, request_id=request_id, repeat=repeat, budget=budget)


def check_run(
    ws: Workspace, suite: str, runner: str | None = None, deadline: timedelta | None = None,
    repeat: int | None = None, budget: int | None = None,
) -> tuple[str, timedelta | None]:
    """The runner a run of ``suite`` would play on and its deadline, or the error that would stop the run
    before it exists (an unknown suite or runner, a runner that cannot take the suite, a repeat it cannot
    replay). The command line asks before it starts a flow run, so a mistyped command starts none."""
    with ws.engine.connect() as conn:
        found = _runnable(conn, suite)
    target_kind = found.target_kind
    names = runners_to_start(suite, found.runners, target_kind, runner)
    if len(names) > 1:
        raise ConfigError(
            f"suite {suite!r} declares runners {', '.join(names)}, and a run plays one: name it (`--runner`); `assay "
            "run` without --runner, the run-suite flow without its `runner` parameter and the nightly sweep run each")
    cls = runner_class(names[0])
    if target_kind not in cls.target_kinds:
        raise ConfigError(
            f"runner {cls.name!r} cannot execute suite {suite!r}: its target is a {target_kind!r} and the runner "
            f"accepts {', '.join(sorted(cls.target_kinds))}; choose another --runner"
        )
    if not cls.synchronous and deadline is None:  # a vendor that never answers must not be waited for for ever
        deadline = ASYNC_DEADLINE
    if found.target.get("tool_mocks") and getattr(cls, "tool_mocks", None) == "refused":
        raise ConfigError(f"suite {suite!r} answers its agent's tools from tool_mocks, and runner {cls.name!r} cannot "
                          "serve them (its agent's tools would answer for themselves); run it with --runner vapi_chat")
    plan = dict(found.repeat or {})
    replays, most = repeat or plan.get("count", 1), budget or plan.get("budget")
    if replays > 1 and not cls.repeats:
        raise ConfigError(f"runner {cls.name!r} cannot replay a case (a recording, or a vendor run keyed by case, "
                          f"happens once): run suite {suite!r} without --repeat, or choose another --runner")
    if most is not None and most > replays and not cls.synchronous:
        raise ConfigError(f"runner {cls.name!r} answers later: escalation needs a runner that answers within the "
                          "run; drop --budget, or choose another --runner")
    return cls.name, deadline


def execute_run(
    ws: Workspace,
    run_id: str,
    runner_options: dict[str, Any] | None = None,
    on_report: Callable[[Receipt], None] | None = None,
) -> DriveResult:
    """Claim the run, drive its runner through every report, release it. An asynchronous runner's run
    is submitted instead, and waits at the vendor for `assay collect` (:mod:`.collect`).

    A run whose deadline passed before it could be claimed (a slow start, a queue) ends ``timed_out`` here
    and the result's error says so, as for a deadline met while the runner worked: the lease refusal is the
    deadline's, not a lost lease's, and a command must not end ``error`` for it."""
    run = get_run(ws.engine, run_id)
    runner = runner_class(run.runner)(**(runner_options or {}))
    job = job_for_run(ws.engine, run_id)
    try:
        if not runner.synchronous:
            from .collect import submit_run

            try:
                return submit_run(ws, job, runner, owner=owner_name())
            finally:
                runner.close()
        from .escalation import escalation

        return drive(runner, ws.ledger, job, owner=owner_name(), ttl_seconds=ws.settings.lease_seconds,
                     on_report=on_report, more=escalation(ws, run, job))
    except LeaseError as exc:
        if not _timed_out(ws, run_id):
            raise
        log.error("run %s: timed out before it could be driven: %s", run_id, exc.reason)
        return DriveResult(run_id=run_id, error=f"timed out: {exc.reason}")


def _timed_out(ws: Workspace, run_id: str) -> bool:
    """Whether the run is (now) ``timed_out``: its deadline passed and this call or another process ended it."""
    return ws.ledger.time_out(run_id) or get_run(ws.engine, run_id).status == "timed_out"


def judge_run(
    ws: Workspace, run_id: str, trigger: str = "run", *, force: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Judge the run's evidence (a new outcome per case run), then read each consumer's verdict."""
    from .judging import judge_runs, verdicts_for

    judged = judge_runs(ws, [run_id], trigger=trigger, force=force, progress=progress)
    return {"judged": judged, "verdicts": verdicts_for(ws, [run_id])}


def finalise_run(ws: Workspace, run_id: str, verdicts: list[dict[str, Any]], *, reason: str | None = None) -> RunRow:
    """Freeze a released run as completed, stamping each consumer's verdict (once, for good).

    A run released with an error is already final: its evidence stays for a later `assay judge`. So
    is one the reaper finalised meanwhile (its process looked dead): the first finalisation stands.
    """
    if get_run(ws.engine, run_id).finalised_at is None:
        try:
            ws.ledger.finalise(
                run_id, status="completed", verdicts={v["consumer"]: (v["verdict"], v["reason"]) for v in verdicts},
                reason=reason,
            )
        except RunFinalisedError:
            pass
    return get_run(ws.engine, run_id)


def finish_run(ws: Workspace, run_id: str, *, reason: str | None = None) -> RunRow:
    """Judge a released run, then finalise it with its verdicts (what the run-suite flow does); ``reason``,
    when given, becomes the run's status reason."""
    run = get_run(ws.engine, run_id)
    if run.finalised_at is not None:
        return run
    verdicts = judge_run(ws, run_id)["verdicts"]
    failpoint("finalise.judged")
    return finalise_run(ws, run_id, verdicts, reason=reason)


def run_to_final(ws: Workspace, suite: str, runner: str | None = None) -> RunRow:
    """The run-suite flow's steps as plain calls, in this process: create, execute, judge, finalise."""
    run = start_run(ws, suite, runner)
    execute_run(ws, run.run_id)
    return finish_run(ws, run.run_id)


def reap(ws: Workspace) -> dict[str, list[str]]:
    """Bring every abandoned run to a final state, then tear down the vendor objects that runs nobody
    works on any more left behind (a process killed before its release could).

    Expired leases, passed deadlines and runs never started end ``timed_out``; runs released but never
    finalised (killed while judging) are judged and finalised (``finalised_released``), unless a transient
    failure stops that: they are then left released for the next reap (``finalisation_deferred``,
    :func:`finalise_released`).
    """
    timed_out = ws.ledger.reap(ws.settings.pending_timeout_seconds)
    return {**timed_out, **finalise_released(ws), **sweep_scratch(ws)}


DEFERRED = "finalisation deferred"
"""How the status reason of a released run the reaper could not finalise for a transient cause begins."""


def finalise_released(ws: Workspace) -> dict[str, list[str]]:
    """Judge and finalise each run released but never finalised, idle for a lease's length: the runs
    finalised (``finalised_released``) and those left for the next reap (``finalisation_deferred``).

    If judging or stamping fails for a cause that passes (a full disk, the catalog or the lake unreachable:
    :func:`transient_failure`), the run is left released, its status reason saying why, and the next reap
    tries again: freezing it ``error`` would lose its stamped verdicts for good over a disk that is cleared
    an hour later. Any other failure still ends the run: ``error``, with the failure as its reason. Its
    evidence stays, and `assay judge RUN` can judge it later (its stamped verdicts stay empty).
    """
    done: list[str] = []
    deferred: list[str] = []
    for run_id in ws.ledger.released(ws.settings.lease_seconds):
        earlier = get_run(ws.engine, run_id).status_reason or ""
        after = f"judged and finalised by the reaper after: {earlier}" if earlier.startswith(DEFERRED) else None
        try:
            finish_run(ws, run_id, reason=after)
        except RunFinalisedError:
            continue  # its own flow finished it meanwhile
        except Exception as exc:  # any judging failure: the run must still end, with the reason
            if transient_failure(exc):
                _defer(ws, run_id, exc)
                deferred.append(run_id)
                continue
            reason = f"judging failed while reaping: {type(exc).__name__}: {exc}"
            log.error("run %s: %s", run_id, reason)
            try:
                ws.ledger.finalise(run_id, status="error", reason=reason)
            except RunFinalisedError:
                continue
        done.append(run_id)
    return {"finalised_released": done, "finalisation_deferred": deferred}


def _defer(ws: Workspace, run_id: str, exc: BaseException) -> None:
    reason = f"{DEFERRED}: {type(exc).__name__}: {exc}; the next `assay reap` tries again"
    log.warning("run %s: not finalised, left released: %s", run_id, reason)
    try:
        ws.ledger.defer(run_id, reason)
    except Exception as again:  # the catalog is as full or as far away as the lake: the reason waits too
        log.warning("run %s: could not record why it waits: %s: %s", run_id, type(again).__name__, again)


TRANSIENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EAGAIN, errno.EBUSY, errno.ETIMEDOUT,
                              errno.ECONNREFUSED, errno.ECONNRESET, errno.EHOSTUNREACH, errno.ENETUNREACH})
"""Operating-system failures that pass without anyone changing the run: space freed, a store back."""
_TRANSIENT_TEXT = ("no space left on device", "database or disk is full", "could not extend file",
                   "disk quota exceeded", "database is locked", "could not connect", "connection refused",
                   "server closed the connection")
"""The same failures as libraries word them when they keep no ``errno`` (Arrow, SQLite, PostgreSQL)."""


def transient_failure(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a failure that passes by itself: an error whose
    class says so (``AssayError.transient``), an ``OSError`` of :data:`TRANSIENT_ERRNOS`, or a store's
    message for one of them. A bug, a refused input or a missing file is not."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "transient", False) is True:
            return True
        if isinstance(current, OSError) and current.errno in TRANSIENT_ERRNOS:
            return True
        if any(text in str(current).lower() for text in _TRANSIENT_TEXT):
            return True
        current = current.__cause__ or current.__context__
    return False


def sweep_scratch(ws: Workspace) -> dict[str, list[str]]:
    """Hand every abandoned scratch object back to its runner's teardown; names of what was deleted and what was not."""
    from assay.core.runner import teardown_scratch

    book = ws.ledger.scratch
    by_runner: dict[str, list] = {}
    for obj in book.abandoned():
        by_runner.setdefault(obj.runner, []).append(obj)
    deleted: list[str] = []
    failed: list[str] = []
    for name, objects in by_runner.items():
        outcome = teardown_scratch(runner_class(name)(), book, objects)
        for obj in objects:
            (deleted if outcome.get(obj.scratch_id) is None else failed).append(obj.name)
    return {"scratch_deleted": sorted(deleted), "scratch_failed": sorted(failed)}


def compact(ws: Workspace, table: str | None = None, team: str | None = None) -> dict[str, int]:
    """Rewrite the lake's small files, partition by partition, into files of about the target size."""
    from assay.storage.lake.compact import compact as compact_lake

    return compact_lake(ws.lake, table=table, team=team, target_bytes=ws.settings.lake_target_file_bytes)


def vacuum(ws: Workspace) -> dict[str, int]:
    """Delete lake files nobody will read again (unnamed, or retired), once past the grace period."""
    from assay.storage.lake.upkeep import vacuum as vacuum_lake

    return vacuum_lake(ws.lake, grace_seconds=ws.settings.lake_grace_seconds)


def migrate_lake(ws: Workspace) -> dict[str, dict[str, int]]:
    """List a lake written before the manifest in the catalog (once; de-duplicating), then derive its
    re-score state (each case run's latest outcome's atoms) by the one definition of "latest"."""
    from assay.storage.judgments import write_current
    from assay.storage.lake.upkeep import migrate
    from assay.transforms.rescore import key_counts
    from assay.transforms.verdicts import latest

    report = migrate(ws.lake)
    if report.get("assertion_results"):
        current = latest(ws.lake.scan("assertion_results")).collect()
        report["current_results"] = {"files": 0, "rewritten": 0, "duplicates_dropped": 0,
                                     "rows": write_current(ws.lake, current, key_counts)}
    return report

