"""Deployments served for real: a Prefect server process, ``assay deploy``, and a worker process.

Two shapes, each its own module-scoped installation:

- ``embedded``: the SQLite catalog and a local lake in ``ASSAY_HOME``, wide work on threads;
- ``production``: a PostgreSQL catalog, an S3 lake (a moto server), and wide work on a Dask cluster
  (a real ``dask scheduler`` and ``dask worker`` processes, two worker processes) that the worker's
  environment names with ``ASSAY_DASK_ADDRESS``.

Flow runs are asked for through the server's REST API, as any client would; the worker runs them in
processes of its own; what they wrote is read back with the ``assay`` command.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from command_line import assay, assay_process

from assay.flows.demo import DEMO

SUITE = "acme-plumbing/main-line"
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


@dataclass
class Installation:
    shape: str
    home: Path
    env: dict[str, str]
    api: str
    deployed: dict
    dask_address: str | None
    logs: Path

    def assay(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``assay ARGS`` as a process of the installation's, in its environment."""
        return assay_process(*args, env=self.env, check=0 if check else None)

    def json(self, *args: str) -> dict:
        return json.loads(self.assay(*args, "--json").stdout)

    def client(self) -> httpx.Client:
        """A client of the server's REST API that retries what Prefect's own client retries (a busy SQLite
        database answers 503 for a moment)."""
        return httpx.Client(base_url=self.api, timeout=30, trust_env=False,
                            transport=_Retrying(httpx.HTTPTransport()))

    def deployment_id(self, name: str) -> str:
        with self.client() as c:
            return c.get(f"/deployments/name/{name}").raise_for_status().json()["id"]

    def trigger(self, name: str, parameters: dict) -> str:
        """Ask the server for a flow run of the deployment ``name``; its id."""
        with self.client() as c:
            made = c.post(f"/deployments/{self.deployment_id(name)}/create_flow_run", json={"parameters": parameters})
            return made.raise_for_status().json()["id"]

    def wait(self, flow_run_id: str, timeout: float = 300) -> dict:
        """The flow run once the worker has run it to a final state."""
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while time.monotonic() < deadline:
                run = c.get(f"/flow_runs/{flow_run_id}").raise_for_status().json()
                if run["state"]["type"] in TERMINAL:
                    return run
                time.sleep(0.5)
        raise AssertionError(f"flow run {flow_run_id} not final within {timeout:g} s; worker log:\n{self.worker_log()}")

    def worker_log(self) -> str:
        return (self.logs / "worker.log").read_text()[-4000:]


class _Retrying(httpx.BaseTransport):
    """Retry 429, 502 and 503 answers with a short backoff, at most 10 times."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(10):
            response = self.inner.handle_request(request)
            if response.status_code not in (429, 502, 503) or attempt == 9:
                return response
            response.close()
            time.sleep(min(0.2 * 2**attempt, 3))
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.inner.close()


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_", "AWS_"))}
    return env | {
        "ASSAY_HOME": str(home), "COLUMNS": "120",
        "PREFECT_WORKER_QUERY_SECONDS": "1",  # the worker asks for flow runs every second, not every 10
        # the server's scheduler: a pass every 5 s (not 60), and 5 runs ahead per deployment (not 100),
        # so a loaded machine's SQLite-backed server still schedules every deployment within the test
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
        "PREFECT_SERVER_SERVICES_SCHEDULER_MAX_RUNS": "5",
    }


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    """Stop a process and everything it started (its own session)."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _dask_cluster(env: dict[str, str], logs: Path, stack: list) -> str:
    """A Dask scheduler and a worker with two worker processes, each a real process; the scheduler's address."""
    scheduler_file = logs / "dask-scheduler.json"
    bin_dir = Path(sys.executable).parent
    scheduler = _start([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                        "--scheduler-file", str(scheduler_file)], env, logs / "dask-scheduler.log")
    stack.append(lambda: _stop(scheduler))
    workers = _start([str(bin_dir / "dask"), "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
                      "--nthreads", "1", "--no-dashboard"], env | {"POLARS_MAX_THREADS": "1"}, logs / "dask-worker.log")
    stack.append(lambda: _stop(workers))
    from distributed import Client

    deadline = time.monotonic() + 120
    while not scheduler_file.exists():
        assert time.monotonic() < deadline, (logs / "dask-scheduler.log").read_text()
        time.sleep(0.2)
    address = json.loads(scheduler_file.read_text())["address"]
    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    return address


