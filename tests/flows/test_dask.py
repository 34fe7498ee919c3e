"""Wide work on Dask: the same flows, their tasks mapped over Dask worker processes by configuration.

A real ``distributed.LocalCluster`` of worker processes runs in the test; the real command line
(``assay rejudge``, ``assay lake compact``) is pointed at it with ``ASSAY_DASK_ADDRESS``. Its results must
equal those of the same command on Prefect's default thread pool over a copy of the same workspace, on
the embedded default (SQLite, local lake) and on PostgreSQL with an S3 lake. ``ASSAY_DASK_WORKERS``
makes the command start a cluster of its own.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from assay.core.errors import ConfigError
from assay.core.settings import Settings
from assay.flows.demo import DEMO
from assay.flows.task_runners import WORKER_ENV, task_runner, wide

from command_line import assay

COMPARED = ["case_run_id", "assertion_key", "assertion_version", "met", "value", "reason"]


@pytest.fixture(scope="module")
def judged_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace, through the real command line: the demo bundle, three runs, then the revised bundle
    (one reworded assertion: a re-judge evaluates it afresh)."""
    home = tmp_path_factory.mktemp("dask") / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    for suite in ("acme-plumbing/main-line", "northside-hvac/recorded-calls", "acme-plumbing/main-line"):
        assay("run", suite, home=home)
    assay("load", str(DEMO / "revised.yaml"), home=home)
    return home


@dataclass(frozen=True)
class Rejudged:
    """``assay rejudge`` of every run of the workspace on Prefect's default thread pool, in a copy."""

    selection: list[str]
    """``--run RUN`` for each of the three runs."""
    document: dict
    before: pl.DataFrame
    after: pl.DataFrame


@pytest.fixture(scope="module")
def on_threads(judged_home: Path) -> Rejudged:
    runs = json.loads(assay("runs", "list", "--json", home=judged_home).stdout)["runs"]
    assert len(runs) == 3, runs
    selection = [arg for run in runs for arg in ("--run", run["run_id"])]
    plain = judged_home.parent / "thread-pool"
    shutil.copytree(judged_home, plain)
    document = json.loads(assay("rejudge", *selection, "--json", home=plain).stdout)
    assert document["runs"] == 3 and document["evaluated"] > 0, document
    return Rejudged(selection, document, _current_results(judged_home), _current_results(plain))


def _current_results(home: Path, **urls: str) -> pl.DataFrame:
    """Each case run's latest outcome's results, without ids or times that differ between workspaces."""
    from assay.flows.workspace import open_workspace
    from assay.transforms.verdicts import latest

    ws = open_workspace(Settings(home=home, **urls))
    try:
        return latest(ws.lake.scan("assertion_results")).select(COMPARED).collect().sort(COMPARED, nulls_last=True)
    finally:
        ws.close()


@pytest.fixture(scope="session")
def dask_local_cluster():
    """:func:`_cluster`: a Dask cluster of worker processes on this machine, and a client of it."""
    return _cluster


@pytest.fixture
def dask_cluster(dask_local_cluster, judged_home: Path, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, Path]]:
    """Two worker processes of one thread each, started with ASSAY_HOME naming a copy of the workspace
    (each worker process inherits the environment: their tasks open that workspace)."""
    home = tmp_path / "on-dask"
    shutil.copytree(judged_home, home)
    with dask_local_cluster(monkeypatch, ASSAY_HOME=str(home)) as client:
        yield client, home


@contextmanager
def _cluster(monkeypatch: pytest.MonkeyPatch, cluster_kwargs: dict | None = None, **env: str) -> Iterator[object]:
    """A client of a local cluster (by default: two worker processes of one thread), whose workers inherit
    ``env`` (set before they start)."""
    from distributed import Client, LocalCluster

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if "ASSAY_HOME" in env:
        monkeypatch.setenv("PREFECT_HOME", str(Path(env["ASSAY_HOME"]) / "prefect"))
    monkeypatch.setenv("PREFECT_LOGGING_TO_API_ENABLED", "false")  # the CLI's temporary server leaves first
    kwargs = cluster_kwargs or {"n_workers": 2, "processes": True, "threads_per_worker": 1, "dashboard_address": ":0"}
    with LocalCluster(**kwargs) as cluster, Client(cluster) as client:
        yield client


