"""Lazy reads of an object-store lake, against a real moto server: pushdown proved by the bytes served."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import fsspec
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import s3fs
from fsspec.implementations.local import LocalFileSystem
from s3 import Request, S3Lake

from assay.core.errors import EvidenceError
from assay.storage.lake.remote import polars_storage_options, register_filesystem, scan_files

ROWS, WIDE, ROW_GROUP = 20_000, 16, 5_000
FILE = "__file"


def wide_table(first_key: int) -> pa.Table:
    """``k`` ascending from ``first_key`` (so row-group statistics separate files), then random floats."""
    rng = random.Random(first_key)
    columns = {f"c{i}": pa.array([rng.random() for _ in range(ROWS)]) for i in range(WIDE)}
    return pa.table({"k": pa.array(range(first_key, first_key + ROWS), pa.int64()), **columns})


def put(fs: fsspec.AbstractFileSystem, path: str, table: pa.Table) -> int:
    """Write ``table`` as Parquet at ``path`` on ``fs``; return the file's size."""
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "wb") as out:
        pq.write_table(table, out, row_group_size=ROW_GROUP)
    return fs.size(path)


def served(requests: list[Request], key: str, size: int) -> int:
    """Bytes the server sent of object ``key`` (``size`` bytes long) in answer to ``requests``."""
    return sum(r.bytes_of(size) for r in requests if r.method == "GET" and r.key == key)


@pytest.fixture
def two_files(s3_lake: S3Lake) -> dict[str, int]:
    """Two wide files in different partitions, keys 0.. and 1,000,000..; their paths and sizes."""
    root = f"{s3_lake.bucket}/lake/t"
    a = f"{root}/team_id=team-a/date=2024-05-06/part-a.parquet"
    b = f"{root}/team_id=team-b/date=2024-05-07/part-b.parquet"
    return {a: put(s3_lake.fs, a, wide_table(0)), b: put(s3_lake.fs, b, wide_table(1_000_000))}


def test_standard_aws_environment_reaches_the_server_from_s3fs_polars_and_duckdb(s3_lake: S3Lake) -> None:
    fs = s3fs.S3FileSystem()  # configured by the environment alone
    assert fs.storage_options == {} and polars_storage_options(fs) is None
    url = f"{s3_lake.url}/t/team_id=team-a/date=2024-05-06/part-0.parquet"
    with fs.open(url, "wb") as out:
        pq.write_table(pa.table({"k": [1, 2, 3]}), out)
    assert pl.scan_parquet(url).select(pl.col("k").sum()).collect().item() == 6
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    register_filesystem(con, fs)
    assert con.sql(f"select sum(k) from read_parquet('{url}')").fetchall() == [(6,)]


def test_a_scan_pushes_filter_and_projection_down_and_skips_files_by_statistics(
    s3_lake: S3Lake, two_files: dict[str, int]
) -> None:
    (a, size_a), (b, size_b) = two_files.items()
    scan = scan_files(s3_lake.fs, list(two_files), file_column=FILE)
    query = scan.filter(pl.col("k") < 10).select("k", "c3", "team_id", "date", FILE)
    plan = query.explain()
    scan_node = plan[plan.index("Parquet SCAN") :]
    assert "PROJECT 4/" in scan_node and 'SELECTION: col("k") < 10' in scan_node, plan
    with s3_lake.server.record() as requests:
        got = query.collect()
    assert got["k"].to_list() == list(range(10))
    assert got.select("team_id", "date", FILE).unique().rows() == [("team-a", "2024-05-06", f"s3://{a}")]
    assert got.schema["team_id"] == pl.String and got.schema["date"] == pl.String
    # b's statistics exclude it: only its footer is fetched; of a, one row group's chunks of two columns
    assert 0 < served(requests, b, size_b) < size_b / 8
    assert 0 < served(requests, a, size_a) < size_a / 4
    with s3_lake.server.record() as requests:  # the control: reading everything fetches everything
        assert scan_files(s3_lake.fs, list(two_files)).collect().height == 2 * ROWS
    assert served(requests, a, size_a) >= size_a and served(requests, b, size_b) >= size_b


