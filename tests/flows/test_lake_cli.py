"""The lake's commands, run as a user would: an earlier lake is refused until `assay lake migrate`, then reads
exactly as before; `assay lake vacuum` deletes only what nobody reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import sqlalchemy as sa
from command_line import assay

from assay.flows import judging
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t
from assay.storage.lake.store import MARKER


def _judged_demo(home: Path) -> tuple[list[str], list[dict]]:
    ws = open_workspace(create=True)
    ops.load(ws, str(DEMO / "bundle.yaml"))
    runs = [ops.run_to_final(ws, suite).run_id for suite in SUITES]
    judging.judge_runs(ws, runs, trigger="rejudge", force=True)  # two outcomes per case run: history
    verdicts = judging.verdicts_for(ws, runs)
    ws.close()
    return runs, verdicts


def _forget_the_manifest(home: Path) -> None:
    """Make the lake look as an earlier Assay left it: files on disk, no manifest, no marker."""
    engine = sa.create_engine(f"sqlite:///{home / 'catalog.db'}")
    with engine.begin() as conn:
        for table in (t.lake_file_runs, t.lake_files):
            conn.execute(table.delete())
    engine.dispose()
    (home / "lake" / MARKER).unlink()
    for path in (home / "lake" / "current_results").rglob("*.parquet"):  # the earlier layout had no state table
        path.unlink()


def test_an_earlier_lake_is_refused_until_migrated_then_reads_as_before(assay_home: Path) -> None:
    runs, before = _judged_demo(assay_home)
    _forget_the_manifest(assay_home)
    refused = assay("verdicts", runs[0], home=assay_home, check=1)
    assert "assay lake migrate" in refused.stderr and "no catalog manifest lists" in refused.stderr
    done = json.loads(assay("lake", "migrate", "--json", home=assay_home).stdout)
    assert done["schema"] == "assay.lake.migrate"
    assert done["tables"]["case_runs"]["files"] >= 2 and done["tables"]["current_results"]["rows"] > 0
    ws = open_workspace()
    assert judging.verdicts_for(ws, runs) == before
    ws.close()
    again = assay("lake", "migrate", home=assay_home)
    assert "nothing to do" in again.stdout


def test_vacuum_deletes_unlisted_files_past_the_grace_period_only(assay_home: Path) -> None:
    _judged_demo(assay_home)
    stray = assay_home / "lake" / "case_runs" / "team_id=acme-plumbing" / "date=2024-01-01" / f"part-{'a' * 32}.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"written by a writer that crashed before committing")
    kept = assay("lake", "vacuum", "--json", home=assay_home)
    assert json.loads(kept.stdout)["unnamed"] == 0 and stray.exists()  # younger than the grace period
    os.utime(stray, (1, 1))  # written long ago
    gone = assay("lake", "vacuum", home=assay_home)
    assert "deleted 1 unlisted" in gone.stdout and not stray.exists()


def test_compact_then_vacuum_from_the_command_line_keeps_every_row(assay_home: Path) -> None:
    runs, before = _judged_demo(assay_home)
    done = json.loads(assay("lake", "compact", "--json", home=assay_home).stdout)
    assert done["schema"] == "assay.lake.compact" and done["files_in"] > done["files_out"] > 0
    assert "nothing" not in assay("lake", "vacuum", home=assay_home).stdout
    ws = open_workspace()
    assert judging.verdicts_for(ws, runs) == before
    ws.close()
    again = json.loads(assay("lake", "compact", "--json", home=assay_home).stdout)
    assert again["partitions"] == 0  # nothing left to gain
