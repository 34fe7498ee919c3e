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

from . import operations as ops
from .workspace import open_workspace

_listeners: list[Callable[[Receipt], None]] = []


def listen(callback: Callable[[Receipt], None] | None) -> None:
    """Route report receipts of in-process flow runs to ``callback`` (the CLI's progress bar)."""
    _listeners.clear()
    if callback is not None:
        _listeners.append(callback)


def _emit(receipt: Receipt) -> None:
    for callback in _listeners:
        callback(receipt)


def retry_if_transient(_task, _task_run, state) -> bool:
    """Prefect retry condition: retry only what may succeed on a second try."""
    exc = state.result(raise_on_failure=False)
    return bool(getattr(exc, "transient", False)) or isinstance(exc, sa.exc.OperationalError)


io_task = task(retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=retry_if_transient)


@io_task
def create_run_task(suite: str, runner: str | None, deadline_minutes: float | None) -> str:
    ws = open_workspace()
    deadline = timedelta(minutes=deadline_minutes) if deadline_minutes else None
    return ops.start_run(ws, suite, runner, deadline).run_id


@task
def execute_task(run_id: str, runner_options: dict[str, Any] | None) -> dict[str, Any]:
    ws = open_workspace()
    result = ops.execute_run(ws, run_id, runner_options, on_report=_emit)
    return {"reports": result.reports, "case_runs": result.case_runs, "evaluations": result.evaluations,
            "duplicates": result.duplicates, "error": result.error}


@io_task
def finish_task(run_id: str) -> dict[str, Any]:
    return ops.finish_run(open_workspace(), run_id).to_dict()


@flow(name="run-suite", log_prints=False)
def run_suite(
    suite: str,
    runner: str | None = None,
    deadline_minutes: float | None = None,
    runner_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Resolve the suite, create the run (criteria stamped), claim, drive the runner, report, release."""
    run_id = create_run_task(suite, runner, deadline_minutes)
    executed = execute_task(run_id, runner_options)
    return {"run": finish_task(run_id), "executed": executed}


@io_task
def reap_task() -> dict[str, list[str]]:
    return ops.reap(open_workspace())


@flow(name="reap")
def reap() -> dict[str, list[str]]:
    """Resolve expired leases and passed deadlines to timed_out."""
    return reap_task()
