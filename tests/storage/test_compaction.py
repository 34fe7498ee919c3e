"""Compaction: many small files of a partition become few, and no reader sees a different answer.

A realistic lake is built first, every file written the way its writer writes it: seven reports
(case runs and runner evaluations) into three runs of two teams, five judging passes written by
``write_pass`` (outcomes, atoms and the current results they replace; one is a re-judge), three
materialised re-scores, and an assertion_results file of the older schema version. Each test compacts
it and checks one property against what readers saw before. The failpoints ``compact.staged`` and
``compact.recorded`` are tested here too (a child process killed at each).
"""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from lake_kit import GOLDEN, list_file
from polars.testing import assert_frame_equal

from assay.core.errors import EvidenceError
from assay.transforms.rescore import key_counts
from assay.core.evidence import CaseRun, Evaluation, Report, ToolCall, Turn
from assay.core.ids import stable_id
from assay.storage.catalog import tables as t
from assay.storage.evidence import assemble
from assay.storage.judgments import write_pass
from assay.storage.lake import FileFilter, Lake
from assay.storage.lake.projection_tables import PROJECTED
from assay.storage.lake.tables import TABLES as ALL_TABLES
from assay.storage.lake.compact import compact, plan, rewrite, sort_keys, swap
from assay.storage.lake.upkeep import vacuum
from assay.storage.query import connect

DAY, T0 = "2024-05-06", datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
RUN_A, RUN_B, RUN_C = (stable_id(name) for name in ("run-a", "run-b", "run-c"))
RUNS = {RUN_A: "team-a", RUN_B: "team-a", RUN_C: "team-b"}
"""Which team each run belongs to; every run is on DAY."""

TABLES = {name: table for name, table in ALL_TABLES.items() if name not in PROJECTED}
"""The tables this sequence writes (the projected ones are the projections flow's: tests/flows/test_projections.py)."""