def test_rejudge_on_dask_workers_equals_the_default_runner(on_threads: Rejudged, dask_cluster) -> None:
    from distributed import get_task_stream

    client, home = dask_cluster
    workers = client.run(os.getpid)  # worker address -> its process id
    env = {"ASSAY_DASK_ADDRESS": client.scheduler.address}
    with get_task_stream(client) as stream:
        on_dask = json.loads(assay("rejudge", *on_threads.selection, "--json", home=home, extra_env=env).stdout)

    # one task per run, each in a worker process, which opened the workspace of its own environment
    tasks = [t for t in stream.data if "judge_runs_task" in t["key"]]
    assert len(tasks) == 3 and {t["worker"] for t in tasks} <= set(workers), stream.data
    assert os.getpid() not in workers.values()
    opened = client.run(_worker_homes)
    assert {str(home.resolve())} == {h for homes in opened.values() for h in homes}, opened

    assert on_dask == on_threads.document
    after = _current_results(home)
    assert after.equals(on_threads.after), (after, on_threads.after)
    changed = after.join(on_threads.before, on=["case_run_id", "assertion_key", "assertion_version"], how="anti")
    assert changed.height > 0 and set(changed["assertion_key"]) == {"out_of_area_clause"}, changed

    # compaction maps one task per lake table over the workers too
    with get_task_stream(client) as stream:
        compacted = json.loads(assay("lake", "compact", "--json", home=home, extra_env=env).stdout)
    assert compacted["partitions"] > 0 and [t for t in stream.data if "compact_task" in t["key"]], stream.data
    assert _current_results(home).equals(after)


def test_rejudge_on_a_temporary_cluster_prints_only_its_result(assay_process, judged_home: Path,
                                                              on_threads: Rejudged, tmp_path: Path) -> None:
    """ASSAY_DASK_WORKERS: the command starts a cluster of its own for the flow run, and keeps it quiet (what
    reaches its terminal: a process)."""
    home = tmp_path / "own-cluster"
    shutil.copytree(judged_home, home)
    proc = assay_process("rejudge", *on_threads.selection, home=home, extra_env={"ASSAY_DASK_WORKERS": "2"},
                         columns=80)
    doc = on_threads.document
    said = f"judged {doc['case_runs']} case run(s) of 3 run(s): {doc['outcomes']} new outcome(s)"
    assert proc.stdout.startswith(said) and proc.stderr == "", (proc.stdout, proc.stderr)
    assert _current_results(home).equals(on_threads.after)


@pytest.mark.postgres
def test_rejudge_on_dask_with_a_postgres_catalog_and_an_s3_lake(dask_local_cluster, postgres_url: str, s3_lake,
                                                               tmp_path: Path, on_threads: Rejudged,
                                                               monkeypatch) -> None:
    """The production shape: the workers reach the same PostgreSQL catalog and S3 lake as the command."""
    from distributed import get_task_stream

    home = tmp_path / "home"
    urls = {"ASSAY_CATALOG_URL": postgres_url, "ASSAY_LAKE_URL": s3_lake.url}
    assay("init", home=home, extra_env=urls)
    assay("load", str(DEMO / "bundle.yaml"), home=home, extra_env=urls)
    for suite in ("acme-plumbing/main-line", "northside-hvac/recorded-calls", "acme-plumbing/main-line"):
        assay("run", suite, home=home, extra_env=urls)
    assay("load", str(DEMO / "revised.yaml"), home=home, extra_env=urls)
    runs = json.loads(assay("runs", "list", "--json", home=home, extra_env=urls).stdout)["runs"]
    selection = [arg for run in runs for arg in ("--run", run["run_id"])]
    with dask_local_cluster(monkeypatch, ASSAY_HOME=str(home), **urls) as client, get_task_stream(client) as stream:
        env = {**urls, "ASSAY_DASK_ADDRESS": client.scheduler.address}
        on_dask = json.loads(assay("rejudge", *selection, "--json", home=home, extra_env=env).stdout)
        opened = client.run(_worker_catalogs)
    assert len([t for t in stream.data if "judge_runs_task" in t["key"]]) == 3, stream.data
    assert {(postgres_url, s3_lake.url)} == {c for catalogs in opened.values() for c in catalogs}, opened
    # the same demo evidence, judged the same (ids differ: another workspace)
    assert on_dask == on_threads.document
    results = _current_results(home, catalog_url=postgres_url, lake_url=s3_lake.url).drop("case_run_id")
    assert results.sort(results.columns, nulls_last=True).equals(
        on_threads.after.drop("case_run_id").sort(results.columns, nulls_last=True))


