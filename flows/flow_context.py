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

A command's flows outlive the workspace's Prefect server (:func:`outliving_server`): should it die while they
run, they finish their work, whose record is the catalog and the lake, and the command is told what they returned.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import sqlalchemy as sa
from prefect import flow, task
from prefect.states import State

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
    own default) so that no flow run asks the server for a default result storage, twice, as it starts.

    What the flow returns is also kept for :func:`outliving_server`: when the server has gone away, Prefect
    cannot record the flow run's final state and raises instead of returning it."""
    from pathlib import Path

    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH

    decorate = flow(persist_result=False, result_storage=Path(PREFECT_RESULTS_LOCAL_STORAGE_PATH.value()), **options)

    def kept(fn: Callable[..., Any]) -> Any:
        @functools.wraps(fn)
        def returning(*args: Any, **kwargs: Any) -> Any:
            return _keep(fn(*args, **kwargs))  # a module's function: Dask pickles this one with its flow, by value

        return decorate(returning)

    return kept


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


# --- the Prefect server going away while a command uses it --------------------------------------------

_returned = threading.local()
"""What the last flow called in this thread returned (:func:`assay_flow`)."""
_NOTHING = object()
_gone: list[str] = []
"""The Prefect servers (``http://host:port``) found gone, once a request to one was refused: later requests to
it fail at once."""
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class ServerGone(httpx.TransportError):
    """The Prefect server on loopback that this command's flows report to refused a connection: it is gone
    (killed, stopped, its machine's port closed), and it will not be back on that port.

    Not one of the errors Prefect's client retries, so nothing waits a minute of back-off for it; every later
    request fails the same way at once. The flows' work (runs, evidence, verdicts) never needed the server:
    their record is the catalog and the lake. What is lost is the server's record: flow-run states, events,
    artifacts, tags."""


class WatchedTransport(httpx.HTTPTransport):
    """The transport of the Prefect client a command's flows use (``orchestration._plain_http_client``): a
    refused connection to a server on loopback raises :class:`ServerGone`, and so does every request after."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        server = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        if server in _gone:
            raise ServerGone(f"the Prefect server at {server} went away", request=request)
        try:
            return super().handle_request(request)
        except httpx.ConnectError as exc:
            if request.url.host not in LOOPBACK:
                raise  # another machine's server may be unreachable for a moment: Prefect retries it
            _gone.append(server)
            raise ServerGone(f"the Prefect server at {server} went away", request=request) from exc


def _keep(value: Any) -> Any:
    """Keep what a flow returned (:func:`assay_flow`): a failed state's exception (a failed gate) as it is now,
    since Prefect swaps it for its record of it."""
    failed = isinstance(value, State) and isinstance(value.data, BaseException)
    _returned.value = value.data if failed else value
    return value


def server_gone() -> str | None:
    """The Prefect API this process found gone, or None."""
    return _gone[0] if _gone else None


def to_server(call: Callable[[], Any]) -> None:
    """Make a call to the Prefect API that the flow's record wants but its work does not need (an artifact,
    the flow run's tags); once the server has gone away it is skipped, and the flow goes on."""
    try:
        call()
    except ServerGone:
        pass


def outliving_server(job: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the flow ``job``; when the server went away while it ran, what the flow returned all the same
    (a returned failed state raises its exception, as Prefect would), after one line on standard error
    saying so. A flow that did not reach its end raises :class:`ServerGone`."""
    _returned.value = _NOTHING
    try:
        return job(*args, **kwargs)
    except ServerGone:
        value = getattr(_returned, "value", _NOTHING)
        if value is _NOTHING or isinstance(value, State):  # not at its end, or ended in a state of its own making
            raise
        _say_gone()
        if isinstance(value, BaseException):
            raise value from None
        return value
    finally:
        _returned.value = _NOTHING


_told: list[str] = []


def _say_gone() -> None:
    """Say once per process that the server went away, and what that costs."""
    if not _told:
        _told.append(_gone[0])
        print(f"note: the workspace's Prefect server ({_gone[0]}) went away during this command; its work is "
              "done and recorded in the catalog, not in the server's UI (`assay server start` starts it again)",
              file=sys.stderr, flush=True)
