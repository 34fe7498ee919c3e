"""Lazy reads of lake files through fsspec: Polars scans with pushdown, DuckDB over the same filesystem.

On local disk and S3, :func:`scan_files` never reads a file whole: Polars reaches them itself (its
``object_store`` client), so a query opens each file's footer, skips row groups whose statistics
rule them out, and fetches only the column chunks it selects. An S3 filesystem's explicit settings
(endpoint, keys, region) carry over through :func:`polars_storage_options`; everything else comes
from the standard AWS environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``), which s3fs and Polars both read. Any other fsspec
filesystem (``memory://``, ...) has each file fetched whole when the scan is built, then scanned
in memory (filters and projections still push down into the decoding).

DuckDB cannot load httpfs here: :func:`register_filesystem` lets fsspec serve its ``s3://`` paths.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from assay.core.errors import EvidenceError

from .schema import PARTITIONS

if TYPE_CHECKING:
    import duckdb

__all__ = ["DUCKDB_BLOCK_SIZE", "polars_storage_options", "register_filesystem", "scan_files"]

_S3 = frozenset({"s3", "s3a"})

DUCKDB_BLOCK_SIZE = 256 * 1024
"""Read-ahead of the S3 files DuckDB opens through fsspec (s3fs's own default, 50 MiB, reads a
typical lake file whole for any query)."""


def scan_files(
    fs: AbstractFileSystem,
    paths: Sequence[str],
    *,
    schema: pa.Schema | None = None,
    file_column: str | None = None,
) -> pl.LazyFrame:
    """A lazy scan of the Parquet files ``paths`` on ``fs``; filters and projections push down.

    ``paths`` are paths on ``fs`` or URLs of it (``s3://bucket/key``). Columns: the file's (read as
    ``schema`` when given, else as the first file's), then the hive partitions (``team_id``,
    ``date``) as strings, then, when ``file_column`` is named, each row's file address (a local
    path, or a URL off the local disk). No paths need a ``schema``: the scan is then empty.
    """
    addresses = [_address(fs, fs._strip_protocol(p)) for p in paths]
    if not addresses:
        if schema is None:
            raise EvidenceError("no files to scan and no schema to give the empty result its columns")
        return _empty(schema, file_column)
    if isinstance(fs, LocalFileSystem) or _protocols(fs) & _S3:
        return pl.scan_parquet(
            addresses,
            schema=None if schema is None else _polars_schema(schema),
            hive_partitioning=True,
            hive_schema={p: pl.String for p in PARTITIONS},
            try_parse_hive_dates=False,
            include_file_paths=file_column,
            storage_options=polars_storage_options(fs),
        )
    return pl.concat([_scan_fetched(fs, a, schema, file_column) for a in addresses], how="vertical")


def polars_storage_options(fs: AbstractFileSystem) -> dict[str, str] | None:
    """Polars' storage options for an S3 filesystem's explicit settings; ``None`` if it has none.

    Carried over: ``key``, ``secret``, ``token``, ``endpoint_url`` (also from ``client_kwargs``;
    plain ``http://`` is then allowed), ``client_kwargs["region_name"]``, ``anon``, ``profile`` and
    ``requester_pays``. Unset ones come from the AWS environment, as they do for s3fs.
    """
    if not _protocols(fs) & _S3:
        return None
    client = getattr(fs, "client_kwargs", None) or {}
    endpoint = getattr(fs, "endpoint_url", None) or client.get("endpoint_url")
    given = {
        "aws_access_key_id": getattr(fs, "key", None),
        "aws_secret_access_key": getattr(fs, "secret", None),
        "aws_session_token": getattr(fs, "token", None),
        "aws_endpoint_url": endpoint,
        "aws_allow_http": "true" if str(endpoint).startswith("http://") else None,
        "aws_region": client.get("region_name"),
        "aws_skip_signature": "true" if getattr(fs, "anon", False) else None,
        "aws_profile": (getattr(fs, "kwargs", None) or {}).get("profile"),
        "aws_request_payer": "true" if getattr(fs, "requester_pays", False) else None,
    }
    options = {k: str(v) for k, v in given.items() if v}
    return options or None


def register_filesystem(con: "duckdb.DuckDBPyConnection", fs: AbstractFileSystem) -> None:
    """Let fsspec serve ``fs``'s URLs to ``con`` (``read_parquet('s3://...')``); no extension needed.

    A local filesystem needs nothing. One registered earlier for the same protocol is replaced. An
    S3 filesystem is served with reads of :data:`DUCKDB_BLOCK_SIZE` ahead, so a query fetches about
    the footer and the column chunks it reads, not the whole file.
    """
    if isinstance(fs, LocalFileSystem):
        return
    if _protocols(fs) & _S3 and fs.default_block_size > DUCKDB_BLOCK_SIZE:  # type: ignore[attr-defined]
        fs = type(fs)(**{**fs.storage_options, "default_block_size": DUCKDB_BLOCK_SIZE})
    name = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if name in con.list_filesystems():
        con.unregister_filesystem(name)
    con.register_filesystem(fs)


def _protocols(fs: AbstractFileSystem) -> set[str]:
    return {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)


def _address(fs: AbstractFileSystem, path: str) -> str:
    return path if isinstance(fs, LocalFileSystem) else fs.unstrip_protocol(path)


def _polars_schema(schema: pa.Schema) -> pl.Schema:
    return pl.from_arrow(schema.empty_table()).collect_schema()  # type: ignore[union-attr]


def _extra_columns(address: str, file_column: str | None) -> list[pl.Expr]:
    """The hive partitions parsed from the path (null when absent), then the file address."""
    segments = dict(s.split("=", 1) for s in address.split("/") if "=" in s)
    extra = [pl.lit(segments.get(p), pl.String).alias(p) for p in PARTITIONS]
    return extra + ([pl.lit(address, pl.String).alias(file_column)] if file_column else [])


def _scan_fetched(
    fs: AbstractFileSystem, address: str, schema: pa.Schema | None, file_column: str | None
) -> pl.LazyFrame:
    """One file on a filesystem Polars cannot reach itself: fetched whole, then scanned in memory.

    Not through PyArrow over fsspec (``pyarrow.fs.FSSpecHandler``): its reader threads abort the
    process at exit now and then ("terminate called without an active exception", apache/arrow#39162).
    """
    data = io.BytesIO(fs.cat_file(fs._strip_protocol(address)))
    lf = pl.scan_parquet(data, schema=None if schema is None else _polars_schema(schema))
    return lf.with_columns(_extra_columns(address, file_column))


def _empty(schema: pa.Schema, file_column: str | None) -> pl.LazyFrame:
    frame = pl.LazyFrame(schema=_polars_schema(schema))
    return frame.with_columns(_extra_columns("", file_column)).clear()
