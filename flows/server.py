"""The workspace's own Prefect server: started once, in the background, and used by every command.

Its home is the workspace's Prefect home (``ASSAY_HOME/prefect``, its database included); its pid, port,
URL and start time are kept in ``ASSAY_HOME/prefect/server.json`` and its log in
``ASSAY_HOME/prefect/server.log``. The server runs in a session of its own, so it outlives the command
that started it. Until it answers ``/api/health`` a watchdog (:func:`.workspace.guard`) stops it if the
starting command dies, however it dies: a start killed half-way leaves nothing running. A state file whose
pid is dead, or is not this server (the pid was reused), is stale: reading it removes it.

Cheap to import: standard library only; Prefect itself is never imported here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.core.errors import ServerError
from assay.core.settings import Settings

APP = "assay.flows.server_app:create_app"
"""What uvicorn serves: Prefect's API and its UI, retrying busy-database refusals inside the server
(:mod:`.server_app`)."""
EARLIER_APPS = ("prefect.server.api.server:create_app",)
"""What servers started by earlier builds serve: still ours to report and stop."""

RECORDING = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "1000",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "1000",
}
"""How the server records what flows report, in the background: task runs once a second, in one
transaction (Prefect writes each task-run state as its event arrives), and events every five seconds
(Prefect's interval) rather than every 20 events. Each of those writes takes SQLite's one write lock,
and a flow run's own requests (create it, set its states, publish its artifact) wait on it; on 2 cores
the server's CPU also competes with the command's. Ten flows of four tasks, back to back
(``flows.back_to_back``), took a median of 0.10-0.16 s each with these settings and 0.27-0.45 s with
Prefect's; the server spent 0.22-0.28 s of CPU per run-suite flow of 1,000 cases against 0.34-0.42 s
(three alternating runs, outside the benchmarks; docs/operations.md). Task runs reach the UI within a
second, events within five; stopping the server writes what it still holds. A server killed outright
loses what it held (its message queue is in memory): up to a second of task runs and five seconds of
events, from the UI only; every run's evidence, outcomes and verdicts are in the catalog and the lake. A
setting of the same name in the environment of ``assay server start`` wins."""

STOP_GRACE_SECONDS = 10.0
"""How long ``stop`` waits after SIGTERM before it sends SIGKILL."""

_SERVE = """\
import sys, uvicorn
uvicorn.run(sys.argv[1], factory=True, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", lifespan="on")
"""
"""The server process: uvicorn serving :data:`APP` on loopback (argv: the app, the port)."""

_PROC = Path("/proc/self/stat").exists()
"""Linux: a process's state, start time and command line can be read, to tell our server from a reused pid."""


@dataclass(frozen=True)
class ServerState:
    """What ``server.json`` holds about a running server."""

    pid: int
    port: int
    url: str
    started_at: str
    boot: str | None
    """The process's start time as the kernel counts it: a reused pid has another."""

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    def describe(self) -> dict[str, Any]:
        started = datetime.fromisoformat(self.started_at)
        uptime = (datetime.now(UTC) - started).total_seconds()
        return {"pid": self.pid, "port": self.port, "url": self.url, "api_url": self.api_url,
                "started_at": self.started_at, "uptime_seconds": round(uptime, 1)}


def state_path(settings: Settings) -> Path:
    return settings.prefect_home / "server.json"


def log_path(settings: Settings) -> Path:
    return settings.prefect_home / "server.log"


def current(settings: Settings) -> ServerState | None:
    """The workspace's server if its process is alive and is that server; a stale state file is removed."""
    path = state_path(settings)
    try:
        state = ServerState(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):  # unreadable: not something a running server left
        path.unlink(missing_ok=True)
        return None
    if not _is_ours(state):
        path.unlink(missing_ok=True)
        return None
    return state


def healthy(state: ServerState, timeout: float = 2.0) -> bool:
    """Whether the server answers ``/api/health``."""
    from urllib.error import URLError
    from urllib.request import urlopen

    try:
        with urlopen(f"{state.api_url}/health", timeout=timeout) as response:  # noqa: S310 - loopback, ours
            return response.status == 200
    except (URLError, OSError, ValueError):
        return False


def api_url_if_up(settings: Settings) -> str | None:
    """The API URL of the workspace's server when it is running and healthy, else ``None``."""
    if not state_path(settings).exists():  # the common case costs one stat
        return None
    state = current(settings)
    return state.api_url if state is not None and healthy(state) else None


def start(settings: Settings, timeout: float | None = None) -> tuple[ServerState, bool]:
    """Start the workspace's server and wait until it answers; return it and whether it was already up.

    A start that fails (the server exits, or does not answer within ``timeout``, default
    ``ASSAY_SERVER_START_TIMEOUT_SECONDS``) stops what it started, removes the state file and raises a
    :class:`ServerError` quoting the server's log.
    """
    timeout = settings.server_start_timeout_seconds if timeout is None else timeout
    settings.prefect_home.mkdir(parents=True, exist_ok=True)
    with _locked(settings):
        state = current(settings)
        if state is not None and _wait_healthy(state, None, time.monotonic() + timeout):
            return state, True
        if state is not None:  # alive, ours, silent: a hung server
            _terminate(state.pid)
            state_path(settings).unlink(missing_ok=True)
        return _launch(settings, timeout), False


def stop(settings: Settings) -> ServerState | None:
    """Stop the workspace's server (SIGTERM, then SIGKILL after a grace); ``None`` when none ran."""
    state = current(settings)
    if state is not None:
        _terminate(state.pid)
    state_path(settings).unlink(missing_ok=True)
    return state


def _launch(settings: Settings, timeout: float) -> ServerState:
    from .workspace import guard, release

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_LOGGING_LEVEL")}  # a full log
    env.update(PREFECT_HOME=str(settings.prefect_home), PREFECT_UI_API_URL=f"http://127.0.0.1:{port}/api",
               PREFECT_SERVER_CSRF_PROTECTION_ENABLED="false")  # it listens on loopback only; clients skip the token
    for key, value in RECORDING.items():  # a user's own setting wins
        env.setdefault(key, value)
    log = log_path(settings)
    with log.open("ab") as out:
        out.write(f"--- {datetime.now(UTC).isoformat(timespec='seconds')} starting on port {port}\n".encode())
        out.flush()
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, APP, str(port)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,  # its own session: it outlives this command and its terminal
        )
    watchdog = guard(process.pid)  # until it answers, it dies with this command
    state = ServerState(pid=process.pid, port=port, url=f"http://127.0.0.1:{port}",
                        started_at=datetime.now(UTC).isoformat(timespec="seconds"), boot=_boot(process.pid))
    _write_state(settings, state)
    up, ended = False, None
    try:
        up = _wait_healthy(state, process, time.monotonic() + timeout)
        ended = process.poll()
    finally:  # a failed or interrupted start stops what it started
        if not up:
            _terminate(process.pid, process)
            state_path(settings).unlink(missing_ok=True)
        release(watchdog)
    if not up:
        why = f"exited with code {ended}" if ended is not None else f"did not answer within {timeout:g} s"
        raise ServerError(
            f"the Prefect server {why}; its log is {log}:\n{_tail(log)}\n"
            "fix what the log names and run `assay server start` again "
            "(on a slow machine raise ASSAY_SERVER_START_TIMEOUT_SECONDS)"
        )
    return state


def _wait_healthy(state: ServerState, process: subprocess.Popen | None, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if healthy(state):
            return True
        if (process is not None and process.poll() is not None) or not _alive(state.pid):
            return False
        time.sleep(0.2)  # polling a child we cannot wait on; the deadline bounds it
    return False


def _terminate(pid: int, process: subprocess.Popen | None = None) -> None:
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                return
            if process is None and not _alive(pid):
                return
            time.sleep(0.1)


def _is_ours(state: ServerState) -> bool:
    if not _alive(state.pid):
        return False
    if not _PROC:  # not Linux: the pid must do
        return True
    if state.boot is not None and _boot(state.pid) != state.boot:
        return False  # the pid was reused
    try:
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(app.encode() in cmdline for app in (APP, *EARLIER_APPS)) and str(state.port).encode() in cmdline


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not _PROC:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _boot(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat``, field 22)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_state(settings: Settings, state: ServerState) -> None:
    path = state_path(settings)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    tmp.replace(path)


def _tail(log: Path, lines: int = 12) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return "  (no log)"
    return "\n".join(f"  {line}" for line in text[-lines:])


@contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    """One ``start`` at a time per workspace."""
    import fcntl

    with (settings.prefect_home / "server.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