def reported(run_id: str, request_id: str, cases: range, minute: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A runner's report of ``cases`` into ``run_id``, turned into lake rows as the ledger does."""
    runs = [
        CaseRun(
            case_id=f"case-{i}", source_ref=request_id, status="error" if i == 4 else "executed",
            error="vendor timeout" if i == 4 else None,
            transcript=[Turn(role="caller", text=f"call {i} ✓", t=0.0), Turn(role="agent", text="hello", t=0.8)],
            tool_calls=[ToolCall(name="lookup", arguments={"q": i}, result=[i, None], t=0.5)],
            cost_usd=None if i % 2 else 0.02 * i, started_at=T0,
            evaluations=[Evaluation(name="tone", evaluator="fixed:scorer", verdict="pass", score=i / 10,
                                    scale_min=0.0, scale_max=1.0, raw={"i": i})],
        )
        for i in cases
    ]
    run = SimpleNamespace(run_id=run_id, suite_id="suite-1", runner="fixed")
    snapshots = [SimpleNamespace(case_id=f"case-{i}", case_key=f"key-{i}", snapshot={"situation": i},
                                 snapshot_hash=f"hash-{i}") for i in range(10)]
    return assemble(Report.from_case_runs(request_id, runs), run, snapshots, T0 + timedelta(minutes=minute))


def judge(lake: Lake, case_runs: pl.DataFrame, trigger: str) -> None:
    """A judging pass over ``case_runs`` (outcomes, atoms of assertions a1 and a2, current results), as
    the judging flow writes it."""
    outcomes = case_runs.select("case_run_id", "run_id", "case_key").with_columns(
        team_id=pl.col("run_id").replace_strict(RUNS), date=pl.lit(DAY), evaluated=pl.lit(2, pl.Int64),
        carried=pl.lit(0, pl.Int64),
    )
    results = pl.concat([
        case_runs.select("case_run_id", met=pl.col("case_key") != "key-3").with_columns(
            assertion_id=pl.lit(f"id-{key}"), assertion_key=pl.lit(key), assertion_version=pl.lit(1, pl.Int32),
            mechanism=pl.lit("llm.judge"), value=pl.lit(None, pl.Float64), reason=pl.lit(f"{key} looked at"),
            evaluator=pl.lit("assay:judge"), evaluator_version=pl.lit(2, pl.Int32),
        )
        for key in ("a2", "a1")
    ])
    write_pass(lake, outcomes, results, trigger=trigger, judge="judge-model", summarise=key_counts)


def populate(lake: Lake) -> None:
    """Reports, judging passes, re-scores and one older-version file, each written as its writer does."""
    reports: list[pl.DataFrame] = []
    for n, (run_id, request_id, cases) in enumerate([
        (RUN_A, "q1", range(0, 3)), (RUN_B, "q1", range(0, 2)), (RUN_A, "q2", range(3, 5)),
        (RUN_C, "q1", range(0, 4)), (RUN_B, "q2", range(2, 5)), (RUN_A, "q3", range(5, 6)),
        (RUN_C, "q2", range(4, 6)),
    ]):
        case_runs, evaluations = reported(run_id, request_id, cases, minute=n)
        reports.append(case_runs)
        ref = f"{run_id}:{request_id}"
        lake.write("case_runs", case_runs, team_id=RUNS[run_id], date=DAY, origin="report", ref=ref)
        lake.write("runner_evaluations", evaluations, team_id=RUNS[run_id], date=DAY, origin="report", ref=ref)
    every = pl.concat(reports)
    # One pass per run at first, then a re-judge and a pass over two teams' runs: team-a ends with two
    # current_results files (one per run), team-b with one.
    for trigger, runs in [("run", [RUN_A]), ("run", [RUN_B]), ("run", [RUN_C]), ("rejudge", [RUN_A]),
                          ("judge", [RUN_B, RUN_C])]:
        judge(lake, every.filter(pl.col("run_id").is_in(runs)), trigger)
    for n, run_id in enumerate([RUN_A, RUN_B, RUN_A]):
        verdict = pl.DataFrame({
            "verdict_id": f"v-{n}", "run_id": run_id, "suite_id": "suite-1", "consumer_key": "ci", "criteria": "c",
            "spec_hash": f"s{n}", "verdict": "pass", "reason": None, "counted": 2, "met": 2, "nulls": 0,
            "computed_at": T0 + timedelta(hours=1, minutes=n),
        }, schema_overrides={"reason": pl.String})
        lake.write("verdicts", verdict, team_id="team-a", date=DAY, origin="rescore", ref=f"ci:s{n}")
    # an assertion_results file of schema version 1, listed as `assay lake migrate` lists it
    relative = f"assertion_results/team_id=team-a/date={DAY}/part-{'0' * 32}.parquet"
    lake.fs.pipe_file(lake.path(relative), (GOLDEN / "assertion_results.v1.parquet").read_bytes())
    list_file(lake, relative, version=1)


def everything(lake: Lake) -> dict[str, pl.DataFrame]:
    """Every table as readers see it, in natural-key order."""
    return {name: lake.read(name).sort(lt.natural_key) for name, lt in TABLES.items()}


def live(lake: Lake) -> dict[str, int]:
    """How many live files each table has."""
    return {name: len(lake.files(name)) for name in TABLES}


def partitions(lake: Lake) -> dict[tuple[str, str, str], int]:
    """How many live files each (table, team, date) partition has."""
    found: dict[tuple[str, str, str], int] = {}
    for r in manifest_rows(lake, live_only=True):
        key = (r.table_name, r.team_id, r.lake_date)
        found[key] = found.get(key, 0) + 1
    return found


def manifest_rows(lake: Lake, *, live_only: bool = False) -> list[sa.Row]:
    f = t.lake_files
    with lake.engine.connect() as conn:
        return conn.execute(sa.select(f).where(f.c.removed_at.is_(None)) if live_only else sa.select(f)).all()


@pytest.fixture
def lake(lake: Lake) -> Lake:
    """The storage tests' empty lake, populated."""
    populate(lake)
    return lake


def test_compaction_keeps_every_row_and_leaves_one_file_per_partition(lake: Lake) -> None:
    before, files_before = everything(lake), partitions(lake)
    assert all(before[name].height for name in TABLES), "the realistic sequence writes every table"
    summary = compact(lake)
    after, files_after = everything(lake), partitions(lake)
    for name in TABLES:
        assert_frame_equal(after[name], before[name])
    crowded = {key: n for key, n in files_before.items() if n > 1}
    assert len(crowded) == 11 and {name for name, _, _ in crowded} == set(TABLES)
    assert files_after == dict.fromkeys(files_before, 1)  # one file per partition is left
    assert summary["partitions"] == len(crowded) and summary["refused"] == 0
    assert summary["files_in"] == sum(crowded.values()) and summary["files_out"] == len(crowded)
    assert summary["rows"] == sum(r.rows for r in manifest_rows(lake, live_only=True) if r.origin == "compaction")
    compacted = [r for r in manifest_rows(lake, live_only=True) if r.origin == "compaction"]
    assert len(compacted) == len(crowded) and summary["bytes_out"] == sum(r.bytes for r in compacted)
    assert {r.schema_version for r in compacted if r.table_name == "assertion_results"} == {3}  # v1 rows rewritten
    with connect(lake) as con:  # DuckDB over the manifest agrees too
        counted = con.sql("select count(*), count(distinct result_id) from assertion_results").fetchall()
    assert counted == [(before["assertion_results"].height,) * 2]


def test_a_compacted_file_is_sorted_for_the_rescore_query(lake: Lake) -> None:
    compact(lake)
    compacted = [r for r in manifest_rows(lake, live_only=True) if r.origin == "compaction"]
    assert {r.table_name for r in compacted} == set(TABLES)
    for r in compacted:
        rows, keys = pl.read_parquet(lake.path(r.path), hive_partitioning=False), sort_keys(lake, r.table_name)
        assert rows.equals(rows.sort(keys)), f"{r.path} is not sorted by {keys}"
        metadata = pq.read_schema(lake.path(r.path)).metadata
        assert metadata[b"assay.schema_version"] == str(TABLES[r.table_name].version).encode()
    assert sort_keys(lake, "assertion_results") == ["run_id", "case_run_id", "assertion_key", "result_id"]
    assert sort_keys(lake, "case_runs") == ["run_id", "case_run_id"]


def test_old_files_stay_until_vacuum_after_the_grace_period(lake: Lake) -> None:
    compacted = {r.path for r in manifest_rows(lake, live_only=True)
                 if partitions(lake)[(r.table_name, r.team_id, r.lake_date)] > 1}
    compact(lake)
    retired = {r.path for r in manifest_rows(lake) if r.removed_at is not None}
    assert compacted == {r.path for r in manifest_rows(lake) if (r.removed_by or "").startswith("compaction-")}
    assert compacted < retired  # with the current results that judging passes replaced
    assert all(os.path.exists(lake.path(p)) for p in retired)
    assert vacuum(lake, grace_seconds=3600) == {"retired": 0, "unnamed": 0}
    assert all(os.path.exists(lake.path(p)) for p in retired)
    later = datetime.now(UTC) + timedelta(hours=2)
    assert vacuum(lake, grace_seconds=3600, now=later) == {"retired": len(retired), "unnamed": 0}
    assert not any(os.path.exists(lake.path(p)) for p in retired)
    assert {r.path for r in manifest_rows(lake)} == {r.path for r in manifest_rows(lake, live_only=True)}


def test_a_reader_that_listed_files_before_the_compaction_still_reads_them(lake: Lake) -> None:
    listed = [address for address, _ in lake.files("case_runs", FileFilter(teams=["team-a"]))]
    expected = lake.read("case_runs", FileFilter(teams=["team-a"])).drop("team_id", "date").sort("case_run_id")
    compact(lake)
    assert not set(listed) & {a for a, _ in lake.files("case_runs")}
    assert_frame_equal(pl.read_parquet(listed, hive_partitioning=False).sort("case_run_id"), expected)


def test_readers_of_one_run_still_open_only_the_files_holding_it(lake: Lake) -> None:
    before = {(name, run): lake.read(name, run_id=run).sort(TABLES[name].natural_key)
              for name in TABLES for run in RUNS}
    compact(lake)
    for (name, run), frame in before.items():
        assert_frame_equal(lake.read(name, run_id=run).sort(TABLES[name].natural_key), frame)
        for address, _ in lake.files(name, FileFilter(runs=[run])):
            assert run in pl.read_parquet(address, columns=["run_id"])["run_id"].to_list()
    assert [a for a, _ in lake.files("case_runs", FileFilter(runs=[RUN_C]))] == [
        a for a, _ in lake.files("case_runs", FileFilter(teams=["team-b"]))]
    with lake.engine.connect() as conn:
        runs_of = conn.execute(
            sa.select(t.lake_files.c.path, t.lake_file_runs.c.run_id)
            .join(t.lake_file_runs, t.lake_file_runs.c.file_id == t.lake_files.c.file_id)
            .where(t.lake_files.c.origin == "compaction", t.lake_files.c.team_id == "team-a",
                   t.lake_files.c.table_name == "case_runs")
        ).all()
    assert sorted(run for _, run in runs_of) == sorted([RUN_A, RUN_B]) and len({p for p, _ in runs_of}) == 1


def test_a_second_compaction_with_nothing_to_do_does_nothing(lake: Lake) -> None:
    compact(lake)
    named = manifest_rows(lake)
    assert plan(lake) == []
    assert compact(lake) == dict.fromkeys(
        ("partitions", "refused", "files_in", "files_out", "rows", "bytes_in", "bytes_out"), 0)
    assert manifest_rows(lake) == named


def test_only_the_chosen_table_and_team_are_compacted(lake: Lake) -> None:
    before = live(lake)
    summary = compact(lake, table="outcomes", team="team-b")
    assert summary["partitions"] == 1 and summary["files_in"] == 2 and summary["files_out"] == 1
    summary = compact(lake, table="case_runs", team="team-a")
    assert summary["partitions"] == 1 and summary["files_in"] == 5 and summary["files_out"] == 1
    assert live(lake) == {**before, "outcomes": before["outcomes"] - 1, "case_runs": before["case_runs"] - 4}
    assert compact(lake, team="team-c")["partitions"] == 0 and live(lake)["outcomes"] == before["outcomes"] - 1


def test_a_small_target_gives_several_files_and_files_near_it_are_left_alone(lake: Lake) -> None:
    before = lake.read("assertion_results").sort("result_id")
    total = sum(r.bytes for r in manifest_rows(lake) if r.table_name == "assertion_results" and r.team_id == "team-a")
    summary = compact(lake, table="assertion_results", target_bytes=total // 2 + 1)
    assert summary["files_in"] == 7 and summary["files_out"] == 3  # team-a's 5 files become 2, team-b's 2 become 1
    assert_frame_equal(lake.read("assertion_results").sort("result_id"), before)
    keys = sort_keys(lake, "assertion_results")
    halves = [pl.read_parquet(a, hive_partitioning=False)
              for a, _ in lake.files("assertion_results", FileFilter(teams=["team-a"]))]
    n = before.filter(pl.col("team_id") == "team-a").height
    assert sorted(h.height for h in halves) == sorted([n // 2, n - n // 2])
    joined = pl.concat(sorted(halves, key=lambda h: h.select(keys).row(0)))  # the halves split one sorted run
    assert joined.equals(joined.sort(keys))
    # two files that each nearly reach the target would be rewritten as two: nothing to gain
    largest = max(r.bytes for r in manifest_rows(lake, live_only=True))
    assert plan(lake, table="assertion_results", target_bytes=largest + 1) == []


def test_two_compactions_of_one_partition_never_double_rows(lake: Lake) -> None:
    before = everything(lake)
    first, second = (rewrite(lake, p) for p in plan(lake, table="case_runs", team="team-a") * 2)
    assert swap(lake, first) is True
    assert swap(lake, second) is False  # its old files were retired by the first: it must not name its own
    assert_frame_equal(lake.read("case_runs").sort("case_run_id"), before["case_runs"])
    named = {r.path for r in manifest_rows(lake)}
    assert not {f.path for f in second.written} & named
    assert all(os.path.exists(lake.path(f.path)) for f in second.written)
    later = datetime.now(UTC) + timedelta(hours=2)
    assert vacuum(lake, grace_seconds=3600, now=later)["unnamed"] == len(second.written)
    assert compact(lake, table="case_runs")["refused"] == 0


def test_compactions_racing_in_two_threads_leave_every_row_once(lake: Lake) -> None:
    before, files_before = everything(lake), partitions(lake)
    with ThreadPoolExecutor(2) as pool:
        summaries = list(pool.map(lambda _: compact(lake), range(2)))
    assert sum(s["partitions"] for s in summaries) == sum(n > 1 for n in files_before.values())
    assert partitions(lake) == dict.fromkeys(files_before, 1)
    for name in TABLES:
        assert_frame_equal(everything(lake)[name], before[name])



def test_a_file_written_while_compacting_stays_live(lake: Lake) -> None:
    (pending,) = plan(lake, table="runner_evaluations", team="team-b")
    c = rewrite(lake, pending)
    _, late = reported(RUN_C, "q9", range(7, 9), minute=50)
    lake.write("runner_evaluations", late, team_id="team-b", date=DAY, origin="report", ref=f"{RUN_C}:q9")
    before = lake.read("runner_evaluations", run_id=RUN_C).sort("evaluation_id")
    assert swap(lake, c) is True
    assert_frame_equal(lake.read("runner_evaluations", run_id=RUN_C).sort("evaluation_id"), before)
    assert len(lake.files("runner_evaluations", FileFilter(teams=["team-b"]))) == 2


def test_a_missing_file_is_named_and_nothing_changes(lake: Lake) -> None:
    (verdicts,) = plan(lake, table="verdicts")
    gone = verdicts.files[1].path
    os.remove(lake.path(gone))
    named = manifest_rows(lake)
    with pytest.raises(EvidenceError, match=re.escape(gone)):
        compact(lake, table="verdicts")
    assert manifest_rows(lake) == named and len(list(Path(lake.root, "verdicts").rglob("*.parquet"))) == 2


def test_a_lake_on_an_object_store_compacts_the_same_way(memory_lake: Lake) -> None:
    lake = memory_lake
    populate(lake)
    before, files_before = everything(lake), partitions(lake)
    assert compact(lake)["files_out"] == sum(n > 1 for n in files_before.values())
    assert partitions(lake) == dict.fromkeys(files_before, 1)
    for name in TABLES:
        assert_frame_equal(everything(lake)[name], before[name])
    assert all(lake.fs.exists(lake.path(r.path)) for r in manifest_rows(lake))


CHILD = r"""
import sys
from assay.storage.catalog.engine import create_catalog_engine
from assay.storage.lake import Lake
from assay.storage.lake.compact import compact

compact(Lake(sys.argv[2], create_catalog_engine(sys.argv[1])))
print("finished without reaching the failpoint")
"""


@pytest.mark.parametrize("step", ["compact.staged", "compact.recorded"])
def test_a_compaction_killed_before_its_swap_commits_changes_nothing(failpoint_kill, lake: Lake, catalog_url: str,
                                                                     step: str) -> None:
    before, named, live_before = everything(lake), manifest_rows(lake), manifest_rows(lake, live_only=True)
    failpoint_kill(step, [sys.executable, "-c", CHILD, catalog_url, lake.url])
    assert manifest_rows(lake) == named
    for name in TABLES:
        assert_frame_equal(everything(lake)[name], before[name])
    on_disk = {str(p.relative_to(lake.root)) for p in Path(lake.root).rglob("*.parquet")}
    assert on_disk - {r.path for r in named}, "the child staged its new files before dying"
    vacuum(lake, grace_seconds=60, now=datetime.now(UTC) + timedelta(hours=1))
    assert manifest_rows(lake, live_only=True) == live_before
    assert {str(p.relative_to(lake.root)) for p in Path(lake.root).rglob("*.parquet")} == {r.path for r in live_before}
    assert compact(lake)["partitions"] == 11
    for name in TABLES:
        assert_frame_equal(everything(lake)[name], before[name])
