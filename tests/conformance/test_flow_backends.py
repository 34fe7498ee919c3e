"""The conformance kit through the flows: every installed runner, on each catalog and each lake.

For each runner, on {SQLite, PostgreSQL} x {local lake, S3 lake} (the S3 lakes in a test of their own: it
needs moto's server): a workspace on that catalog and lake,
a suite for the runner (:func:`kit.flow_suite`: assertions its evidence supports, a consumer requiring
them, its own example target), then the flows in this process as a deployment runs them: ``run_suite``,
``collect`` when the runner waits at its vendor, ``rejudge``, ``reap``. The run ends final; its evidence
is in the lake; every case run has an outcome and a result per assertion; the consumer's verdict is
stamped; re-judging adds one outcome per case run; reaping finds nothing to do. A runner's declared gap
in this test is a strict xfail, as in :mod:`test_runner_contract`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from kit import assertions_for, flow_suite, per_runner

from assay.core.plugins import runner_class
from assay.flows.workspace import Workspace, open_workspace
from assay.storage.catalog.runs import get_run, run_details

CATALOGS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _workspace(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, home: Path,
               lake_url: str) -> Iterator[Workspace]:
    """A new workspace on the parameter's catalog and ``lake_url``, named by the ``ASSAY_*`` variables the
    flows read (the fake vendors' variables stay as the kit's ``fake_vendors`` fixture set them)."""
    catalog = request.param
    home.mkdir()
    url = f"sqlite:///{home / 'catalog.db'}" if catalog == "sqlite" else request.getfixturevalue("postgres_url")
    for key, value in {"ASSAY_HOME": str(home), "ASSAY_CATALOG_URL": url, "ASSAY_LAKE_URL": lake_url,
                       "PREFECT_HOME": str(home / "prefect"), "PREFECT_LOGGING_LEVEL": "CRITICAL"}.items():
        monkeypatch.setenv(key, value)  # undone afterwards (opening a workspace sets PREFECT_HOME if unset)
    ws = open_workspace(create=True)  # as `assay init` does: the catalog migrated
    assert (ws.engine.dialect.name, ws.lake.url) == ({"sqlite": "sqlite", "postgres": "postgresql"}[catalog], lake_url)
    yield ws
    ws.close()


@pytest.fixture(params=CATALOGS)
def backend_ws(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A workspace on each catalog, with a local lake."""
    yield from _workspace(request, monkeypatch, tmp_path / "home", str(tmp_path / "home" / "lake"))


@pytest.fixture(params=CATALOGS)
def s3_backend_ws(request: pytest.FixtureRequest, s3_lake, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A workspace on each catalog, with its lake on S3 (moto's server)."""
    yield from _workspace(request, monkeypatch, tmp_path / "home", s3_lake.url)


def _per_case_run(table: pl.DataFrame) -> dict[str, int]:
    return dict(table.group_by("case_run_id").len().iter_rows())


@per_runner
def test_a_suite_runs_through_the_flows(prefect_harness, backend_ws: Workspace, runner_name: str,
                                        tmp_path: Path) -> None:
    _through_the_flows(backend_ws, runner_name, tmp_path)


@per_runner
def test_a_suite_runs_through_the_flows_on_s3(prefect_harness, s3_backend_ws: Workspace, runner_name: str,
                                              tmp_path: Path) -> None:
    _through_the_flows(s3_backend_ws, runner_name, tmp_path)


def _through_the_flows(ws: Workspace, runner_name: str, tmp_path: Path) -> None:
    from assay.flows.orchestration import collect, reap, rejudge, run_suite

    suite = flow_suite(ws.engine, runner_name, tmp_path / "suite")
    keys = {a["key"] for a in assertions_for(runner_name)}

    started = run_suite(suite, runner_name)
    run_id = started["run"]["run_id"]
    if not runner_class(runner_name).synchronous:  # submitted: it waits at the vendor for the collect flow
        assert started["run"]["status"] == "running" and started["verdicts"] == []
        assert collect()["finalised"] == [run_id]
    run = get_run(ws.engine, run_id)
    assert run.status == "completed" and run.finalised_at is not None, run.status_reason

    case_runs = ws.lake.read("case_runs", run_id=run_id)
    assert case_runs.height == run.case_runs >= run.case_count == 2
    assert set(case_runs["case_key"]) == {"case-1", "case-2"} and set(case_runs["runner"]) == {runner_name}
    ids = set(case_runs["case_run_id"])
    assert _per_case_run(ws.lake.read("outcomes", run_id=run_id)) == dict.fromkeys(ids, 1)
    results = ws.lake.read("assertion_results", run_id=run_id)
    assert _per_case_run(results) == dict.fromkeys(ids, len(keys))
    assert set(results["assertion_key"]) == keys

    stamped = run_details(ws.engine, run_id)["stamped"]
    assert [(s["consumer"], s["version"]) for s in stamped] == [("ci", 1)]
    assert stamped[0]["verdict"] in {"pass", "fail", "error"} and stamped[0]["verdict"] == run.outcome

    rejudged = rejudge([run_id], force=True)  # force: re-evaluate unchanged pairs, so every case run has news
    assert rejudged["outcomes"] == len(ids) and rejudged["case_runs"] == len(ids)
    assert _per_case_run(ws.lake.read("outcomes", run_id=run_id)) == dict.fromkeys(ids, 2)
    assert _per_case_run(ws.lake.read("assertion_results", run_id=run_id)) == dict.fromkeys(ids, 2 * len(keys))
    assert run_details(ws.engine, run_id)["stamped"] == stamped  # a stamped verdict never changes

    before = get_run(ws.engine, run_id)
    touched = reap()
    assert touched and all(names == [] for names in touched.values()), touched
    assert get_run(ws.engine, run_id) == before
    assert ws.lake.read("case_runs", run_id=run_id).height == case_runs.height
