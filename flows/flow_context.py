"""What every flow shares: one workspace per flow run, the retry policy of I/O tasks, and the live
reporting (progress, receipts) of flows run in this process.

A flow opens its workspace once, in :func:`flow_workspace`, and closes it (disposing of the catalog
engine) when the flow run ends; its tasks find it by their flow run's id with :func:`workspace`, so
every task of a run, a retried one included, shares one engine and one warm lake.

A task mapped onto a Dask worker (:mod:`.task_runners`) runs in another process, where no flow opened
anything: there :func:`workspace` opens the workspace the worker's own environment describes, once per
process and settings, closed when the process exits. What such tasks take and return crosses processes,
so it is plain data (ids, lists, dicts of counts). The live reporting below does not cross processes: a
task on a Dask worker reports no progress and no receipts to the command line that started the flow.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from prefect import flow, task

from assay.core.errors import ConfigError
from assay.core.runner import Receipt

from .workspace import Workspace, open_workspace

_open: dict[str | None, Workspace] = {}
_lock = threading.Lock()


def _flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    return flow_run.get_id()


@contextmanager
def flow_workspace() -> Iterator[Workspace]:
    """The workspace of the current flow run (outside one, of the caller), opened once and closed at the end."""
    key = _flow_run_id()
    ws = open_workspace()
    with _lock:
        _open[key] = ws
    try:
        yield ws
    finally:
        with _lock:
            _open.pop(key, None)
        ws.close()


def workspace() -> Workspace:
    """The workspace :func:`flow_workspace` opened for the flow run this task belongs to; on a Dask
    worker, the one the worker's environment describes (:func:`worker_workspace`)."""
    key = _flow_run_id()
    with _lock:
        ws = _open.get(key)
    if ws is None and _on_dask_worker():
        return worker_workspace()
    if ws is None:
        raise ConfigError(
            f"no workspace is open in this process for flow run {key}: call the task inside its flow (which opens "
            "one with flow_workspace()), with a task runner that runs tasks in the flow's process (the default) "
            "or on Dask workers (ASSAY_DASK_ADDRESS, ASSAY_DASK_WORKERS)"
        )
    return ws


def _on_dask_worker() -> bool:
    """Whether this code runs in a task on a Dask worker (never in a process that has not imported Dask)."""
    if "distributed" not in sys.modules:
        return False
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


_workers: dict[str, Workspace] = {}


def worker_workspace() -> Workspace:
    """The workspace of this process's environment (``ASSAY_*``), opened once per process and settings and
    closed when the process exits: a Dask worker's tasks share its engine and its warm lake."""
    from multiprocessing.util import Finalize

    from .workspace import load_settings

    settings = load_settings()
    key = repr(sorted((name, value.get_secret_value() if hasattr(value, "get_secret_value") else value)
                      for name, value in settings))
    with _lock:
        ws = _workers.get(key)
        if ws is None:
            ws = _workers[key] = open_workspace(settings)
            # multiprocessing's exit hook runs in a child process (a fork-started one skips atexit) and,
            # through atexit, in a main process alike
            Finalize(ws, ws.close, exitpriority=10)
    return ws


def retry_if_transient(_task, _task_run, state) -> bool:
    """Prefect retry condition: retry only what may succeed on a second try."""
    exc = state.result(raise_on_failure=False)
    return bool(getattr(exc, "transient", False)) or isinstance(exc, sa.exc.OperationalError)


def assay_flow(**options: Any) -> Any:
    """Prefect's ``flow`` decorator as every Assay flow uses it: with ``options``, results not persisted (a
    flow's record is the catalog and the lake), and their storage named (Prefect's local storage path, its
    own default) so that no flow run asks the server for a default result storage, twice, as it starts."""
    from pathlib import Path

    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH

    return flow(persist_result=False, result_storage=Path(PREFECT_RESULTS_LOCAL_STORAGE_PATH.value()), **options)


def assay_task(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Prefect's ``task`` decorator as every Assay task uses it (bare or with ``options``): never answered
    from a cache. Each task has effects (a run created, evidence written, verdicts stamped) whose record
    is the catalog and the lake, so Prefect has no result to offer in its place; without a cache policy
    a task run also skips hashing its inputs and source and looking for a cached result on disk."""
    from prefect.cache_policies import NO_CACHE

    decorate = task(cache_policy=NO_CACHE, **options)
    return decorate if fn is None else decorate(fn)


io_task = assay_task(retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=retry_if_transient)
"""A task that talks to a store: retried, and only on what may succeed on a second try."""


def summed(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The counts of mapped tasks added up, key by key (``None`` where no part had a figure)."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if value is None:
                out.setdefault(key, None)
            else:
                out[key] = value if out.get(key) is None else out[key] + value
    return out


_listeners: list[Callable[[Receipt], None]] = []
_starters: list[Callable[[int], None]] = []
_reporters: list[Callable[[int, int | None, str], None]] = []
_shares: dict[str, tuple[int, int, str]] = {}


def listen(callback: Callable[[Receipt], None] | None, on_start: Callable[[int], None] | None = None,
           progress: Callable[[int, int | None, str], None] | None = None) -> None:
    """Route report receipts of in-process flow runs to ``callback``, each run's case count (its case
    snapshot, known once the run exists) to ``on_start``, and how far judging or re-scoring is to
    ``progress(done, total, unit)``: the CLI's progress bar. ``None`` stops them all."""
    with _lock:
        for registry, value in ((_listeners, callback), (_starters, on_start), (_reporters, progress)):
            registry.clear()
            if value is not None:
                registry.append(value)
        _shares.clear()


def emit(receipt: Receipt) -> None:
    for callback in _listeners:
        callback(receipt)


def started(cases: int) -> None:
    for callback in _starters:
        callback(cases)


def listening() -> bool:
    return bool(_starters)


def progress_of(part: str) -> Callable[[int, int, str], None] | None:
    """A progress callback for one part of a mapped job (a run): the listener hears the parts summed."""
    if not _reporters:
        return None

    def tell(done: int, total: int, unit: str) -> None:
        with _lock:
            _shares[part] = (done, total, unit)
            same = [s for s in _shares.values() if s[2] == unit]
        for report in _reporters:
            report(sum(s[0] for s in same), sum(s[1] for s in same), unit)

    return tell
