"""`assay server start|stop|status`: the workspace's own Prefect server, with real processes throughout.

One server per module serves the read-only tests; the tests that start, kill or stop servers use copies
of a workspace made before any server ran in it. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.request import Request, urlopen

import jsonschema
import pytest
from command_line import assay_process as typed

from assay.core.document_models import validate
from assay.flows.demo import DEMO

SUITE = "acme-plumbing/main-line"
ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"


def assay(*args: str, home: Path, check: int | None = 0, extra_env: dict[str, str] | None = None):
    """``assay ARGS`` as a process, with no Prefect server but the workspace's own (or a temporary one)."""
    return typed(*args, home=home, check=check, shared_prefect=False, extra_env=extra_env)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_API_URL"))}
    env.update(ASSAY_HOME=str(home), PREFECT_HOME=str(home / "prefect"), NO_COLOR="1", COLUMNS="80")
    return env


def _until(condition: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Running, not a zombie (the server is reparented when its starter ends; nobody may reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _processes_of(home: Path) -> set[int]:
    """Every live process started on behalf of this workspace: each inherits its ASSAY_HOME."""
    needle = f"ASSAY_HOME={home}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and _alive(int(entry.name)):
                found.add(int(entry.name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


def _flow_runs(api_url: str) -> list[dict]:
    return _post(f"{api_url}/flow_runs/filter", {})


def _task_runs(api_url: str, flow_run_id: str) -> list[dict]:
    """The task runs the server has recorded for one flow run."""
    return _post(f"{api_url}/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})


def _post(url: str, body: dict) -> list[dict]:
    request = Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _doc(home: Path, *args: str, extra_env: dict[str, str] | None = None) -> dict:
    """``assay server ARGS --json``, checked against its model and its committed JSON Schema."""
    document = json.loads(assay("server", *args, "--json", home=home, extra_env=extra_env).stdout)
    validate(document)
    jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{document['schema']}.json").read_text())).validate(document)
    return document


def _status(home: Path) -> dict:
    return _doc(home, "status")


@pytest.fixture(scope="module")
def workspace(assay_process, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the demo bundle loaded, no server ever started in it: copy it, never use it. Every
    test here starts servers and commands as processes, in a copy of it."""
    home = tmp_path_factory.mktemp("server") / "pristine"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    return home


def _copy(workspace: Path, name: str) -> Path:
    home = workspace.parent / name
    shutil.copytree(workspace, home)
    return home


@pytest.fixture(scope="module")
def served(workspace: Path) -> Iterator[tuple[Path, dict]]:
    """A copy of the workspace with its server started; stopped (and checked gone) afterwards."""
    home = _copy(workspace, "served")
    started = _doc(home, "start")
    try:
        yield home, started
    finally:
        stopped = _doc(home, "stop")
    assert stopped["stopped"]["pid"] == started["server"]["pid"] and not stopped["running"]
    _until(lambda: not _processes_of(home), 30, f"every process of {home} ended")


def test_start_reports_the_server_and_status_says_running(served: tuple[Path, dict]) -> None:
    home, started = served
    assert started["running"] and not started["already_running"]
    server = started["server"]
    assert server["url"] == f"http://127.0.0.1:{server['port']}" and server["api_url"] == server["url"] + "/api"
    assert json.loads((home / "prefect" / "server.json").read_text())["pid"] == server["pid"]
    assert _alive(server["pid"])
    status = _status(home)
    assert status["running"] and status["healthy"] and status["server"]["pid"] == server["pid"]
    text = assay("server", "status", home=home).stdout
    assert f"running: {server['url']} (pid {server['pid']}" in text and "answering" in text

    again = assay("server", "start", home=home)
    assert "already running" in again.stdout and server["url"] in again.stdout
    assert _doc(home, "start")["already_running"]
    assert _status(home)["server"]["pid"] == server["pid"]


def test_a_run_uses_the_workspace_server_and_is_listed_by_it(served: tuple[Path, dict]) -> None:
    home, started = served
    api = started["server"]["api_url"]
    before = {r["id"] for r in _flow_runs(api)}
    result = json.loads(assay("run", SUITE, "--json", home=home).stdout)
    assert result["run"]["status"] == "completed"
    new = [r for r in _flow_runs(api) if r["id"] not in before]
    assert new and all(r["state_type"] == "COMPLETED" for r in new), new
    assert [r["parameters"].get("suite") for r in new].count(SUITE) == 1, new
    # its task runs, recorded from the events the command sent, in the server's batches (server.RECORDING)
    (flow_run,) = [r for r in new if r["parameters"].get("suite") == SUITE]
    # a batch can land between a task's Running and its Completed, so wait for the final states themselves
    _until(lambda: [t["state_type"] for t in _task_runs(api, flow_run["id"])] == ["COMPLETED"] * 4, 30,
           "the run's four task runs recorded as completed")

    shown = assay("run", SUITE, home=home).stdout  # no hint: nothing temporary starts
    assert "temporary Prefect server" not in shown and "completed" in shown


BACK_TO_BACK = """
import json
from bench.flows import back_to_back
laps, refused = back_to_back(8)
print(json.dumps({"flows": len(laps), "refused": refused}))
"""
"""Eight flows of four tasks, one after the other, through the benchmark's harness (``flows.back_to_back``):
a flow that fails raises; refusals are counted as Prefect's client logs them."""


def test_flow_runs_back_to_back_are_not_refused_while_the_server_records_the_last_ones(
    served: tuple[Path, dict],
) -> None:
    """The server records a flow's task runs as their events arrive, in SQLite; a flow run created
    meanwhile was refused with 503 ("database is locked") and waited 2 s in Prefect's client (the
    nightly sweep creates its suites' runs this way). The server now retries such a request itself."""
    home, started = served
    env = {**_env(home), "PREFECT_API_URL": started["server"]["api_url"]}
    done = subprocess.run([sys.executable, "-c", BACK_TO_BACK], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"flows": 8, "refused": 0}, result


def test_a_command_killed_while_using_the_server_leaves_only_the_server(served: tuple[Path, dict]) -> None:
    home, started = served
    api, server_pid = started["server"]["api_url"], started["server"]["pid"]
    before = len(_flow_runs(api))
    command = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "run", SUITE], env=_env(home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _until(lambda: len(_flow_runs(api)) > before, 120, "the command's flow run reached the server")
    finally:
        command.send_signal(signal.SIGKILL)
        command.wait()
    _until(lambda: _processes_of(home) == {server_pid}, 30, "nothing but the server is left")
    assert _status(home)["healthy"]


def test_a_second_workspace_gets_its_own_server_and_stop_leaves_nothing(
    served: tuple[Path, dict], workspace: Path
) -> None:
    home = _copy(workspace, "second")
    started = _doc(home, "start")["server"]
    assert started["port"] != served[1]["server"]["port"] and started["pid"] != served[1]["server"]["pid"]
    assert _processes_of(home) == {started["pid"]}

    stopped = assay("server", "stop", home=home).stdout
    assert f"stopped the Prefect server {started['url']} (pid {started['pid']})" in stopped
    assert not _alive(started["pid"]) and not _processes_of(home)
    assert not (home / "prefect" / "server.json").exists()
    status = _status(home)
    assert not status["running"] and status["server"] is None and not status["healthy"]
    assert "nothing to stop" in assay("server", "stop", home=home).stdout
    assert _doc(home, "stop")["stopped"] is None
    assert _status(served[0])["healthy"]  # the other workspace's server is untouched


def test_a_stop_records_what_the_server_still_held(workspace: Path) -> None:
    """The server records task runs in batches (server.RECORDING); here its batches wait ten minutes, so
    the run's task runs are still queued when ``assay server stop`` ends it, and stopping writes them."""
    home = _copy(workspace, "held")
    hold = {"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "600"}  # the user's setting wins
    api = _doc(home, "start", extra_env=hold)["server"]["api_url"]
    try:
        assert json.loads(assay("run", SUITE, "--json", home=home).stdout)["run"]["status"] == "completed"
        (flow_run,) = [r for r in _flow_runs(api) if r["parameters"].get("suite") == SUITE]
        assert _task_runs(api, flow_run["id"]) == []  # held in the batch
    finally:
        assay("server", "stop", home=home)
    api = _doc(home, "start")["server"]["api_url"]
    try:
        recorded = _task_runs(api, flow_run["id"])
        assert len(recorded) == 4 and all(t["state_type"] == "COMPLETED" for t in recorded), recorded
    finally:
        assay("server", "stop", home=home)
    _until(lambda: not _processes_of(home), 30, f"every process of {home} ended")


@pytest.mark.parametrize("owner", ["dead", "someone else"])
def test_a_stale_state_file_is_cleaned(workspace: Path, owner: str) -> None:
    home = _copy(workspace, f"stale-{owner.replace(' ', '-')}")
    if owner == "dead":
        ended = subprocess.Popen([sys.executable, "-c", "pass"])
        ended.wait()
        pid = ended.pid
    else:
        pid = os.getpid()  # alive, and not a Prefect server
    state = home / "prefect" / "server.json"
    state.parent.mkdir(exist_ok=True)
    state.write_text(json.dumps({"pid": pid, "port": 9, "url": "http://127.0.0.1:9",
                                 "started_at": "2026-01-01T00:00:00+00:00", "boot": None}))
    status = _status(home)
    assert not status["running"] and status["server"] is None
    assert not state.exists()
    assert _alive(os.getpid())  # cleaning never signals a pid that is not the server


def test_a_start_killed_midway_leaves_nothing_running(workspace: Path) -> None:
    home = _copy(workspace, "killed-start")
    state = home / "prefect" / "server.json"
    starter = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", "server", "start"], env=_env(home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _until(state.exists, 60, "the starter recorded the server")
        server_pid = json.loads(state.read_text())["pid"]
        assert _alive(server_pid)
    finally:
        starter.send_signal(signal.SIGKILL)
        starter.wait()
    _until(lambda: not _alive(server_pid), 30, "the half-started server was stopped by its watchdog")
    _until(lambda: not _processes_of(home), 30, "no process of the workspace is left")
    assert not _status(home)["running"]
    assert not state.exists()


def test_a_start_that_times_out_says_why_and_leaves_nothing(workspace: Path) -> None:
    home = _copy(workspace, "timed-out")
    failed = assay("server", "start", "--timeout", "1", home=home, check=1)
    log = home / "prefect" / "server.log"
    assert "did not answer within 1 s" in failed.stderr and str(log) in failed.stderr
    assert "ASSAY_SERVER_START_TIMEOUT_SECONDS" in failed.stderr and log.exists()
    assert not (home / "prefect" / "server.json").exists()
    _until(lambda: not _processes_of(home), 30, "no process of the workspace is left")


def test_without_the_server_a_run_says_once_how_to_keep_one(workspace: Path) -> None:
    home = _copy(workspace, "no-server")
    shown = assay("run", SUITE, home=home).stdout
    assert shown.count("`assay server start`") == 1 and "temporary Prefect server" in shown
    assert "assay server start" not in assay("--quiet", "run", SUITE, home=home).stdout
    assert not _processes_of(home)  # the temporary servers ended with their commands
