"""Every job is a flow: the commands call the flows, each flow run opens one workspace (one catalog
engine, disposed at its end), a re-judge is mapped one task per run, and the verdicts are published as
Prefect artifacts. A catalog behind the code's schema is refused until `assay init` upgrades it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assay.core.errors import ConfigError
from assay.core.settings import Settings
from assay.flows import judging
from assay.flows.cli import main
from assay.flows.demo import SUITES
from assay.flows.workspace import Workspace, open_workspace
from assay.storage.catalog import engine as catalog_engine
from assay.storage.catalog.engine import HEAD


def cli(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> tuple[str, str]:
    """The command line, in this process (so its flows report to the test harness's Prefect server)."""
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    assert (done.value.code or 0) == code
    captured = capsys.readouterr()
    return captured.out, captured.err


def flow_runs(name: str, since: datetime) -> list:
    """The flow runs of the flow ``name`` started since ``since``, from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterStartTime

    with get_client(sync_client=True) as client:
        return client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name])),
                                     flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)))


def artifact_rows(key: str) -> list[dict]:
    """The rows of the newest table artifact ``key``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                      sort=ArtifactSort.CREATED_DESC, limit=1)
    assert found, f"no artifact {key!r}"
    data = found[0].data
    return json.loads(data) if isinstance(data, str) else data


@pytest.fixture
def home(assay_home: Path, demo_ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo workspace, closed (the commands and flows open their own); Prefect's settings restored after."""
    demo_ws.close()
    monkeypatch.setenv("PREFECT_HOME", str(assay_home / "prefect"))  # the command line sets both; undone after
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "CRITICAL")
    return assay_home


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict]]:
    """Every catalog engine created meanwhile (a real engine, counted) and whether it was disposed."""
    created: list[dict] = []
    real = catalog_engine.create_catalog_engine

    def counted(url: str):
        engine = real(url)
        entry = {"engine": engine, "disposed": False}
        dispose = engine.dispose

        def disposing(*args, **kwargs):
            entry["disposed"] = True
            return dispose(*args, **kwargs)

        engine.dispose = disposing
        created.append(entry)
        return engine

    monkeypatch.setattr(catalog_engine, "create_catalog_engine", counted)
    yield created


def test_every_command_goes_through_its_flow(prefect_harness, home: Path, capsys) -> None:
    def through(flow: str, *argv: str) -> str:
        since = datetime.now(UTC)
        out, _ = cli(capsys, *argv)
        runs = flow_runs(flow, since)
        assert [r.state.type.value for r in runs] == ["COMPLETED"], (flow, argv)
        return out

    doc = json.loads(through("run-suite", "run", SUITES[0], "--json"))
    run_id = doc["run"]["run_id"]
    through("run-suite", "run", SUITES[1])
    assert json.loads(through("judge", "judge", run_id, "--json"))["judged"]["runs"] == 1
    assert json.loads(through("rejudge", "rejudge", "--team", "acme-plumbing", "--json"))["runs"] == 1
    rescored = json.loads(through("rescore-materialise", "rescore", SUITES[0], "--consumer", "blueprint_ci",
                                  "--materialise", "--json"))
    assert [r["run_id"] for r in rescored["runs"]] == [run_id]
    assert through("reap", "reap").startswith("timed out 0 run(s)")
    assert json.loads(through("collect", "collect", "--json"))["outstanding"] == 0
    assert json.loads(through("compact", "lake", "compact", "--json"))["schema"] == "assay.lake.compact"
    assert json.loads(through("vacuum", "lake", "vacuum", "--json"))["schema"] == "assay.lake.vacuum"
    assert json.loads(through("lake-migrate", "lake", "migrate", "--json"))["tables"] == {}
    ws = open_workspace()
    try:
        assert ws.lake.read("verdicts")["run_id"].to_list() == [run_id]  # the materialised re-score
    finally:
        ws.close()


def test_a_flow_run_opens_one_engine_and_disposes_of_it(prefect_harness, home: Path, engines: list[dict]) -> None:
    from assay.flows.orchestration import judge, reap, rejudge, run_suite

    def one_engine(job, *args):
        before = len(engines)
        result = job(*args)
        opened = engines[before:]
        assert len(opened) == 1 and opened[0]["disposed"], (job.name, len(opened))
        return result

    ids = [one_engine(run_suite, suite)["run"]["run_id"] for suite in SUITES]
    one_engine(judge, ids[0])
    one_engine(rejudge, ids)  # two mapped tasks, one engine
    one_engine(reap)


