"""The evidence lake: validated writes, hive layout, atomic publish, version checks, de-duplication."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fsspec
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.core.errors import EvidenceError, IdentifierError, SchemaVersionError
from assay.core.evidence import CaseRun, Evaluation, Report, ToolCall, Turn
from assay.core.settings import Settings
from assay.storage.lake import TABLES, Lake
from assay.storage.query import connect

GOLDEN = Path(__file__).parent / "golden"
T0 = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)


def case_runs(n: int = 3, *, prefix: str = "cr", reported_at: datetime = T0) -> pl.DataFrame:
    """``n`` case-run rows with everything filled in, built the way a small runner reports them."""
    runs = [
        CaseRun(
            case_id=f"case-{i}",
            status="error" if i % 3 == 2 else "executed",
            error="vendor timeout" if i % 3 == 2 else None,
            transcript=[Turn(role="caller", text=f"hello {i}", t=0.0), Turn(role="agent", text="hi ✓", t=1.5)],
            tool_calls=[ToolCall(name="lookup", arguments={"q": i}, result={"ok": True}, t=1.0)],
            cost_usd=0.01 * i,
            duration_ms=1000.0 + i,
            started_at=T0 - timedelta(minutes=1),
            evaluations=[Evaluation(name="polite", evaluator="fixed:scorer", verdict="pass", score=0.5,
                                    scale_min=0.0, scale_max=1.0)],
        )
        for i in range(n)
    ]
    core = pl.from_arrow(Report.from_case_runs("q1", runs).case_runs)
    assert isinstance(core, pl.DataFrame)
    return core.with_columns(
        case_run_id=pl.Series([f"{prefix}-{i}" for i in range(n)]),
        run_id=pl.lit("run-1"),
        suite_id=pl.lit("suite-1"),
        case_key=pl.col("case_id"),
        runner=pl.lit("fixed"),
        request_id=pl.lit("q1"),
        case_snapshot=pl.lit('{"prompt": "hi"}'),
        case_snapshot_hash=pl.lit("abc123"),
        reported_at=pl.lit(reported_at).dt.cast_time_unit("us"),
    )


def evaluations(n: int = 2, *, score: float = 0.5) -> pl.DataFrame:
    """``n`` runner-evaluation rows on a 0..1 scale."""
    return pl.DataFrame(
        {
            "evaluation_id": [f"ev-{i}" for i in range(n)],
            "case_run_id": [f"cr-{i}" for i in range(n)],
            "run_id": "run-1",
            "request_id": "q1",
            "reported_at": T0,
            "case_id": [f"case-{i}" for i in range(n)],
            "source_ref": "",
            "name": "polite",
            "evaluator": "fixed:scorer",
            "verdict": "pass",
            "score": score,
            "scale_min": 0.0,
            "scale_max": 1.0,
            "rationale": None,
            "raw": '{"label": "good"}',
        },
        schema_overrides={"rationale": pl.String},
    )


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(str(tmp_path / "lake"))


def _everything(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_write_then_scan_round_trips_every_column(lake: Lake) -> None:
    written = case_runs(3)
    lake.write("case_runs", written, team_id="team-a", date="2024-05-06")
    got = lake.scan("case_runs").collect().sort("case_run_id")
    assert got.columns == [*TABLES["case_runs"].arrow_schema.names, "team_id", "date"]
    assert got["team_id"].to_list() == ["team-a"] * 3 and got["date"].to_list() == ["2024-05-06"] * 3
    assert got.schema["date"] == pl.String and got.schema["reported_at"] == pl.Datetime("us", "UTC")
    assert got.drop("team_id", "date").equals(written.select(got.columns[:-2]))
    assert got["transcript"][0].to_list() == [
        {"role": "caller", "text": "hello 0", "t": 0.0},
        {"role": "agent", "text": "hi ✓", "t": 1.5},
    ]
    assert got["status"].to_list() == ["executed", "executed", "error"]


def test_files_land_in_the_hive_layout_with_version_metadata(lake: Lake) -> None:
    path = lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06")
    assert re.fullmatch(re.escape(lake.root) + r"/case_runs/team_id=team-a/date=2024-05-06/part-[0-9a-f]{32}\.parquet", path)
    assert lake.files("case_runs") == [path]
    schema = pq.read_schema(path)
    assert "team_id" not in schema.names and "date" not in schema.names
    assert schema.metadata[b"assay.table"] == b"case_runs" and schema.metadata[b"assay.schema_version"] == b"1"
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert not os.listdir(os.path.join(lake.root, "_staging"))


@pytest.mark.parametrize("team_id", ["../x", "a/b", "A", "", "x" * 65])
def test_a_bad_team_id_is_refused_before_anything_is_written(lake: Lake, team_id: str) -> None:
    with pytest.raises(IdentifierError, match="team_id"):
        lake.write("case_runs", case_runs(1), team_id=team_id, date="2024-05-06")
    assert _everything(Path(lake.root)) == [] and _everything(Path(lake.root).parent) == []


@pytest.mark.parametrize("date", ["2024-02-30", "2024-5-6", "../2024-05-06", "20240506", ""])
def test_a_bad_date_is_refused_before_anything_is_written(lake: Lake, date: str) -> None:
    with pytest.raises(IdentifierError, match="YYYY-MM-DD"):
        lake.write("case_runs", case_runs(1), team_id="team-a", date=date)
    assert _everything(Path(lake.root)) == []


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
        lake.write(table, frame(), team_id="team-a", date="2024-05-06")
    assert str(info.value).startswith(f"{table}: ")
    assert not Path(lake.root, table).exists()
    assert lake.scan(table).collect().height == 0


def test_a_pyarrow_table_and_nulls_in_nullable_columns_are_accepted(lake: Lake) -> None:
    ev = evaluations(2).with_columns(verdict=pl.lit(None, pl.String), score=pl.Series([None, 1.0]))
    lake.write("runner_evaluations", ev.to_arrow(), team_id="team-a", date="2024-05-06")
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


def _plant(lake: Lake, table: str, arrow: pa.Table, team: str = "team-a", date: str = "2024-05-06") -> str:
    path = Path(lake.root, table, f"team_id={team}", f"date={date}", f"part-{uuid.uuid4().hex}.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow.cast(TABLES[table].arrow_schema.with_metadata(arrow.schema.metadata)), path)
    return str(path)


@pytest.mark.parametrize("metadata", [{b"assay.table": b"case_runs", b"assay.schema_version": b"99"},
                                      {b"assay.table": b"case_runs"}])
def test_a_file_of_an_unknown_or_missing_version_is_refused(lake: Lake, metadata: dict) -> None:
    rows = case_runs(1).to_arrow().select(TABLES["case_runs"].arrow_schema.names)
    path = _plant(lake, "case_runs", rows.replace_schema_metadata(metadata))
    with pytest.raises(SchemaVersionError) as info:
        lake.scan("case_runs")
    assert info.value.where == path and info.value.known == TABLES["case_runs"].known_versions
    assert info.value.found == ("99" if b"assay.schema_version" in metadata else None)
    with pytest.raises(SchemaVersionError):
        connect(lake)


# The golden files were made once, with schema version 1, by:
#   lake = Lake(tmp); lake.write("case_runs", case_runs(2), team_id="golden", date="2024-05-06")
#   lake.write("runner_evaluations", evaluations(2), team_id="golden", date="2024-05-06")
# (outcomes, assertion_results, verdicts: two hand-written rows each, ids oc-/ar-/vd-0 and 1, at T0)
# and copying each written file to tests/storage/golden/<table>.v1.parquet. Never regenerate them:
# they stand for files already in users' lakes. A new version gets a new golden file next to them:
# assertion_results.v2 is the v1 rows plus evaluator_version 1 and 2, written by Lake.write.
KNOWN = [(table, version) for table in sorted(TABLES) for version in TABLES[table].known_versions]


def test_every_known_version_has_a_golden_file() -> None:
    assert {p.name for p in GOLDEN.glob("*.parquet")} == {f"{t}.v{v}.parquet" for t, v in KNOWN}


@pytest.mark.parametrize(("table", "version"), KNOWN)
def test_golden_files_of_every_known_version_still_read(lake: Lake, table: str, version: int) -> None:
    golden = GOLDEN / f"{table}.v{version}.parquet"
    dest = Path(lake.root, table, "team_id=golden", "date=2024-05-06", f"part-{'0' * 32}.parquet")
    dest.parent.mkdir(parents=True)
    shutil.copy(golden, dest)
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
    elif table == "case_runs":
        assert got["case_run_id"].to_list() == ["cr-0", "cr-1"]
        assert got["transcript"][1].to_list()[1] == {"role": "agent", "text": "hi ✓", "t": 1.5}
        assert got["tool_calls"][1].to_list()[0]["arguments"] == '{"q": 1}'
    else:
        assert got["evaluation_id"].to_list() == ["ev-0", "ev-1"] and got["score"].to_list() == [0.5, 0.5]
    assert connect(lake).sql(f"select count(*) from {table}").fetchall() == [(2,)]


def test_files_of_an_older_and_the_current_version_read_as_one_table(lake: Lake) -> None:
    dest = Path(lake.root, "assertion_results", "team_id=golden", "date=2024-05-06", f"part-{'0' * 32}.parquet")
    dest.parent.mkdir(parents=True)
    shutil.copy(GOLDEN / "assertion_results.v1.parquet", dest)
    current = pl.read_parquet(GOLDEN / "assertion_results.v2.parquet").with_columns(
        result_id=pl.Series(["ar-2", "ar-3"]), evaluator_version=pl.Series([3, 4], dtype=pl.Int32)
    )
    lake.write("assertion_results", current, team_id="golden", date="2024-05-07")
    got = lake.scan("assertion_results").collect().sort("result_id")
    assert got["evaluator_version"].to_list() == [1, 1, 3, 4]
    assert got["date"].to_list() == ["2024-05-06"] * 2 + ["2024-05-07"] * 2
    view = connect(lake).sql("select result_id, evaluator_version from assertion_results order by result_id")
    assert view.fetchall() == [("ar-0", 1), ("ar-1", 1), ("ar-2", 3), ("ar-3", 4)]


def test_a_torn_write_is_never_visible(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    first = lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06")
    before = lake.scan("case_runs").collect()

    def torn(table: pa.Table, where: str, **kwargs: object) -> None:
        with open(where, "wb") as f:
            f.write(b"PAR1" + b"\0" * 1000)  # a header and half a row group, then the machine dies
        raise OSError("disk pulled mid-write")

    monkeypatch.setattr(pq, "write_table", torn)
    with pytest.raises(OSError, match="disk pulled"):
        lake.write("case_runs", case_runs(5, prefix="new"), team_id="team-a", date="2024-05-07")
    monkeypatch.undo()
    assert lake.files("case_runs") == [first]
    assert not Path(lake.root, "case_runs", "team_id=team-a", "date=2024-05-07").exists()
    assert os.listdir(Path(lake.root, "_staging")) == []
    assert Lake(lake.url).scan("case_runs").collect().equals(before)


@pytest.fixture
def memory_lake() -> Iterator[Lake]:
    url = f"memory://lake-{uuid.uuid4().hex}"
    yield Lake(url)
    fsspec.filesystem("memory").rm(url, recursive=True)


def test_a_memory_filesystem_lake_round_trips_through_polars_and_duckdb(memory_lake: Lake) -> None:
    path = memory_lake.write("case_runs", case_runs(3), team_id="team-a", date="2024-05-06")
    memory_lake.write("runner_evaluations", evaluations(2), team_id="team-b", date="2024-05-07")
    assert path.startswith("memory:///lake-") and memory_lake.files("case_runs") == [path]
    assert not memory_lake.fs.exists(f"{memory_lake.root}/_staging")
    got = Lake(memory_lake.url).scan("case_runs").collect().sort("case_run_id")
    assert got["case_run_id"].to_list() == ["cr-0", "cr-1", "cr-2"] and set(got["team_id"]) == {"team-a"}
    con = connect(memory_lake)
    assert con.sql("select team_id, date, count(*) from runner_evaluations group by all").fetchall() == [
        ("team-b", "2024-05-07", 2)
    ]
    assert con.sql("select sum(duration_ms) from case_runs").fetchall() == [(3003.0,)]


@pytest.mark.parametrize("retry_delay", [timedelta(0), timedelta(seconds=5)])
def test_a_retried_write_never_double_counts(lake: Lake, retry_delay: timedelta) -> None:
    batch = case_runs(3)
    lake.write("case_runs", batch, team_id="team-a", date="2024-05-06")
    retried = batch.with_columns(reported_at=pl.lit(T0 + retry_delay).dt.cast_time_unit("us"), runner=pl.lit("retry"))
    lake.write("case_runs", retried, team_id="team-a", date="2024-05-07")  # the retry lands after midnight
    lake.write("case_runs", case_runs(1, prefix="other"), team_id="team-a", date="2024-05-07")
    assert len(lake.files("case_runs")) == 3

    got = lake.scan("case_runs").collect()
    assert got.height == 4 and got["case_run_id"].n_unique() == 4
    con = connect(lake)
    assert con.sql("select count(*), count(distinct case_run_id) from case_runs").fetchall() == [(4, 4)]
    if retry_delay:  # the first report wins, in both engines
        assert sorted(got["runner"].to_list()) == ["fixed"] * 4
        assert con.sql("select count(*) from case_runs where runner = 'retry'").fetchall() == [(0,)]
    sql_rows = con.sql("select case_run_id, runner, date from case_runs order by case_run_id").fetchall()
    assert sql_rows == got.select("case_run_id", "runner", "date").sort("case_run_id").rows()


def test_connect_registers_catalog_tables_and_refuses_a_name_clash(lake: Lake) -> None:
    lake.write("case_runs", case_runs(3), team_id="team-a", date="2024-05-06")
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


def test_each_file_is_version_checked_once_per_lake(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    lake.write("case_runs", case_runs(1), team_id="team-a", date="2024-05-06")
    _plant(lake, "case_runs", case_runs(1, prefix="p").to_arrow().select(TABLES["case_runs"].arrow_schema.names)
           .replace_schema_metadata({b"assay.table": b"case_runs", b"assay.schema_version": b"1"}))
    calls: list[str] = []
    real = pq.read_schema
    monkeypatch.setattr(pq, "read_schema", lambda path, **kw: calls.append(path) or real(path, **kw))
    lake.scan("case_runs").collect()
    lake.scan("case_runs").collect()
    assert len(calls) == 1  # the file this Lake wrote itself is known good


def test_from_settings_uses_the_resolved_lake_url(tmp_path: Path) -> None:
    lake = Lake.from_settings(Settings(home=tmp_path / "home"))
    assert lake.root == str((tmp_path / "home" / "lake").resolve())
    lake.write("case_runs", case_runs(1), team_id="team-a", date="2024-05-06")
    assert (tmp_path / "home" / "lake" / "case_runs" / "team_id=team-a").is_dir()


def test_an_unknown_table_or_a_stray_file_is_refused(lake: Lake) -> None:
    with pytest.raises(EvidenceError, match="no lake table 'no_such_table'; known: assertion_results, case_runs, outcomes, runner_evaluations, verdicts"):
        lake.write("no_such_table", case_runs(1), team_id="team-a", date="2024-05-06")
    stray = Path(lake.root, "case_runs", "team_id=team-a", "stray.parquet")
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"PAR1")
    with pytest.raises(EvidenceError, match=r"stray\.parquet: not a lake file path"):
        lake.scan("case_runs")
