"""The evidence lake: validated, atomically published, version-checked Parquet files.

Layout: ``<lake>/<table>/team_id=<t>/date=<YYYY-MM-DD>/part-<uuid32hex>.parquet``. Files are written
once and never changed. Every reader de-duplicates on the table's natural key, keeping the row with
the smallest ``first_by`` value (ties: the smallest file path), so a retried write never double-counts.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from datetime import date as _date
from typing import TYPE_CHECKING, Any

import fsspec.core
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from assay.core.errors import EvidenceError, IdentifierError, SchemaVersionError
from assay.core.ids import identifier

from .tables import PARTITIONS, TABLES, LakeTable, conform, validate

if TYPE_CHECKING:
    from assay.core.settings import Settings

TABLE_KEY, VERSION_KEY = b"assay.table", b"assay.schema_version"
FILE_COLUMN = "__assay_file"
"""Reader-only column holding each row's file path (the de-duplication tie-break); never returned."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_PART = re.compile(r"team_id=([^/]+)/date=([^/]+)/part-[0-9a-f]{32}\.parquet")


class Lake:
    """The evidence lake at one fsspec URL or local path."""

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None = None,
        *,
        tables: Mapping[str, LakeTable] | None = None,
    ):
        """Open the lake at ``url``; ``tables`` replaces the registry (tests use it for extra tables)."""
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.tables: Mapping[str, LakeTable] = TABLES if tables is None else tables
        self.local = isinstance(self.fs, LocalFileSystem)
        self._versions: dict[str, int] = {}
        """Schema version of every file checked so far (each file is read for it once)."""

    @classmethod
    def from_settings(cls, settings: "Settings") -> "Lake":
        """The lake named by the settings (``ASSAY_LAKE_URL``, default ``<home>/lake``)."""
        return cls(settings.resolved_lake_url)

    def table(self, name: str) -> LakeTable:
        """The registered table ``name``, or :class:`EvidenceError` listing the known tables."""
        try:
            return self.tables[name]
        except KeyError:
            raise EvidenceError(f"no lake table {name!r}; known: {', '.join(sorted(self.tables))}") from None

    def write(self, table: str, data: pl.DataFrame | pa.Table, *, team_id: str, date: str) -> str:
        """Validate ``data`` and publish it as one new file of ``table``; return the file's path.

        The partition values are checked before anything else, and a validation failure raises
        :class:`EvidenceError` having written nothing.
        """
        t = self.table(table)
        identifier(team_id, "team_id")
        _check_date(date)
        arrow = validate(t, conform(t, data))
        meta = {TABLE_KEY: t.name.encode(), VERSION_KEY: str(t.version).encode()}
        arrow = arrow.replace_schema_metadata(meta)
        final = f"{self.root}/{t.name}/team_id={team_id}/date={date}/part-{uuid.uuid4().hex}.parquet"
        if self.local:
            self._publish_local(arrow, final)
        else:  # an object store: one PUT of the finished bytes is atomic
            sink = pa.BufferOutputStream()
            pq.write_table(arrow, sink, compression="zstd")
            self.fs.pipe_file(final, sink.getvalue().to_pybytes())
        self._versions[final] = t.version
        return self._address(final)

    def _publish_local(self, arrow: pa.Table, final: str) -> None:
        staging = f"{self.root}/_staging"
        os.makedirs(staging, exist_ok=True)
        tmp = f"{staging}/{uuid.uuid4().hex}.tmp"
        try:
            pq.write_table(arrow, tmp, compression="zstd")
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def files(self, table: str) -> list[str]:
        """Every published file of ``table`` (URLs off the local disk), sorted, each version-checked."""
        return [self._address(p) for p in self._published(self.table(table))]

    def files_by_version(self, table: str) -> dict[int, list[str]]:
        """:meth:`files`, grouped by each file's schema version (oldest first)."""
        return {v: [self._address(p) for p in paths] for v, paths in self._by_version(self.table(table)).items()}

    def _by_version(self, t: LakeTable) -> dict[int, list[str]]:
        grouped: dict[int, list[str]] = {}
        for path in self._published(t):
            grouped.setdefault(self._versions[path], []).append(path)
        return dict(sorted(grouped.items()))

    def _published(self, t: LakeTable) -> list[str]:
        """Filesystem paths of ``t``'s files; each is version-checked once per Lake instance."""
        base = f"{self.root}/{t.name}"
        self.fs.invalidate_cache(base)  # an object store's cached listing would hide other writers' files
        if not self.fs.exists(base):
            return []
        found = sorted(p for p in self.fs.find(base) if p.endswith(".parquet"))
        for path in found:
            if not _PART.fullmatch(path[len(base) + 1 :]):
                raise EvidenceError(f"{self._address(path)}: not a lake file path (<table>/team_id=/date=/part-<hex>)")
            if path not in self._versions:
                self._versions[path] = self._check_version(t, path)
        return found

    def _check_version(self, t: LakeTable, path: str) -> int:
        """The file's schema version, once checked to be one ``t`` reads, with that version's columns."""
        schema = pq.read_schema(path, filesystem=None if self.local else self.fs)
        meta = schema.metadata or {}
        where = self._address(path)
        found = meta.get(VERSION_KEY, b"").decode()
        known = t.known_versions
        if found not in {str(v) for v in known}:
            raise SchemaVersionError(where, found or None, known)
        version = int(found)
        if meta.get(TABLE_KEY) != t.name.encode():
            raise EvidenceError(f"{where}: file claims table {meta.get(TABLE_KEY)!r}, expected {t.name!r}")
        if not schema.remove_metadata().equals(t.file_schema(version)):
            raise EvidenceError(f"{where}: columns differ from {t.name} v{version}: {schema.names}")
        return version

    def scan(self, table: str) -> pl.LazyFrame:
        """All rows of ``table``, partition columns added as strings, one row per natural key."""
        t = self.table(table)
        by_version = self._by_version(t)
        if not by_version:
            return pl.LazyFrame(schema=pl.from_arrow(t.read_schema.empty_table()).schema)  # type: ignore[union-attr]
        lf = pl.concat([self._scan_version(t, v, paths) for v, paths in by_version.items()], how="vertical")
        first = pl.col(FILE_COLUMN).sort_by(t.first_by, FILE_COLUMN).first().over(t.natural_key)
        return lf.filter(pl.col(FILE_COLUMN) == first).select(t.read_schema.names)

    def _scan_version(self, t: LakeTable, version: int, files: list[str]) -> pl.LazyFrame:
        """Files of one schema version, read as the current version (columns added since filled in)."""
        if self.local:
            lf = pl.scan_parquet(
                files,
                hive_partitioning=True,
                hive_schema={p: pl.String for p in PARTITIONS},
                try_parse_hive_dates=False,
                include_file_paths=FILE_COLUMN,
            )
        else:
            tables = (self._read_remote(t, version, f) for f in files)
            lf = pl.from_arrow(pa.concat_tables(tables)).lazy()  # type: ignore[union-attr]
        added = t.added_since(version)
        if added:
            dtypes = pl.from_arrow(pa.schema([(n, typ) for n, (_, typ) in added.items()]).empty_table()).schema  # type: ignore[union-attr]
            lf = lf.with_columns(pl.lit(value, dtypes[name]).alias(name) for name, (value, _) in added.items())
        return lf.select([*t.read_schema.names, FILE_COLUMN])

    def _read_remote(self, t: LakeTable, version: int, path: str) -> pa.Table:
        arrow = pq.read_table(path, filesystem=self.fs, schema=t.file_schema(version))
        parts = _PART.search(path)
        assert parts is not None  # files() checked the layout
        for name, value in [*zip(PARTITIONS, parts.groups()), (FILE_COLUMN, self._address(path))]:
            arrow = arrow.append_column(name, pa.array([value] * arrow.num_rows, pa.string()))
        return arrow

    def read(self, table: str, **equals: Any) -> pl.DataFrame:
        """``scan(table)`` filtered on column equality (``read("case_runs", run_id="r1")``), collected."""
        lf = self.scan(table)
        unknown = set(equals) - set(lf.collect_schema().names())
        if unknown:
            raise EvidenceError(f"{table}: no column(s) {sorted(unknown)} to filter on")
        return lf.filter(**equals).collect() if equals else lf.collect()

    def _address(self, path: str) -> str:
        return path if self.local else self.fs.unstrip_protocol(path)


def _check_date(value: Any) -> str:
    rule = "a calendar date written YYYY-MM-DD"
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise IdentifierError("date", value, rule)
    try:
        _date.fromisoformat(value)
    except ValueError:
        raise IdentifierError("date", value, rule) from None
    return value