def test_a_rejudge_mapped_per_run_adds_up_to_one_pass_over_all_runs(prefect_harness, home: Path,
                                                                    tmp_path: Path) -> None:
    from assay.flows.orchestration import rejudge, run_suite

    ids = [run_suite(suite)["run"]["run_id"] for suite in SUITES]
    twin = tmp_path / "twin"
    shutil.copytree(home, twin)  # the same catalog and lake: one re-judged by the flow, one in one call
    mapped = rejudge(ids, force=True)
    ws = open_workspace(Settings(home=twin))
    try:
        single = judging.judge_runs(ws, ids, trigger="rejudge", force=True)
        assert mapped == single and mapped["runs"] == 2 and mapped["evaluated"] > 0
        rows = artifact_rows("rejudge")  # what each run's task judged
        assert [r["run_id"] for r in rows] == ids and all(r["runs"] == 1 for r in rows)
        assert sum(r["evaluated"] for r in rows) == mapped["evaluated"]
    finally:
        ws.close()


def test_each_run_publishes_its_verdict_table(prefect_harness, home: Path) -> None:
    from assay.flows.orchestration import judge, run_suite

    result = run_suite(SUITES[1])
    run_id = result["run"]["run_id"]
    rows = artifact_rows("verdicts-northside-hvac-recorded-calls")
    assert {(r["run_id"], r["consumer"], r["verdict"]) for r in rows} == {
        (run_id, v["consumer"], v["verdict"]) for v in result["verdicts"]}
    assert {r["consumer"] for r in rows} == {"blueprint_ci", "publish_gate", "nightly_sweep"}
    judged = judge(run_id)
    assert [(r["consumer"], r["verdict"]) for r in artifact_rows(f"judged-{run_id.lower()}")] == [
        (v["consumer"], v["verdict"]) for v in judged["verdicts"]]


def test_a_catalog_behind_the_code_is_refused_until_init_upgrades_it(assay_home: Path, capsys,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(assay_home / "prefect"))
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "CRITICAL")
    with pytest.raises(ConfigError, match=r"has no schema yet.*run `assay init`"):
        open_workspace().engine
    older = catalog_engine.create_catalog_engine(Settings().resolved_catalog_url)
    catalog_engine.migrate(older, "0003")
    older.dispose()
    _, err = cli(capsys, "runs", "list", code=1)
    assert "is at schema revision 0003" in err and f"needs revision {HEAD}" in err and "assay init" in err
    for _ in range(2):  # init upgrades an existing workspace, and again changes nothing
        cli(capsys, "init")
        ws = open_workspace()
        try:
            assert catalog_engine.current_revision(ws.engine) == HEAD
        finally:
            ws.close()
    out, _ = cli(capsys, "runs", "list", "--json")
    assert json.loads(out)["runs"] == []
    newer = catalog_engine.create_catalog_engine(Settings().resolved_catalog_url)
    with newer.begin() as conn:  # as if a newer Assay had run `assay init` on it (a worker not yet upgraded)
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    newer.dispose()
    _, err = cli(capsys, "runs", "list", code=1)
    assert "is at schema revision 9999, newer than this Assay knows" in err and "install that version" in err


