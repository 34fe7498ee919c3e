"""The tests' one Prefect server per worker process: what its flows and the commands it starts report to.

A command that runs a flow with no server to report to starts a temporary Prefect server of its own:
5-20 s per command on 2 cores, against under a second of work. A walk-through of a dozen commands paid it
a dozen times. Here one real server is started on first use, as a user starts one (``assay init`` and
``assay server start``, in a workspace of its own), and shared by every command a test runs with
:func:`prefect_env`: the set-up of a user whose ``PREFECT_API_URL`` points at a server of their own, which
every workspace then reports to. Each test keeps its own ``ASSAY_HOME`` (catalog and lake). The flows the
test process runs itself report to it too (:func:`harness`, entered by the ``prefect_harness`` fixture and by
the in-process command line, ``command_line.assay``): a server of ours, which retries a busy SQLite database
inside (``assay.flows.server_app``), where Prefect's own test harness answered 503 and its client slept
seconds before trying again.

The temporary server and the workspace's own server keep tests of their own, which run their commands
without :func:`prefect_env`: ``tests/flows/test_server.py``, the killed run of
``tests/flows/test_workspace_safety.py``, and the README tour (which runs ``assay server start`` as written).

Registered as a pytest plug-in by ``tests/conftest.py``; the server is stopped when the session ends, and
a watchdog stops it should pytest itself be killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from assay.core.settings import Settings
from assay.flows import server
from assay.flows.workspace import guard, release

START_TIMEOUT_SECONDS = 180
"""Generous: on a loaded machine a first start (its database created) has taken over a minute."""


@dataclass
class _Shared:
    settings: Settings
    state: server.ServerState
    watchdog: subprocess.Popen


_shared: _Shared | None = None
_harness: contextlib.ExitStack | None = None


def harness() -> None:
    """Point this process's flows at the tests' shared server for the rest of the session, unless they are
    already (Prefect's settings, as its own test harness sets them).

    The flows run as a command runs them (``assay.flows.orchestration.attend``): without Prefect's heartbeat
    thread, which holds each flow run up to a second at its end. A worker's flow runs keep it: the tests of
    deployments run a real worker, and a test may set the heartbeat for itself."""
    global _harness
    if _harness is None:
        from prefect.settings import temporary_settings

        stack = contextlib.ExitStack()
        stack.enter_context(temporary_settings(updates={"api.url": shared_api_url(),
                                                        "client.csrf_support_enabled": False,
                                                        "flows.heartbeat_frequency": None}))
        _harness = stack


def _cli(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    env.update(ASSAY_HOME=str(home))
    done = subprocess.run([sys.executable, "-m", "assay.flows.cli", *args], env=env, capture_output=True,
                          text=True, timeout=START_TIMEOUT_SECONDS + 60)
    assert done.returncode == 0, f"assay {' '.join(args)} for the tests' shared Prefect server:\n{done.stderr}"
    return done.stdout


def shared_api_url() -> str:
    """The API URL of the tests' shared Prefect server, started on the first call."""
    global _shared
    if _shared is None:
        home = Path(tempfile.mkdtemp(prefix="assay-tests-prefect-")) / "home"
        settings = Settings(home=home)
        _cli(home, "init")
        try:
            _cli(home, "server", "start", "--timeout", str(START_TIMEOUT_SECONDS))
        finally:  # a server that runs, whatever the start said, is pytest's: it dies with pytest, however that ends
            if (state := server.current(settings)) is not None:
                _shared = _Shared(settings, state, guard(state.pid))
        if _shared is None:
            raise AssertionError(f"`assay server start` left no server running; its log: {server.log_path(settings)}")
    elif not server.healthy(_shared.state, timeout=10.0):
        raise AssertionError(f"the tests' shared Prefect server stopped answering; its log: "
                             f"{server.log_path(_shared.settings)}")
    return _shared.state.api_url


def prefect_env() -> dict[str, str]:
    """What a command's environment needs to run its flows on the shared server."""
    return {"PREFECT_API_URL": shared_api_url(),
            "PREFECT_CLIENT_CSRF_SUPPORT_ENABLED": "false"}  # the server runs without CSRF protection (loopback)


def pytest_sessionfinish() -> None:
    global _shared, _harness
    if _harness is not None:
        _harness.close()
        _harness = None
    if _shared is None:
        return
    server.stop(_shared.settings)
    release(_shared.watchdog)
    shutil.rmtree(_shared.settings.home.parent, ignore_errors=True)
    _shared = None
