"""Prefect flows: thin wiring over :mod:`assay.flows.operations`.

Only tasks that talk to a store retry, and only on errors whose class says retrying can help
(``AssayError.transient``) or on a database that is momentarily unavailable. The runner's own
execution is not retried: a report is idempotent, but a vendor call is not ours to repeat blindly.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from prefect import flow, task

from assay.core.runner import Receipt
from assay.storage.catalog.runs import get_run

from . import operations as ops
from .workspace import bind_temporary_server, open_workspace

bind_temporary_server()  # Prefect's temporary server dies with the command, even a SIGKILLed one

_listeners: list[Callable[[Receipt], None]] = []
_starters: list[Callable[[int], None]] = []


def listen(callback: Callable[[Receipt], None] | None, on_start: Callable[[int], None] | None = None) -> None:
    """Route report receipts of in-process flow runs to ``callback``, and each run's case count (its case
    snapshot, known once the run exists) to ``on_start``: the CLI's progress bar. ``None`` stops both."""
    _listeners.clear()
    _starters.clear()
    if callback is not None:
        _listeners.append(callback)
    if on_start is not None:
        _starters.append(on_start)


def _emit(receipt: Receipt) -> None:
    for callback in _listeners:
        callback(receipt)


def _started(run_id: str) -> None:
    if _starters:
        cases = get_run(open_workspace().engine, run_id).case_count
        for callback in _starters:
            callback(cases)


def retry_if_transient(_task, _task_run, state) -> bool:
    """Prefect retry condition: retry only what may succeed on a second try."""
    exc = state.result(raise_on_failure=False)
    return bool(getattr(exc, "transient", False)) or isinstance(exc, sa.exc.OperationalError)


io_task = task(retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=retry_if_transient)


@io_task
def create_run_task(suite: str, runner: str | None, deadline_minutes: float | None, request_id: str) -> str:
    """Create the run once: a retry (the first attempt's commit may have landed) returns the same run."""
    ws = open_workspace()
    deadline = timedelta(minutes=deadline_minutes) if deadline_minutes else None
    return ops.start_run(ws, suite, runner, deadline, request_id=request_id).run_id


def _request_id() -> str:
    """One request id per flow run, fixed before the creating task so its retries share it."""
    from prefect.runtime import flow_run

    from assay.core.ids import new_id

    return f"run-suite:{flow_run.get_id() or new_id()}"


@task
def execute_task(run_id: str, runner_options: dict[str, Any] | None) -> dict[str, Any]:
    ws = open_workspace()
    result = ops.execute_run(ws, run_id, runner_options, on_report=_emit)
    return {"reports": result.reports, "case_runs": result.case_runs, "evaluations": result.evaluations,
            "duplicates": result.duplicates, "error": result.error,
            "awaiting_vendor": get_run(ws.engine, run_id).awaiting_vendor}


@task
def judge_task(run_id: str, trigger: str = "run") -> dict[str, Any]:
    return ops.judge_run(open_workspace(), run_id, trigger)


@io_task
def finalise_task(run_id: str, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    return ops.finalise_run(open_workspace(), run_id, verdicts).to_dict()


@flow(name="run-suite", log_prints=False)
def run_suite(
    suite: str,
    runner: str | None = None,
    deadline_minutes: float | None = None,
    runner_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create the run (criteria resolved and stamped), claim, drive the runner, report, release; judge; finalise."""
    run_id = create_run_task(suite, runner, deadline_minutes, _request_id())
    _started(run_id)
    executed = execute_task(run_id, runner_options)
    # released with the error (already final; the evidence stays), or submitted to an asynchronous
    # runner's vendor (the collect flow judges and finalises it)
    if executed["error"] is not None or executed["awaiting_vendor"]:
        return {"run": get_run(open_workspace().engine, run_id).to_dict(), "executed": executed, "verdicts": []}
    judged = judge_task(run_id)
    run = finalise_task(run_id, judged["verdicts"])
    return {"run": run, "executed": executed, "judged": judged["judged"], "verdicts": judged["verdicts"]}


@io_task
def reap_task() -> dict[str, list[str]]:
    return ops.reap(open_workspace())


@flow(name="reap")
def reap() -> dict[str, list[str]]:
    """Resolve expired leases, passed deadlines and runs never started to timed_out; finalise runs left released."""
    return reap_task()


@io_task
def collect_task(concurrency: int | None) -> dict[str, Any]:
    from .collect import collect_outstanding

    ws = open_workspace()
    try:
        return collect_outstanding(ws, concurrency).to_dict()
    finally:
        ws.close()


@flow(name="collect")
def collect(concurrency: int | None = None) -> dict[str, Any]:
    """Poll every outstanding asynchronous run; store, judge and finalise what finished; time out what is past its deadline."""
    return collect_task(concurrency)


@task
def rejudge_task(run_ids: list[str], keys: list[str] | None, new_versions_only: bool, force: bool) -> dict[str, Any]:
    from .judging import judge_runs

    return judge_runs(open_workspace(), run_ids, trigger="rejudge", keys=keys,
                      new_versions_only=new_versions_only, force=force)


@flow(name="rejudge")
def rejudge(
    run_ids: list[str], keys: list[str] | None = None, new_versions_only: bool = False, force: bool = False
) -> dict[str, Any]:
    """New outcomes over stored evidence for the chosen runs; calls the judge, never a runner."""
    return rejudge_task(run_ids, keys, new_versions_only, force)


@io_task
def compact_task(table: str | None, team: str | None) -> dict[str, int]:
    return ops.compact(open_workspace(), table, team)


@io_task
def vacuum_task() -> dict[str, int]:
    return ops.vacuum(open_workspace())


@flow(name="compact-lake")
def compact_lake(table: str | None = None, team: str | None = None, vacuum: bool = True) -> dict[str, Any]:
    """Compact the lake's small files, then vacuum what has passed its grace period."""
    compacted = compact_task(table, team)
    return {"compacted": compacted, "vacuumed": vacuum_task() if vacuum else None}
