"""The whole life cycle on every shape of store: {SQLite, PostgreSQL} x {local lake, S3 lake (a moto server)}.

Run, judge, re-judge, re-score (materialised), compaction and vacuum, through the plain functions the
flows wire; the same bundle must give the same verdicts, the same rows and the same re-score on every
shape, and after compaction and vacuum every reader still sees exactly what it saw before.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa

from assay.flows import judging, rescoring
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES, write_revised_bundle
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t
from assay.storage.lake.compact import compact
from assay.storage.lake.upkeep import vacuum

TABLES = ("case_runs", "runner_evaluations", "outcomes", "assertion_results", "current_results", "run_key_counts")


def _workspace(catalog_url: str, lake_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    monkeypatch.setenv("ASSAY_LAKE_URL", lake_url)
    workspace = open_workspace(create=True)
    yield workspace
    workspace.close()


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A workspace on each catalog, with a local lake."""
    yield from _workspace(catalog_url, str(tmp_path / "lake"), monkeypatch)


@pytest.fixture
def s3_ws(assay_home: Path, catalog_url: str, s3_lake, monkeypatch: pytest.MonkeyPatch):
    """A workspace on each catalog, with its lake on S3 (moto's server)."""
    yield from _workspace(catalog_url, s3_lake.url, monkeypatch)


def retired_files(ws) -> int:
    with ws.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).where(t.lake_files.c.removed_at.is_not(None))).scalar_one()


def snapshot(ws) -> dict[str, list]:
    """Every reader's view: the natural keys of each table, sorted."""
    return {t: sorted(ws.lake.read(t)[ws.lake.table(t).natural_key[0]].to_list()) for t in TABLES}


def test_run_judge_rejudge_rescore_compact_vacuum(ws, tmp_path: Path) -> None:
    _the_life_cycle(ws, tmp_path)


def test_run_judge_rejudge_rescore_compact_vacuum_on_s3(s3_ws, tmp_path: Path) -> None:
    _the_life_cycle(s3_ws, tmp_path)


def _the_life_cycle(ws, tmp_path: Path) -> None:
    ops.load(ws, str(DEMO / "bundle.yaml"))
    runs = []
    for suite in SUITES:
        runs.append(ops.run_to_final(ws, suite).run_id)
    stamped = {(v["run_id"], v["consumer"]): v["verdict"] for v in judging.verdicts_for(ws, runs)}
    assert stamped[(runs[0], "blueprint_ci")] == "pass"

    ops.load(ws, str(write_revised_bundle(tmp_path / "revised.yaml")))
    assert judging.judge_runs(ws, runs, trigger="rejudge")["outcomes"] == 4
    now = {(v["run_id"], v["consumer"]): v["verdict"] for v in judging.verdicts_for(ws, runs)}
    assert now[(runs[0], "blueprint_ci")] == "fail"  # the reworded assertion fails on re-judge

    rescored = rescoring.rescore(ws, SUITES[0], "nightly_sweep", materialise=True)
    assert len(ws.lake.read("verdicts")) == len(rescored["runs"]) == 1
    with ws.engine.connect() as conn:  # each dialect's timestamps read back as the same instant, in UTC
        created = dict(conn.execute(sa.select(t.runs.c.run_id, t.runs.c.created_at)).all())
    assert [(r["run_id"], datetime.fromisoformat(r["created_at"])) for r in rescored["runs"]] == [
        (runs[0], created[runs[0]])]
    assert rescored["runs"][0]["stamped"] == stamped[(runs[0], "nightly_sweep")]
    rescoring.rescore(ws, SUITES[0], "nightly_sweep", materialise=True)  # again: nothing new is written
    assert len(ws.lake.read("verdicts")) == 1

    before = snapshot(ws)
    files_before = {t: len(ws.lake.files(t)) for t in TABLES}
    replaced_by_rejudge = retired_files(ws)  # the re-score state the re-judge rewrote, copy on write
    assert replaced_by_rejudge >= 2
    summary = compact(ws.lake, min_files=2)
    assert summary["files_in"] > summary["files_out"] > 0
    assert snapshot(ws) == before
    assert {t: len(ws.lake.files(t)) for t in TABLES} != files_before
    assert vacuum(ws.lake, grace_seconds=3600)["retired"] == 0  # still within the grace period
    retired = retired_files(ws)
    assert retired == summary["files_in"] + replaced_by_rejudge
    gone = vacuum(ws.lake, grace_seconds=1, now=datetime.now(UTC) + timedelta(minutes=5))
    assert gone["retired"] == retired
    assert snapshot(ws) == before
    assert {(v["run_id"], v["consumer"]): v["verdict"] for v in judging.verdicts_for(ws, runs)} == now
    again = rescoring.rescore(ws, SUITES[0], "nightly_sweep")
    assert [r["verdict"] for r in again["runs"]] == [r["verdict"] for r in rescored["runs"]]
    assert pl.DataFrame(again["runs"]).height == 1
