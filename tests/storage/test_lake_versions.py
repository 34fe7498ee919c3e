"""Schema versions that change a nested type: case_runs v1 turns had no ``end_t``, runner_evaluations v1
had no ``met``/``value``. Files of both versions read as one table in every reader (Polars, DuckDB, the
migration of an earlier lake) and compaction rewrites old files at the current version."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from lake_kit import GOLDEN, T0, case_runs, evaluations, list_file, plant

from assay.storage.lake import TABLES, Lake
from assay.storage.lake.compact import compact
from assay.storage.lake.schema import OlderVersion, lake_table
from assay.storage.lake.upkeep import migrate
from assay.storage.query import connect

DAY = "2024-05-06"


def _golden_v1(lake: Lake, table: str) -> str:
    """The v1 golden file of ``table`` in the lake, listed as v1; its relative path."""
    lake.check_layout(creating=True)
    relative = f"{table}/team_id=golden/date={DAY}/part-{'0' * 32}.parquet"
    Path(lake.path(relative)).parent.mkdir(parents=True)
    shutil.copy(GOLDEN / f"{table}.v1.parquet", lake.path(relative))
    list_file(lake, relative, version=1)
    return relative


def _ends(frame: pl.DataFrame) -> dict[str, list[float | None]]:
    rows = frame.sort("case_run_id").select("case_run_id", ends=pl.col("transcript").list.eval(
        pl.element().struct.field("end_t")))
    return dict(rows.iter_rows())


def test_v1_and_v2_case_runs_read_as_one_table_in_polars_and_duckdb(lake: Lake) -> None:
    _golden_v1(lake, "case_runs")
    lake.write("case_runs", case_runs(2, prefix="new"), team_id="golden", date=DAY, origin="report", ref="r:q")
    assert sorted(v for _, v in lake.files("case_runs")) == [1, TABLES["case_runs"].version]
    want = {"cr-0": [None, None], "cr-1": [None, None], "new-0": [1.2, None], "new-1": [1.2, None]}
    assert _ends(lake.scan("case_runs").collect()) == want
    sql = "select case_run_id, [t.end_t for t in transcript], transcript[2].text from case_runs order by 1"
    assert connect(lake).sql(sql).fetchall() == [(k, v, "hi ✓") for k, v in want.items()]


def test_v1_and_v2_runner_evaluations_read_met_and_value_null_for_v1(lake: Lake) -> None:
    _golden_v1(lake, "runner_evaluations")
    rows = evaluations(2).with_columns(evaluation_id=pl.Series(["ev-2", "ev-3"]))
    lake.write("runner_evaluations", rows, team_id="golden", date=DAY, origin="report", ref="r:q")
    got = lake.scan("runner_evaluations").collect().sort("evaluation_id")
    assert got.select("evaluation_id", "met", "value").rows() == [
        ("ev-0", None, None), ("ev-1", None, None), ("ev-2", True, 0.5), ("ev-3", True, 0.5)]
    sql = "select evaluation_id, met, value from runner_evaluations order by 1"
    assert connect(lake).sql(sql).fetchall() == got.select("evaluation_id", "met", "value").rows()


def test_compaction_rewrites_v1_files_at_v2_with_the_new_fields_null(lake: Lake) -> None:
    for table in ("case_runs", "runner_evaluations"):
        _golden_v1(lake, table)
    lake.write("case_runs", case_runs(1, prefix="new"), team_id="golden", date=DAY, origin="report", ref="r:q")
    extra = evaluations(1).with_columns(evaluation_id=pl.lit("ev-9"))
    lake.write("runner_evaluations", extra, team_id="golden", date=DAY, origin="report", ref="r:q")
    before = {t: lake.read(t).sort(TABLES[t].natural_key) for t in ("case_runs", "runner_evaluations")}
    assert compact(lake, min_files=2)["partitions"] == 2
    for table, rows in before.items():
        assert lake.files(table) == [(lake.files(table)[0][0], TABLES[table].version)]  # one file, current version
        assert lake.read(table).sort(TABLES[table].natural_key).equals(rows)
    assert _ends(lake.read("case_runs"))["cr-1"] == [None, None]


def test_migrating_an_earlier_lake_reads_v1_case_runs_as_v2(lake: Lake) -> None:
    golden = f"case_runs/team_id=golden/date={DAY}/part-{'0' * 32}.parquet"
    Path(lake.path(golden)).parent.mkdir(parents=True)
    shutil.copy(GOLDEN / "case_runs.v1.parquet", lake.path(golden))  # cr-0 and cr-1, reported at T0
    retried = case_runs(2, reported_at=T0 + timedelta(seconds=5)).with_columns(  # cr-1 again, and cr-2
        case_run_id=pl.Series(["cr-1", "cr-2"]))
    plant(lake, "case_runs", retried, team="golden", date=DAY)
    assert migrate(lake) == {"case_runs": {"files": 2, "rewritten": 1, "duplicates_dropped": 1}}
    assert _ends(lake.read("case_runs")) == {"cr-0": [None, None], "cr-1": [None, None], "cr-2": [1.2, None]}


def test_an_older_version_may_only_widen_a_column_by_struct_fields() -> None:
    now = pa.schema([pa.field("id", pa.string(), nullable=False), ("turns", pa.list_(pa.struct([("t", pa.float64())])))])
    narrower = pa.schema([now.field("id"), ("turns", pa.list_(pa.struct([("t", pa.string())])))])
    with pytest.raises(ValueError, match=r"column 'turns' is list<item: struct<t: string>>, which does not cast to"):
        lake_table("x", 2, pa.schema([*now, pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False)]),
                   ["id"], first_by="at",
                   older=[OlderVersion(1, pa.schema([*narrower, pa.field("at", pa.timestamp("us", tz="UTC"))]), {})])
    widened = lake_table("x", 2, pa.schema([*now, pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False)]),
                         ["id"], first_by="at", older=[OlderVersion(1, pa.schema(
                             [now.field("id"), ("turns", pa.list_(pa.struct([]))),
                              pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False)]), {})])
    assert widened.widened_since(1) == {"turns": now.field("turns").type} and widened.widened_since(2) == {}