@pytest.fixture(scope="module", params=["embedded", pytest.param("production", marks=pytest.mark.postgres)])
def installation(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    shape = request.param
    root = tmp_path_factory.mktemp(f"deploy-{shape}")
    home, logs = root / "home", root / "logs"
    logs.mkdir()
    env = _clean_env(home)
    stack: list = []
    address = None
    try:
        if shape == "production":
            moto = request.getfixturevalue("moto_server")
            from s3 import fresh_lake

            lake = fresh_lake(moto)
            env |= moto.env | {"ASSAY_CATALOG_URL": request.getfixturevalue("module_postgres_url"), "ASSAY_LAKE_URL": lake.url}
            address = _dask_cluster(env, logs, stack)
            env["ASSAY_DASK_ADDRESS"] = address
        install = Installation(shape, home, env, "", {}, address, logs)
        install.assay("init")
        install.assay("load", str(DEMO / "bundle.yaml"))
        started = install.json("server", "start")
        stack.append(lambda: install.assay("server", "stop", check=False))
        install.api = started["server"]["api_url"]
        install.deployed = install.json("deploy")
        worker = _start([sys.executable, "-m", "assay.flows.cli", "worker", "--pool", "assay"], env, logs / "worker.log")
        stack.append(lambda: _stop(worker))
        yield install
    finally:
        with contextlib.ExitStack() as undoing:  # every undo runs, the last first, whichever of them fails
            for undo in stack:
                undoing.callback(undo)


def test_deploy_registers_every_job_on_a_process_pool(installation: Installation) -> None:
    doc = installation.deployed
    by_name = {d["deployment"]: d for d in doc["deployments"]}
    assert by_name["reap/assay"]["schedule"] == "every 60 s"
    assert by_name["collect/assay"]["schedule"] == "every 30 s"
    for nightly in ("compact/assay", "vacuum/assay", "nightly-sweep/assay"):
        assert by_name[nightly]["schedule"].startswith("cron ") and by_name[nightly]["schedule"].split()[2] != "*"
    assert by_name["projections/assay"]["schedule"].startswith("cron 15 * * * *")
    assert by_name["run-suite/assay"]["schedule"] == "on demand"
    with installation.client() as c:
        pool = c.get("/work_pools/assay").raise_for_status().json()
    assert pool["type"] == "process"
    again = installation.json("deploy")  # registering again updates in place
    assert [d["id"] for d in again["deployments"]] == [d["id"] for d in doc["deployments"]]
    assert again["pool_created"] is False


def test_a_triggered_run_suite_lands_evidence_outcomes_and_stamped_verdicts(installation: Installation) -> None:
    flow_run = installation.wait(installation.trigger("run-suite/assay", {"suite": SUITE}))
    assert flow_run["state"]["type"] == "COMPLETED", installation.worker_log()
    runs = installation.json("runs", "list", "--suite", SUITE)["runs"]
    assert runs and runs[0]["status"] == "completed"
    shown = installation.json("runs", "show", runs[0]["run_id"])["run"]
    assert shown["case_runs"] == shown["case_count"] > 0  # evidence: one case run per case
    assert shown["judged"]["case_runs"] == shown["case_count"]  # stored in the lake, and read back from it
    assert shown["judged"]["outcomes"] == shown["case_count"]  # one outcome per case run
    verdicts = installation.json("verdicts", runs[0]["run_id"])
    stamped = {v["consumer"]: v["stamped"] for v in verdicts["verdicts"]}
    assert stamped and all(v in ("pass", "fail", "error") for v in stamped.values())
    with installation.client() as c:
        artifact = c.get("/artifacts/verdicts-acme-plumbing-main-line/latest").raise_for_status().json()
    assert artifact["flow_run_id"] == flow_run["id"]


def test_a_triggered_rejudge_maps_over_the_configured_task_runner(installation: Installation) -> None:
    run_id = installation.json("runs", "list", "--suite", SUITE)["runs"][0]["run_id"]
    before = installation.json("runs", "show", run_id)["run"]["judged"]
    flow_run = installation.wait(installation.trigger("rejudge/assay", {"run_ids": [run_id], "force": True}))
    assert flow_run["state"]["type"] == "COMPLETED", installation.worker_log()
    after = installation.json("runs", "show", run_id)["run"]["judged"]
    assert after["passes"] == before["passes"] + 1  # one more judging pass over the stored evidence
    assert after["outcomes"] == before["outcomes"] + before["case_runs"]
    assert after["last_trigger"] == "rejudge"
    if installation.dask_address:
        from distributed import Client

        with Client(installation.dask_address, timeout=30) as client:
            done = client.run(lambda dask_worker: dask_worker.state.transition_counter)
        assert sum(done.values()) > 0, "the re-judge's tasks never reached the Dask workers"


def test_a_triggered_reap_ends_an_abandoned_run(installation: Installation) -> None:
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import open_workspace

    settings = Settings(home=installation.home, catalog_url=installation.env.get("ASSAY_CATALOG_URL"),
                        lake_url=installation.env.get("ASSAY_LAKE_URL"))
    ws = open_workspace(settings)
    try:  # a run created with a deadline that then passes, and nobody ever claims it
        run_id = ops.start_run(ws, SUITE, None, timedelta(seconds=1)).run_id
    finally:
        ws.close()
    time.sleep(1.5)  # past the deadline the run was created with (the clock, not synchronisation)
    flow_run = installation.wait(installation.trigger("reap/assay", {}))
    assert flow_run["state"]["type"] == "COMPLETED", installation.worker_log()
    shown = installation.json("runs", "show", run_id)
    assert shown["run"]["status"] == "timed_out"


def test_the_schedules_produce_scheduled_flow_runs(installation: Installation) -> None:
    scheduled = {"reap/assay": 60, "collect/assay": 30, "compact/assay": 86400, "vacuum/assay": 86400,
                 "projections/assay": 3600, "nightly-sweep/assay": 86400}
    deadline, found = time.monotonic() + 300, {}
    with installation.client() as c:
        for name in scheduled:  # asked one deployment at a time: the busy schedules must not crowd out the rest
            body = {"deployments": {"id": {"any_": [installation.deployment_id(name)]}},
                    "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}}, "sort": "EXPECTED_START_TIME_ASC",
                    "limit": 50}
            while True:  # the server's scheduler service fills schedules on its own loop
                asked = datetime.now(UTC)
                runs = c.post("/flow_runs/filter", json=body).raise_for_status().json()
                # the schedule's own runs, not a triggered run (or its retry) still waiting
                times = [datetime.fromisoformat(r["expected_start_time"]) for r in runs if r["auto_scheduled"]]
                if len(times) >= 3 or time.monotonic() > deadline:
                    break
                time.sleep(1)
            found[name] = times, asked
    for name, gap in scheduled.items():
        times, asked = found[name]
        assert len(times) >= 2, (name, times)
        # consecutive runs of the schedule are its interval apart (a re-registration may leave one run of the
        # earlier anchor next to the new ones, and a worker takes the due ones: some pair shows the interval)
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
        assert any(g == pytest.approx(gap, abs=1) for g in gaps), (name, gaps)
        # and the schedule is live: its next run is at most one interval ahead (plus the worker's prefetch
        # window, which takes a run a little before it is due). Runs already due may still wait for a busy
        # worker, so the earliest one says nothing about the schedule.
        upcoming = [t for t in times if t > asked]
        assert upcoming and upcoming[0] <= asked + timedelta(seconds=gap + 15), (name, times, asked)


def test_a_triggered_nightly_sweep_runs_each_suite_on_its_declared_runners(
    installation: Installation, tmp_path: Path
) -> None:
    """Last of the installation's tests: main-line then declares two runners, so a run of it names one."""
    import shutil

    import yaml

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    raw = yaml.safe_load((demo / "bundle.yaml").read_text())
    suites = {f"{team['id']}/{s['key']}": s for team in raw["teams"] for s in team["suites"]}
    suites[SUITE]["runners"] = ["config_check", "fixed"]
    suites["acme-plumbing/chat-line"]["tags"] = ["nightly"]  # a conversation declaring no runner: refused
    (demo / "declared.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    installation.assay("load", str(demo / "declared.yaml"))
    before = {r["run_id"] for r in installation.json("runs", "list")["runs"]}

    flow_run = installation.wait(installation.trigger("nightly-sweep/assay", {}))
    assert flow_run["state"]["type"] == "COMPLETED", installation.worker_log()
    new = [r for r in installation.json("runs", "list")["runs"] if r["run_id"] not in before]
    ran = sorted((f"{r['team_id']}/{r['suite_key']}", r["runner"]) for r in new)
    assert ran == [(SUITE, "config_check"), (SUITE, "fixed"), ("northside-hvac/recorded-calls", "recorded")]


def test_deploy_without_a_lasting_server_says_how_to_get_one(tmp_path: Path) -> None:
    """In this process the harness's server is a temporary one, as a command's own would be."""
    assay("init", home=tmp_path / "home")
    done = assay("deploy", home=tmp_path / "home", check=1)
    assert "assay server start" in done.stderr and "PREFECT_API_URL" in done.stderr