def test_one_column_of_a_wide_file_costs_a_fraction_of_the_file(s3_lake: S3Lake, two_files: dict[str, int]) -> None:
    a, size = next(iter(two_files.items()))
    with s3_lake.server.record() as requests:
        assert scan_files(s3_lake.fs, [a]).select(pl.col("c7").count()).collect().item() == ROWS
    assert served(requests, a, size) < size / 4


def test_duckdb_reads_s3_paths_through_fsspec_without_extensions_and_fetches_little(
    s3_lake: S3Lake, two_files: dict[str, int]
) -> None:
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    register_filesystem(con, s3_lake.fs)
    register_filesystem(con, s3_lake.fs)  # registering again replaces, it does not fail
    urls = ", ".join(f"'s3://{p}'" for p in two_files)
    sql = (
        f"select team_id, date, count(*) from read_parquet([{urls}], hive_partitioning = true, "
        "hive_types = {'team_id': VARCHAR, 'date': VARCHAR}) where k < 10 group by all"
    )
    with s3_lake.server.record() as requests:
        assert con.sql(sql).fetchall() == [("team-a", "2024-05-06", 10)]
    assert sum(served(requests, p, size) for p, size in two_files.items()) < sum(two_files.values()) / 4
    loaded = con.sql("select extension_name from duckdb_extensions() where loaded").fetchall()
    assert ("httpfs",) not in loaded


def test_explicit_s3fs_settings_carry_over_to_polars_without_the_environment(
    s3_lake: S3Lake, two_files: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in s3_lake.env:
        monkeypatch.delenv(key)
    fs = s3_lake.server.filesystem()
    assert polars_storage_options(fs) == {
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_endpoint_url": s3_lake.server.endpoint,
        "aws_allow_http": "true",
        "aws_region": "us-east-1",
    }
    assert scan_files(fs, [f"s3://{p}" for p in two_files]).select(pl.len()).collect().item() == 2 * ROWS


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A private folder on fsspec's (process-wide) memory filesystem, removed afterwards."""
    root = f"/remote-{uuid.uuid4().hex}"
    yield root
    fsspec.filesystem("memory").rm(root, recursive=True)


def test_local_memory_and_s3_files_scan_alike(s3_lake: S3Lake, tmp_path: Path, memory_root: str) -> None:
    table = pa.table({"k": pa.array([3, 1, 2], pa.int64()), "s": ["c", "a", None]})
    tail = "t/team_id=team-a/date=2024-05-06/part-0.parquet"
    places = [
        (LocalFileSystem(), f"{tmp_path}/{tail}", f"{tmp_path}/{tail}"),
        (fsspec.filesystem("memory"), f"{memory_root}/{tail}", f"memory://{memory_root}/{tail}"),
        (s3_lake.fs, f"{s3_lake.bucket}/{tail}", f"s3://{s3_lake.bucket}/{tail}"),
    ]
    frames = []
    for fs, path, address in places:
        put(fs, path, table)
        lf = scan_files(fs, [address], schema=table.schema, file_column=FILE)
        got = lf.filter(pl.col("k") > 1).sort("k").collect()
        assert got[FILE].to_list() == [address, address], address
        frames.append(got.drop(FILE))
    assert frames[0].columns == ["k", "s", "team_id", "date"]
    assert frames[0].rows() == [(2, None, "team-a", "2024-05-06"), (3, "c", "team-a", "2024-05-06")]
    assert frames[1].equals(frames[0]) and frames[2].equals(frames[0])


def test_no_files_scan_empty_with_the_schema_and_otherwise_refuse(s3_lake: S3Lake) -> None:
    schema = pa.schema([("k", pa.int64())])
    empty = scan_files(s3_lake.fs, [], schema=schema, file_column=FILE).collect()
    assert empty.height == 0
    assert empty.schema == pl.Schema({"k": pl.Int64, "team_id": pl.String, "date": pl.String, FILE: pl.String})
    with pytest.raises(EvidenceError, match="no files to scan and no schema"):
        scan_files(s3_lake.fs, [])
