"""The workspace's Prefect server killed while `assay run` works: the command finishes its run, says once that
the server went away, prints the verdict table and exits with the verdict's code.

On SQLite and PostgreSQL catalogs. Real processes throughout: the workspace's server (`assay server start`), the command, and a fake VAPI in this
process whose first chat request is held until the server has been killed (SIGKILL), so the kill lands while
the runner works, after the flow run began on the server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.core.exit_codes import ExitCode
from assay.fakes.serve import running, settings_env
from assay.storage.catalog.engine import create_catalog_engine
from assay.flows.demo import DEMO

SUITE = "acme-plumbing/chat-line"
GATE = "publish_gate"
"""A consumer whose criteria the held conversation fails: the gated run exits FAIL (80), not 0 nor 1."""


def _env(home: Path, vendors: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    return env | vendors | {"ASSAY_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}


def _assay(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "assay.flows.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"assay {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _hold_first_chat(vapi) -> tuple[threading.Event, threading.Event]:
    """Hold the fake's first chat request until ``release`` is set; ``arrived`` is set when it comes."""
    arrived, release = threading.Event(), threading.Event()
    answer = vapi._answer

    def held(request):
        if request.method == "POST" and request.path == "/chat" and not arrived.is_set():
            arrived.set()
            release.wait(120)
        return answer(request)

    vapi._answer = held
    return arrived, release


@pytest.mark.usefixtures("assay_process")  # real processes: the end-to-end tier
def test_a_run_outlives_its_server_and_exits_with_its_verdict(tmp_path: Path, catalog_url: str) -> None:
    home = tmp_path / "home"
    with running() as fakes:
        env = _env(home, settings_env(fakes)) | {"ASSAY_CATALOG_URL": catalog_url}
        _assay(env, "init")
        _assay(env, "load", str(DEMO / "bundle.yaml"))
        server = json.loads(_assay(env, "server", "start", "--json").stdout)["server"]
        arrived, release = _hold_first_chat(fakes["vapi"])
        command = subprocess.Popen(
            [sys.executable, "-m", "assay.flows.cli", "run", SUITE, "--runner", "vapi_chat", "--gate", GATE],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert arrived.wait(180), "the run never reached the vendor"
            os.kill(server["pid"], signal.SIGKILL)
        finally:
            release.set()
        out, err = command.communicate(timeout=300)

    assert command.returncode == ExitCode.FAIL, f"exit {command.returncode}\nstdout:\n{out}\nstderr:\n{err}"
    assert err.count("went away") == 1 and server["url"] in err, err
    assert "EventsWorker" not in err and "Traceback" not in err and "ConnectError" not in err, err
    assert "verdicts per consumer" in out and f"{GATE}" in out, out
    engine = create_catalog_engine(catalog_url)
    try:
        with engine.connect() as conn:
            runs = conn.execute(sa.text("SELECT status FROM runs")).scalars().all()
            stamped = conn.execute(sa.text("SELECT count(*) FROM run_criteria WHERE verdict IS NOT NULL")).scalar()
    finally:
        engine.dispose()
    assert runs == ["completed"] and stamped > 0, (runs, stamped)


def test_a_command_whose_server_answers_says_nothing_of_it(tmp_path: Path) -> None:
    """The note is for a server that went away, not for every command (the in-process command line reports to
    the tests' one Prefect server, which stays up)."""
    from command_line import assay

    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    done = assay("run", "acme-plumbing/main-line", home=home, check=None)
    assert done.returncode == 0 and "went away" not in done.stderr, done