def _worker_homes() -> list[str]:
    """The workspaces a Dask worker process opened for tasks (run on each worker by ``client.run``)."""
    from assay.flows import flow_context

    return sorted(str(ws.settings.home.resolve()) for ws in flow_context._workers.values())


def _worker_catalogs() -> list[tuple[str, str]]:
    """The catalog and lake of each workspace a Dask worker process opened."""
    from assay.flows import flow_context

    return sorted((ws.settings.resolved_catalog_url, ws.settings.resolved_lake_url)
                  for ws in flow_context._workers.values())


def _engine_threads() -> tuple[int, int]:
    """Polars' pool and a DuckDB connection of Assay's, in this process: their thread counts."""
    import polars

    from assay.core.engines import duckdb_connect

    con = duckdb_connect()
    try:
        return polars.thread_pool_size(), con.execute("SELECT current_setting('threads')").fetchone()[0]
    finally:
        con.close()


def test_a_temporary_clusters_workers_run_their_engines_on_one_thread(dask_local_cluster,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster ``ASSAY_DASK_WORKERS`` starts: processes of one thread whose Polars and DuckDB use one
    thread each, whatever the command's own environment says (here: four)."""
    kwargs = task_runner(Settings(dask_workers=2)).cluster_kwargs
    with dask_local_cluster(monkeypatch, kwargs, POLARS_MAX_THREADS="4") as client:
        threads = client.run(_engine_threads)
    assert sorted(threads.values()) == [(1, 1), (1, 1)], threads


@pytest.mark.parametrize(("settings", "expected"), [
    (Settings(dask_workers=3), ("distributed.LocalCluster", {"n_workers": 3, "processes": True, "threads_per_worker": 1,
                                                              "dashboard_address": ":0", "env": WORKER_ENV})),
    (Settings(dask_address="tcp://10.0.0.7:8786"), "tcp://10.0.0.7:8786"),
    (Settings(), None),
], ids=["workers", "address", "neither"])
def test_wide_picks_the_task_runner_from_the_settings(settings: Settings, expected) -> None:
    from assay.flows.orchestration import rejudge

    chosen = wide(rejudge, settings)
    if expected is None:
        assert chosen is rejudge
        return
    from prefect_dask import DaskTaskRunner

    runner = chosen.task_runner
    assert isinstance(runner, DaskTaskRunner) and chosen.fn is rejudge.fn and chosen.name == rejudge.name
    if isinstance(expected, str):
        assert runner.address == expected and runner.cluster_class is None
    else:
        assert (runner.cluster_class, runner.cluster_kwargs) == expected and runner.address is None


def test_wide_reads_the_environment_when_called(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from assay.flows.orchestration import compact

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path))
    for name in ("ASSAY_DASK_ADDRESS", "ASSAY_DASK_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    assert wide(compact) is compact
    monkeypatch.setenv("ASSAY_DASK_ADDRESS", "tcp://127.0.0.1:8786")
    assert wide(compact).task_runner.address == "tcp://127.0.0.1:8786"
    monkeypatch.setenv("ASSAY_DASK_WORKERS", "2")
    with pytest.raises(ConfigError, match="both ASSAY_DASK_ADDRESS .* and ASSAY_DASK_WORKERS"):
        wide(compact)
