"""Workspaces are safe: their own Prefect home, no server outliving its command, a guarded reset, no
invented homes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from command_line import assay_process as assay

from assay.core.errors import ConfigError
from assay.flows.demo import DEMO, MARKER, _fresh_workspace
from assay.flows.workspace import PREFECT_DEFAULTS, open_workspace


def _clean_env(home: Path | None) -> dict[str, str]:
    """The environment without any ASSAY_ or PREFECT_ setting (the command must set Prefect's itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    env.pop("DO_NOT_TRACK", None)
    if home is not None:
        env["ASSAY_HOME"] = str(home)
    return env


def _cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return assay(*args, env=env, cwd=cwd, check=None)


def test_prefect_reads_the_workspace_home_because_it_is_set_before_prefect_is_imported(fresh_interpreter,
                                                                                     tmp_path: Path) -> None:
    """`assay run` imports Prefect inside the command: by then the callback has pointed it at ASSAY_HOME."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import sys\n"
        "from assay.flows import cli\n"
        "seen = {}\n"
        "def probe():\n"
        "    seen['imported_before'] = 'prefect' in sys.modules\n"
        "    from prefect.settings import get_current_settings\n"
        "    s = get_current_settings()\n"
        "    seen.update(home=str(s.home), analytics=s.server.analytics_enabled,\n"
        "                telemetry=s.cloud.enable_orchestration_telemetry,\n"
        "                timeout=s.server.ephemeral.startup_timeout_seconds)\n"
        "cli.app.command('probe')(probe)\n"
        "try:\n    cli.main(['probe'])\nexcept SystemExit:\n    pass\n"
        "import json; print(json.dumps(seen))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(home), capture_output=True, text=True,
                         check=True, timeout=120).stdout
    seen = json.loads(out.splitlines()[-1])
    timeout = int(PREFECT_DEFAULTS["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"])
    assert timeout > 20  # Prefect's own 20 s is too short on a loaded machine
    assert seen == {"imported_before": False, "home": str((home / "prefect").resolve()), "analytics": False,
                    "telemetry": False, "timeout": timeout}


def test_a_missing_home_is_an_error_except_for_init(assay_process, tmp_path: Path) -> None:
    home = tmp_path / "nonexistent" / "x"
    listing = _cli("runs", "list", env=_clean_env(home))
    assert listing.returncode == 1, listing
    assert "ASSAY_HOME" in listing.stderr and str(home) in listing.stderr and "assay init" in listing.stderr
    assert not home.exists()
    assert _cli("init", env=_clean_env(home)).returncode == 0 and (home / "catalog.db").is_file()
    assert _cli("runs", "list", env=_clean_env(home)).returncode == 0


def test_an_empty_home_is_refused(assay_process, tmp_path: Path) -> None:
    env = {**_clean_env(None), "ASSAY_HOME": ""}
    for args in (("runs", "list"), ("init",)):
        proc = _cli(*args, env=env, cwd=tmp_path)
        assert proc.returncode == 1 and "ASSAY_HOME" in proc.stderr and "is empty" in proc.stderr, proc
        assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no catalog.db written where the command stood


def test_open_workspace_refuses_a_missing_home_unless_asked_to_create(assay_home: Path) -> None:
    missing = assay_home / "elsewhere"
    from assay.core.settings import Settings

    with pytest.raises(ConfigError, match="does not exist.*assay init"):
        open_workspace(Settings(home=missing))
    open_workspace(Settings(home=missing), create=True).close()
    assert missing.is_dir()


def _with_a_run(home: Path) -> None:
    """A workspace holding a run (started, never executed: enough for the demo to call it not empty)."""
    from assay.flows import operations as ops
    from assay.flows.demo import SUITES

    ws = open_workspace(create=True)
    ops.load(ws, str(DEMO / "bundle.yaml"))
    ops.start_run(ws, SUITES[0])
    ws.close()


def test_demo_reset_refuses_a_workspace_the_demo_did_not_create(assay_home: Path) -> None:
    _with_a_run(assay_home)  # a team's workspace: created by init/load, not by the demo
    (assay_home / "lake" / "keep.txt").parent.mkdir(parents=True, exist_ok=True)
    (assay_home / "lake" / "keep.txt").write_text("evidence")
    with pytest.raises(ConfigError) as refused:
        _fresh_workspace(reset=True)
    assert MARKER in str(refused.value) and "new folder" in str(refused.value)
    assert (assay_home / "catalog.db").is_file() and (assay_home / "lake" / "keep.txt").is_file()


def test_demo_reset_empties_a_workspace_the_demo_created(tmp_path: Path, assay_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "demo-home" / "nested"  # does not exist: the demo creates it, like `make demo`
    monkeypatch.setenv("ASSAY_HOME", str(home))
    _fresh_workspace(reset=False).close()
    assert (home / MARKER).is_file()
    _with_a_run(home)
    with pytest.raises(ConfigError, match="already holds runs"):
        _fresh_workspace(reset=False)
    from assay.storage.catalog.runs import list_runs

    ws = _fresh_workspace(reset=True)
    assert list_runs(ws.engine, limit=1) == [] and (home / MARKER).is_file()
    ws.close()


def _processes_mentioning(needle: str, command: str = "") -> list[int]:
    """Live processes with ``needle`` in their command line or environment and ``command`` in their
    command line (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            text = cmdline + (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle.encode() in text and command.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads processes from /proc (Linux)")
def test_a_killed_run_leaves_no_prefect_server(assay_process, tmp_path: Path) -> None:
    """kill -9 of `assay run` once its flow started: the temporary server it started goes too."""
    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    env = _clean_env(home)
    proc = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "run", "acme-plumbing/main-line"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prefect_home = str((home / "prefect").resolve())
    try:
        deadline = time.monotonic() + 240
        while not _processes_mentioning(prefect_home, "uvicorn"):
            assert proc.poll() is None and time.monotonic() < deadline, "the run never started a Prefect server"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 60
    while (left := _processes_mentioning(prefect_home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], f"still running after the command was killed: {left}"
