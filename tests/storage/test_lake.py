"""The evidence lake: validated writes, hive layout, version checks, and the manifest deciding what is read.

Each test runs on a SQLite catalog, and on PostgreSQL too when ``ASSAY_TEST_POSTGRES_URL`` is set.
Vacuum and migrate are proved in ``test_lake_upkeep.py``; the builders live in ``lake_kit.py``.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from lake_kit import GOLDEN, T0, case_runs, evaluations, everything, list_file, manifest_paths, plant, seen

from assay.core.errors import EvidenceError, IdentifierError, SchemaVersionError
from assay.core.settings import Settings
from assay.storage.catalog import tables as catalog
from assay.storage.lake import TABLES, FileFilter, Lake
from assay.storage.lake import store
from assay.storage.lake.store import MARKER
from assay.storage.query import connect

CR = TABLES["case_runs"].version
"""The schema version case_runs files are written at."""


def test_write_then_scan_round_trips_every_column(lake: Lake) -> None:
    written = case_runs(3)
    lake.write("case_runs", written, team_id="team-a", date="2024-05-06", origin="report", ref="run-1:q1")
    got = lake.scan("case_runs").collect().sort("case_run_id")
    assert got.columns == [*TABLES["case_runs"].arrow_schema.names, "team_id", "date"]
    assert got["team_id"].to_list() == ["team-a"] * 3 and got["date"].to_list() == ["2024-05-06"] * 3
    assert got.schema["date"] == pl.String and got.schema["reported_at"] == pl.Datetime("us", "UTC")
    assert got.drop("team_id", "date").equals(written.select(got.columns[:-2]))
    assert got["transcript"][0].to_list() == [
        {"role": "caller", "text": "hello 0", "t": 0.0, "end_t": 1.2},
        {"role": "agent", "text": "hi ✓", "t": 1.5, "end_t": None},
    ]
    assert got["status"].to_list() == ["executed", "executed", "error"]


def test_files_land_in_the_hive_layout_with_version_metadata(lake: Lake) -> None:
    path = lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06", origin="report", ref="run-1:q1")
    assert re.fullmatch(re.escape(lake.root) + r"/case_runs/team_id=team-a/date=2024-05-06/part-[0-9a-f]{32}\.parquet", path)
    assert lake.files("case_runs") == [(path, CR)]
    assert manifest_paths(lake.engine) == [path.removeprefix(lake.root + "/")]
    schema = pq.read_schema(path)
    assert "team_id" not in schema.names and "date" not in schema.names
    assert schema.metadata[b"assay.table"] == b"case_runs" and schema.metadata[b"assay.schema_version"] == str(CR).encode()
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert not os.listdir(os.path.join(lake.root, "_staging"))


@pytest.mark.parametrize("team_id", ["../x", "a/b", "A", "", "x" * 65])
def test_a_bad_team_id_is_refused_before_anything_is_written(lake: Lake, team_id: str) -> None:
    with pytest.raises(IdentifierError, match="team_id"):
        lake.write("case_runs", case_runs(1), team_id=team_id, date="2024-05-06", origin="report", ref="r:q")
    outside = [p for p in everything(Path(lake.root).parent) if not p.startswith("catalog.db")]  # SQLite's own files
    assert everything(Path(lake.root)) == [] and outside == []
    assert manifest_paths(lake.engine) == []


@pytest.mark.parametrize("date", ["2024-02-30", "2024-5-6", "../2024-05-06", "20240506", ""])
def test_a_bad_date_is_refused_before_anything_is_written(lake: Lake, date: str) -> None:
    with pytest.raises(IdentifierError, match="YYYY-MM-DD"):
        lake.write("case_runs", case_runs(1), team_id="team-a", date=date, origin="report", ref="r:q")
    assert everything(Path(lake.root)) == [] and manifest_paths(lake.engine) == []


@pytest.mark.parametrize(
    "table,frame,message",
    [
        ("case_runs", lambda: case_runs(2).with_columns(case_run_id=pl.Series([1, 2])),
         "column 'case_run_id' has type int64, expected string"),
        ("case_runs", lambda: case_runs(2).with_columns(reported_at=pl.datetime(2024, 1, 1)),
         r"column 'reported_at' has type timestamp\[us\], expected timestamp\[us, tz=UTC\]"),
        ("case_runs", lambda: case_runs(3).with_columns(status=pl.Series(["executed", "bogus", "done"])),
         r"column 'status' failed isin\(\['executed', 'error'\]\): 2 row\(s\), e.g. 'bogus'; 'done'"),
        ("case_runs", lambda: case_runs(3).with_columns(case_run_id=pl.Series(["k1", "k2", "k1"])),
         r"natural key \('case_run_id',\) failed unique within the batch: 2 row\(s\), e.g. case_run_id='k1'"),
        ("case_runs", lambda: case_runs(2).with_columns(run_id=pl.Series(["r", None])),
         "column 'run_id' failed not_nullable: 1 row"),
        ("case_runs", lambda: case_runs(1).with_columns(transcript=pl.lit([{"role": "robot", "text": "x", "t": None}])),
         r"column 'transcript' failed every element's role in \['caller', 'agent', 'system'\]: 1 row\(s\), e.g. .*robot"),
        ("case_runs", lambda: case_runs(1).drop("runner").with_columns(team_id=pl.lit("t")),
         r"missing column\(s\) \['runner'\], unexpected column\(s\) \['team_id'\]"),
        ("runner_evaluations", lambda: evaluations(2).with_columns(verdict=pl.lit("great")),
         r"column 'verdict' failed isin\(\['pass', 'fail', 'error', 'unknown'\]\): 2 row\(s\), e.g. 'great'"),
        ("runner_evaluations", lambda: evaluations(2, score=7.0),
         r"rows failed scale_min <= score <= scale_max: 2 row\(s\), e.g. evaluation_id='ev-0'; evaluation_id='ev-1'"),
    ],
    ids=["dtype", "naive-ts", "status", "dup-key", "null", "role", "columns", "verdict", "scale"],
)
def test_bad_evidence_is_refused_and_nothing_is_written(lake: Lake, table: str, frame, message: str) -> None:
    with pytest.raises(EvidenceError, match=message) as info:
        lake.write(table, frame(), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    assert str(info.value).startswith(f"{table}: ")
    assert [p for p in everything(Path(lake.root)) if p != MARKER] == []  # the layout marker, no data
    assert manifest_paths(lake.engine) == [] and lake.scan(table).collect().height == 0


def test_a_pyarrow_table_and_nulls_in_nullable_columns_are_accepted(lake: Lake) -> None:
    ev = evaluations(2).with_columns(verdict=pl.lit(None, pl.String), score=pl.Series([None, 1.0]))
    lake.write("runner_evaluations", ev.to_arrow(), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    got = lake.read("runner_evaluations", evaluation_id="ev-0")
    assert got["verdict"].to_list() == [None] and got["score"].to_list() == [None]
    assert lake.read("runner_evaluations", score=1.0)["evaluation_id"].to_list() == ["ev-1"]
    with pytest.raises(EvidenceError, match=r"no column\(s\) \['nope'\]"):
        lake.read("runner_evaluations", nope=1)


def test_an_empty_table_scans_to_an_empty_frame_with_every_column(lake: Lake) -> None:
    got = lake.scan("runner_evaluations").collect()
    assert got.height == 0
    assert got.columns == [*TABLES["runner_evaluations"].arrow_schema.names, "team_id", "date"]
    assert got.schema["score"] == pl.Float64 and got.schema["team_id"] == pl.String
    con = connect(lake)
    assert con.sql("select count(*) from runner_evaluations").fetchall() == [(0,)]
    assert [r[0] for r in con.sql("describe case_runs").fetchall()][-2:] == ["team_id", "date"]


def test_a_staged_file_is_invisible_until_committed_and_a_rolled_back_commit_never_shows(lake: Lake) -> None:
    lake.write("case_runs", case_runs(1, prefix="old"), team_id="team-a", date="2024-05-06", origin="report", ref="r:q0")
    staged = lake.stage("case_runs", case_runs(2), team_id="team-a", date="2024-05-06")
    assert Path(lake.path(staged.path)).is_file() and staged.rows == 2 and staged.run_ids == ("run-1",)
    assert seen(lake) == ["old-0"]
    assert len(lake.files("case_runs")) == 1 and lake.read("case_runs", run_id="run-1").height == 1

    with pytest.raises(RuntimeError, match="refused"), lake.engine.begin() as conn:
        lake.commit(conn, [staged], origin="report", ref="run-1:q1")
        raise RuntimeError("the report was refused after its files were named")
    assert seen(lake) == ["old-0"]
    assert lake.files("case_runs") == lake.files("case_runs", FileFilter(runs=["run-1"]))
    assert manifest_paths(lake.engine) == [p.removeprefix(lake.root + "/") for p, _ in lake.files("case_runs")]

    with lake.engine.begin() as conn:
        lake.commit(conn, [staged], origin="report", ref="run-1:q1")
    assert seen(lake) == ["cr-0", "cr-1", "old-0"]
    assert (lake.address(staged.path), CR) in lake.files("case_runs", FileFilter(runs=["run-1"]))


def test_a_file_no_manifest_row_names_is_never_read(lake: Lake) -> None:
    named = lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    plant(lake, "case_runs", case_runs(3, prefix="crashed"))  # same partition, the right layout, a valid file
    plant(lake, "case_runs", case_runs(1, prefix="elsewhere"), team="team-b", date="2024-05-07")
    Path(lake.root, "case_runs", "team_id=team-a", "stray.parquet").write_bytes(b"PAR1")  # not even Parquet
    assert lake.files("case_runs") == [(named, CR)]
    assert seen(lake) == ["cr-0", "cr-1"]
    assert lake.read("case_runs", run_id="run-1")["case_run_id"].sort().to_list() == ["cr-0", "cr-1"]
    assert lake.read("case_runs", FileFilter(teams=["team-b"])).height == 0
    lake.check_files("case_runs")  # only named files are opened, so the stray one is never found


def test_a_torn_write_is_never_visible(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    first = lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    before = lake.scan("case_runs").collect()

    def torn(where: str, body: pa.Buffer) -> None:
        with open(where, "wb") as f:
            f.write(body.to_pybytes()[: body.size // 2])  # a header and half the row groups, then the machine dies
        raise OSError("disk pulled mid-write")

    monkeypatch.setattr(store, "_write_bytes", torn)
    with pytest.raises(OSError, match="disk pulled"):
        lake.write("case_runs", case_runs(5, prefix="new"), team_id="team-a", date="2024-05-07", origin="report", ref="r:q2")
    monkeypatch.undo()
    assert lake.files("case_runs") == [(first, CR)]
    assert not Path(lake.root, "case_runs", "team_id=team-a", "date=2024-05-07").exists()
    assert os.listdir(Path(lake.root, "_staging")) == []
    assert Lake(lake.url, lake.engine).scan("case_runs").collect().equals(before)


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_full_disk_names_the_file_and_its_partition_and_records_nothing(
    lake: Lake, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    lake = lake if where == "local" else request.getfixturevalue("memory_lake")
    lake.check_layout(creating=True)  # the lake's marker is written; then the disk fills

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "_write_bytes", full)
    monkeypatch.setattr(lake.fs, "pipe_file", full)
    with pytest.raises(EvidenceError) as refused:
        lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    message = str(refused.value)
    assert re.search(r"no space left on the device writing lake file \S*case_runs/team_id=team-a/date=2024-05-06/"
                     r"part-[0-9a-f]{32}\.parquet \(case_runs, team_id team-a, date 2024-05-06\): nothing was "
                     r"recorded; free space", message), message
    monkeypatch.undo()
    assert manifest_paths(lake.engine) == [] and lake.files("case_runs") == []
    with lake.engine.connect() as conn:  # the lease taken for the file is gone with it
        assert conn.execute(sa.select(sa.func.count()).select_from(catalog.lake_staged)).scalar_one() == 0


RUNS = [f"run-{i:02d}" for i in range(50)]


def _team(i: int) -> str:
    return ("team-a", "team-b")[i % 2]


def _date(i: int) -> str:
    return f"2024-05-{1 + i // 10:02d}"  # ten runs a day, 1 to 5 May


def test_readers_open_only_the_files_of_their_runs_teams_and_dates(lake: Lake) -> None:
    addresses = [
        lake.write("case_runs", case_runs(2, prefix=run, run_id=run), team_id=_team(i), date=_date(i), origin="report",
                   ref=f"{run}:q1")
        for i, run in enumerate(RUNS)
    ]
    assert len(lake.files("case_runs")) == 50
    for i in (0, 17, 49):
        assert lake.files("case_runs", FileFilter(runs=[RUNS[i]])) == [(addresses[i], CR)]
        got = lake.scan("case_runs", runs=[RUNS[i]]).collect()
        assert sorted(got["case_run_id"]) == [f"{RUNS[i]}-0", f"{RUNS[i]}-1"] and set(got["run_id"]) == {RUNS[i]}
        assert got.select("team_id", "date").unique().rows() == [(_team(i), _date(i))]
    assert len(lake.files("case_runs", FileFilter(runs=[RUNS[3], RUNS[4], "no-such-run"]))) == 2

    def chosen(where: FileFilter) -> list[int]:
        return sorted(addresses.index(a) for a, _ in lake.files("case_runs", where))

    assert chosen(FileFilter(teams=["team-b"])) == [i for i in range(50) if i % 2]
    assert chosen(FileFilter(since="2024-05-04")) == list(range(30, 50))
    assert chosen(FileFilter(until="2024-05-02")) == list(range(10))
    assert chosen(FileFilter(teams=["team-a"], since="2024-05-02", until="2024-05-03")) == [10, 12, 14, 16, 18]
    assert chosen(FileFilter(runs=[RUNS[11], RUNS[12]], teams=["team-a"])) == [12]
    got = lake.scan("case_runs", teams=["team-a"], since="2024-05-05").collect()
    assert got.height == 10 and set(got["run_id"]) == {RUNS[i] for i in range(40, 50, 2)}

    for address in addresses[1:]:  # the proof that a run's reader opens nothing else: nothing else is left
        os.remove(address)
    assert lake.read("case_runs", run_id=RUNS[0]).height == 2


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_damaged_file_fails_only_the_readers_of_its_partition_and_is_named(lake: Lake, damage: str) -> None:
    bad = lake.write("case_runs", case_runs(2, prefix="a1", run_id="run-1"), team_id="team-a", date="2024-05-06",
                     origin="report", ref="run-1:q1")
    lake.write("case_runs", case_runs(2, prefix="a2", run_id="run-2"), team_id="team-a", date="2024-05-07",
               origin="report", ref="run-2:q1")
    lake.write("case_runs", case_runs(2, prefix="b3", run_id="run-3"), team_id="team-b", date="2024-05-06",
               origin="report", ref="run-3:q1")
    if damage == "missing":
        os.remove(bad)
    else:
        Path(bad).write_bytes(b"this is not Parquet, a disk lost it" * 10)

    named = re.escape(bad)
    with pytest.raises(EvidenceError, match=named):
        lake.read("case_runs", run_id="run-1")
    with pytest.raises(EvidenceError, match=named):
        lake.read("case_runs", FileFilter(teams=["team-a"]))
    with pytest.raises(EvidenceError, match=named):
        lake.check_files("case_runs")
    assert lake.read("case_runs", run_id="run-2")["case_run_id"].sort().to_list() == ["a2-0", "a2-1"]
    assert lake.read("case_runs", FileFilter(teams=["team-b"]))["case_run_id"].sort().to_list() == ["b3-0", "b3-1"]
    assert lake.read("case_runs", FileFilter(since="2024-05-07")).height == 2


@pytest.mark.parametrize("version", [99, 0])
def test_a_listed_file_of_an_unknown_version_is_refused_naming_it(lake: Lake, version: int) -> None:
    lake.write("case_runs", case_runs(1, prefix="ok"), team_id="team-b", date="2024-05-06", origin="report", ref="r:q")
    relative = plant(lake, "case_runs", case_runs(1), version=str(version).encode())
    list_file(lake, relative, version=version)
    for read in (lambda: lake.scan("case_runs"), lambda: lake.read("case_runs", run_id="run-1"), lambda: connect(lake)):
        with pytest.raises(SchemaVersionError) as info:
            read()
        assert info.value.where == lake.address(relative) and info.value.found == version
        assert info.value.known == TABLES["case_runs"].known_versions
    assert lake.read("case_runs", FileFilter(teams=["team-b"]))["case_run_id"].to_list() == ["ok-0"]


# The golden files were made once, with schema version 1, by:
#   lake = Lake(tmp); lake.write("case_runs", case_runs(2), team_id="golden", date="2024-05-06")
#   lake.write("runner_evaluations", evaluations(2), team_id="golden", date="2024-05-06")
# (outcomes, assertion_results, verdicts: two hand-written rows each, ids oc-/ar-/vd-0 and 1, at T0)
# and copying each written file to tests/storage/golden/<table>.v1.parquet. Never regenerate them:
# they stand for files already in users' lakes. A new version gets a new golden file next to them:
# assertion_results.v2 is the v1 rows plus evaluator_version 1 and 2, written by Lake.write;
# current_results.v1 is two rows (cu-0 met, cu-1 undetermined) of one run, written by Lake.write;
# run_key_counts.v1 is two keys' counts of that run, written by Lake.write;
# case_runs.v2 and runner_evaluations.v2 are case_runs(2) and evaluations(2) of lake_kit (turns with end_t,
# evaluations with met and value), written by Lake.write;
# assertion_results.v3 is the v2 rows with judge spend (ar-1: a rubric result, 120/30 tokens, $0.0012), by Lake.write.
# case_runs.v3 is case_runs(2) of lake_kit with the vendor's own cost (cr-1: 40 credits; cr-0: none), by Lake.write.
# current_results.v2 is the v1 rows with a reason each (cu-1's: HUNG_UP), by Lake.write;
# run_key_counts.v2 is the v1 rows with null_case_runs (cu-1's case run for the key with an undetermined
# result), null_reason (HUNG_UP) and case_runs (4), by Lake.write.
# run_verdicts, case_verdicts, behaviour_stats, evaluator_pairs and run_costs v1 are the first two rows (in key
# order) of each table the projections flow wrote over the demo's two runs, with computed_at T0, by Lake.stage.
HUNG_UP = "the case run did not execute: telephony: caller hung up"
KNOWN = [(table, version) for table in sorted(TABLES) for version in TABLES[table].known_versions]


def test_every_known_version_has_a_golden_file() -> None:
    assert {p.name for p in GOLDEN.glob("*.parquet")} == {f"{t}.v{v}.parquet" for t, v in KNOWN}


def _golden(lake: Lake, table: str, version: int, date: str = "2024-05-06") -> str:
    """Copy the golden file into the lake and name it in the manifest; its relative path."""
    lake.check_layout(creating=True)
    relative = f"{table}/team_id=golden/date={date}/part-{uuid.uuid4().hex}.parquet"
    Path(lake.path(relative)).parent.mkdir(parents=True)
    shutil.copy(GOLDEN / f"{table}.v{version}.parquet", lake.path(relative))
    list_file(lake, relative, version=version)
    return relative


@pytest.mark.parametrize(("table", "version"), KNOWN)
def test_golden_files_of_every_known_version_still_read(lake: Lake, table: str, version: int) -> None:
    _golden(lake, table, version)
    got = lake.scan(table).collect().sort(TABLES[table].natural_key)
    assert got.height == 2 and got["team_id"].to_list() == ["golden", "golden"]
    assert got[TABLES[table].first_by].to_list() == [T0, T0]
    if table == "outcomes":
        assert got["outcome_id"].to_list() == ["oc-0", "oc-1"] and got["carried"].to_list() == [0, 1]
    elif table == "verdicts":
        assert got["verdict_id"].to_list() == ["vd-0", "vd-1"] and got["verdict"].to_list() == ["pass", "error"]
    elif table == "assertion_results":
        assert got["result_id"].to_list() == ["ar-0", "ar-1"] and got["met"].to_list() == [True, None]
        assert got["evaluator_version"].to_list() == ([1, 1] if version == 1 else [1, 2])
        spend = got.select("judge_tokens_in", "judge_tokens_out", "judge_cost_usd").rows()
        assert spend == ([(None, None, None)] * 2 if version < 3 else [(None, None, None), (120, 30, 0.0012)])
    elif table == "case_runs":
        assert got["case_run_id"].to_list() == ["cr-0", "cr-1"]
        assert got["transcript"][1].to_list()[1] == {"role": "agent", "text": "hi ✓", "t": 1.5, "end_t": None}
        assert got["transcript"][1].to_list()[0]["end_t"] == (None if version == 1 else 1.2)  # v1 turns read null
        assert got["tool_calls"][1].to_list()[0]["arguments"] == '{"q": 1}'
        vendor_cost = got.select("vendor_cost", "vendor_cost_unit").rows()  # before v3: null, never dollars
        assert vendor_cost == [(None, None), (None, None) if version < 3 else (40.0, "credits")]
        assert got["cost_usd"].to_list() == [0.0, 0.01]
    elif table == "runner_evaluations":
        assert got["evaluation_id"].to_list() == ["ev-0", "ev-1"] and got["score"].to_list() == [0.5, 0.5]
        assert got["met"].to_list() == ([None, None] if version == 1 else [True, True])  # v1: not derived
        assert got["value"].to_list() == ([None, None] if version == 1 else [0.5, 0.5])
    elif table == "run_key_counts":
        assert got["n"].to_list() == [4, 4] and sorted(got["met"].to_list()) == [3, 4]
        assert got["evaluators"].list.len().to_list() == [1, 1]
        undetermined = got.sort("met").select("null_case_runs", "null_reason", "case_runs").rows()
        assert undetermined == ([(None, None, None)] * 2 if version == 1 else [  # v1: not summarised, read null
            ([-4919131752989213765], HUNG_UP, 4), ([], None, 4)])  # cu-1's case run
    elif table == "current_results":
        assert got["result_id"].to_list() == ["cu-0", "cu-1"] and got["met"].to_list() == [True, None]
        assert got["run"].n_unique() == 1 and got["key"].n_unique() == 1 and got["case_run"].n_unique() == 2
        assert got["reason"].to_list() == ([None, None] if version == 1 else ["said it plainly", HUNG_UP])
    assert connect(lake).sql(f"select count(*) from {table}").fetchall() == [(2,)]
    if table == "case_runs":  # DuckDB reads the widened struct the same way
        ends = connect(lake).sql("select [t.end_t for t in transcript] from case_runs order by case_run_id").fetchall()
        assert ends == [([None, None] if version == 1 else [1.2, None],)] * 2


def test_files_of_an_older_and_the_current_version_read_as_one_table(lake: Lake) -> None:
    _golden(lake, "assertion_results", 1)
    current = pl.read_parquet(GOLDEN / "assertion_results.v3.parquet").with_columns(
        result_id=pl.Series(["ar-2", "ar-3"]), evaluator_version=pl.Series([3, 4], dtype=pl.Int32)
    )
    lake.write("assertion_results", current, team_id="golden", date="2024-05-07", origin="judging", ref="pass-1")
    got = lake.scan("assertion_results").collect().sort("result_id")
    assert got["evaluator_version"].to_list() == [1, 1, 3, 4]
    assert got["date"].to_list() == ["2024-05-06"] * 2 + ["2024-05-07"] * 2
    view = connect(lake).sql("select result_id, evaluator_version from assertion_results order by result_id")
    assert view.fetchall() == [("ar-0", 1), ("ar-1", 1), ("ar-2", 3), ("ar-3", 4)]


def test_a_memory_filesystem_lake_round_trips_through_polars_and_duckdb(memory_lake: Lake) -> None:
    path = memory_lake.write("case_runs", case_runs(3), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    memory_lake.write("runner_evaluations", evaluations(2), team_id="team-b", date="2024-05-07", origin="report", ref="r:q")
    assert path.startswith("memory:///lake-") and memory_lake.files("case_runs") == [(path, CR)]
    assert not memory_lake.fs.exists(f"{memory_lake.root}/_staging")
    plant(memory_lake, "case_runs", case_runs(1, prefix="unnamed"))
    got = Lake(memory_lake.url, memory_lake.engine).scan("case_runs").collect().sort("case_run_id")
    assert got["case_run_id"].to_list() == ["cr-0", "cr-1", "cr-2"] and set(got["team_id"]) == {"team-a"}
    assert memory_lake.read("case_runs", run_id="run-1", case_run_id="cr-1")["duration_ms"].to_list() == [1001.0]
    con = connect(memory_lake)
    assert con.sql("select team_id, date, count(*) from runner_evaluations group by all").fetchall() == [
        ("team-b", "2024-05-07", 2)
    ]
    assert con.sql("select sum(duration_ms) from case_runs").fetchall() == [(3003.0,)]


def test_connect_registers_catalog_tables_and_refuses_a_name_clash(lake: Lake) -> None:
    lake.write("case_runs", case_runs(3), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    suites = pa.table({"suite_id": ["suite-1"], "name": ["Smoke"]})
    con = connect(lake, {"suites": suites})
    assert con.sql("select s.name, count(*) from case_runs join suites s using (suite_id) group by all").fetchall() == [
        ("Smoke", 3)
    ]
    loaded = con.sql("select extension_name, install_mode from duckdb_extensions() where loaded or installed")
    assert {name for name, _ in loaded.fetchall()} <= {"core_functions", "parquet", "json", "icu"}
    assert {mode for _, mode in loaded.fetchall()} == {"STATICALLY_LINKED"}
    with pytest.raises(EvidenceError, match="catalog table 'case_runs'"):
        connect(lake, {"case_runs": suites})


def test_from_settings_uses_the_resolved_lake_url(tmp_path: Path, engine: sa.Engine) -> None:
    lake = Lake.from_settings(Settings(home=tmp_path / "home"), engine)
    assert lake.root == str((tmp_path / "home" / "lake").resolve())
    lake.write("case_runs", case_runs(1), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    assert (tmp_path / "home" / "lake" / "case_runs" / "team_id=team-a").is_dir()


def test_an_unknown_table_or_origin_is_refused(lake: Lake) -> None:
    with pytest.raises(EvidenceError, match=f"no lake table 'no_such_table'; known: {', '.join(sorted(TABLES))}$"):
        lake.write("no_such_table", case_runs(1), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    with pytest.raises(sa.exc.IntegrityError):
        lake.write("case_runs", case_runs(1), team_id="team-a", date="2024-05-06", origin="guesswork", ref="r:q")
    assert lake.files("case_runs") == [] and manifest_paths(lake.engine) == []