def test_a_retried_task_uses_its_flow_runs_workspace(prefect_harness, home: Path, engines: list[dict],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlalchemy as sa

    from assay.flows import operations as ops
    from assay.flows.orchestration import reap
    from assay.flows.upkeep_flows import reap_task

    seen: list[Workspace] = []
    real = ops.reap

    def flaky(ws: Workspace) -> dict:
        seen.append(ws)
        if len(seen) == 1:  # the database was momentarily away: the task is retried
            raise sa.exc.OperationalError("SELECT 1", {}, Exception("server closed the connection"))
        return real(ws)

    monkeypatch.setattr(ops, "reap", flaky)
    monkeypatch.setattr(reap_task, "retry_delay_seconds", [0])  # the retry at once: what is proven is which workspace
    assert reap()["lease_expired"] == []
    assert len(seen) == 2 and seen[0] is seen[1]
    assert len(engines) == 1 and engines[0]["disposed"]


def test_a_command_waits_on_its_flow_runs_without_a_heartbeat(prefect_harness) -> None:
    from prefect import flow
    from prefect.settings import get_current_settings, temporary_settings

    from assay.flows.orchestration import attend

    @flow(name="heartbeat-probe")
    def probe() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    with temporary_settings(restore_defaults={"flows.heartbeat_frequency"}):  # Prefect's, as a worker has it
        assert get_current_settings().flows.heartbeat_frequency == 180  # a worker's flow runs keep the heartbeat
        assert attend(probe) is None  # a command's do not: it would hold the command up to a second
        assert get_current_settings().flows.heartbeat_frequency == 180  # and only for that call


def test_the_flows_kept_elsewhere_are_declared_only_when_asked_for() -> None:
    """A command running one flow does not declare the others; each name still gives its own flow."""
    code = (
        "import sys\n"
        "from assay.flows import orchestration as o\n"
        "print(sorted({m for m in o.ELSEWHERE.values() if 'assay.flows' + m in sys.modules}))\n"
        "print(sorted(name for name in o.ELSEWHERE if getattr(o, name).fn.__name__ != name))\n"
        "print(sorted(set(o.ELSEWHERE) - set(o.__all__)))\n"
    )
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # no temporary server to bind: none imported
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "[]", "[]"], out


def test_a_commands_flow_run_loads_no_certificate_bundle_over_plain_http(prefect_harness, home: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefect builds a verifying TLS context for each client it makes (25-35 ms: its CA bundle), even for
    an ``http://`` API; a command's flow run, its tasks and its artifact share one client built without."""
    import ssl

    from prefect.context import SyncClientContext
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from assay.flows import orchestration as o

    assert PREFECT_API_URL.value().startswith("http://")  # the harness's server, as the workspace's is
    made: list[str] = []
    real = ssl.create_default_context

    def counted(*args, **kwargs):
        made.append(kwargs.get("cafile") or "default")
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    since = datetime.now(UTC)
    result = o.attend(o.run_suite, SUITES[1])
    assert made == []
    assert [r.state_name for r in flow_runs("run-suite", since)] == ["Completed"]
    rows = artifact_rows("verdicts-northside-hvac-recorded-calls")
    assert {r["run_id"] for r in rows} == {result["run"]["run_id"]}
    o.reap()  # called as a worker's flow-run process calls it: Prefect's own client, bundle loaded
    assert made, "the count above could not fail: Prefect's own client no longer loads its bundle"
    with temporary_settings(updates={PREFECT_API_URL: "https://prefect.example/api"}), o._plain_http_client():
        assert SyncClientContext.get() is None  # over https, Prefect's own client and its verification


def test_no_task_is_answered_from_a_cache() -> None:
    """Every task has effects recorded in the catalog and the lake: none may be skipped for a cached result."""
    import importlib

    from prefect import Task
    from prefect.cache_policies import NO_CACHE

    from assay.flows import orchestration as o

    modules = [o, *(importlib.import_module(m, "assay.flows") for m in set(o.ELSEWHERE.values()))]
    tasks = {f"{m.__name__}.{name}": t for m in modules for name, t in vars(m).items() if isinstance(t, Task)}
    assert len(tasks) >= 10
    assert {name for name, t in tasks.items() if t.cache_policy is not NO_CACHE} == set()


@pytest.mark.parametrize(("argv", "said"), [
    (("run", "acme-plumbing/main-lin"), "main-line"),                          # a mistyped suite: its nearest named
    (("run", SUITES[0], "--runner", "vapi_chatt"), "vapi_chat"),                # a mistyped runner
    (("run", SUITES[1], "--runner", "vapi_chat"), "cannot execute suite"),      # a runner that cannot take it
    (("rescore", SUITES[0], "--consumer", "blueprint_cii", "--materialise"), "blueprint_ci"),
    (("rescore", "acme-plumbing/nowhere", "--consumer", "blueprint_ci", "--materialise"), "nowhere"),
])
def test_a_mistyped_command_starts_no_flow_run(prefect_harness, home: Path, capsys, argv: tuple[str, ...],
                                               said: str) -> None:
    """A command whose names or options cannot work says so and exits 1 before any flow run exists: Prefect
    never shows a FAILED flow run for a typo."""
    since = datetime.now(UTC)
    _, err = cli(capsys, *argv, code=1)
    assert err.startswith("error: ") and said in err
    assert flow_runs("run-suite", since) == [] and flow_runs("rescore-materialise", since) == []
