"""The evidence lake: validated Parquet files, visible exactly when the catalog's manifest names them.

Layout: ``<lake>/<table>/team_id=<t>/date=<YYYY-MM-DD>/part-<uuid32hex>.parquet``. Files are written
once and never changed. Writing is two steps:

1. :meth:`Lake.stage` validates rows, takes a lease on the new file's path (a ``lake_staged`` row, in a
   short transaction of its own) and writes the file (atomically: a local file appears whole by rename,
   an object-store file by one PUT), recording its size and sha256. Nobody reads it yet: no manifest row
   names it, and vacuum leaves it alone while the lease lasts (:meth:`Lake.renew_staged` extends it).
2. :meth:`Lake.commit` checks that every staged file is still there as it was written (size and footer)
   and still leased, then names the files in the manifest and drops their leases, **in the caller's
   catalog transaction**, next to what makes them true (a report's acceptance, a judging pass). The
   catalog's write lock is held only for that short transaction, never while Parquet is written.

Readers ask the manifest first (:mod:`.manifest`) and open only the files of the runs, teams and dates
they need, each checked cheaply against its manifest row first (:mod:`.integrity`); uniqueness holds at write time (request ids and pass ids are unique in the catalog), so no
reader de-duplicates. A file no row names (a crashed or refused writer's) is never read, and
:func:`~.upkeep.vacuum` deletes it after a grace period.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from datetime import date as _date
from typing import TYPE_CHECKING, Any

import fsspec.core
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa
from fsspec.implementations.local import LocalFileSystem

from assay.core.errors import EvidenceError, IdentifierError, SchemaVersionError
from assay.core.ids import identifier

from . import integrity, manifest
from .integrity import FILE_KEY, TABLE_KEY, VERSION_KEY, FileProblem, LakeFileError
from .manifest import FileFilter, LakeFile
from .remote import scan_files
from .schema import LakeTable, conform, validate
from .tables import TABLES

if TYPE_CHECKING:
    from assay.core.settings import Settings

MARKER = "_assay_lake.json"
"""A file at the lake's root saying its files are listed by a catalog manifest (written on first use)."""
STAGING = "_staging"
ROW_GROUP_ROWS = 256 * 1024
"""Rows per Parquet row group: large enough for fast scans, small enough that a filter on a sorted
column (``run_id``) skips most of a compacted file."""
LEASE_SECONDS = 3600.0
"""How long a staged file is protected from vacuum before its writer must commit or renew the lease."""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class LakeLayoutError(EvidenceError):
    """A lake written before the manifest existed: its files are listed by nobody yet."""


class Lake:
    """The evidence lake at one fsspec URL or local path, its files listed by the catalog at ``engine``."""

    def __init__(
        self,
        url: str,
        engine: sa.Engine,
        storage_options: dict[str, Any] | None = None,
        *,
        tables: Mapping[str, LakeTable] | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ):
        """Open the lake at ``url``; ``tables`` replaces the registry (tests use it for extra tables);
        ``lease_seconds``: how long a staged file's lease lasts (:meth:`stage`, :meth:`renew_staged`)."""
        self.url = url
        self.lease_seconds = lease_seconds
        self.engine = engine
        self.fs, self.root = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.tables: Mapping[str, LakeTable] = TABLES if tables is None else tables
        self.local = isinstance(self.fs, LocalFileSystem)
        self._layout_checked = False

    @classmethod
    def from_settings(cls, settings: "Settings", engine: sa.Engine) -> "Lake":
        """The lake named by the settings (``ASSAY_LAKE_URL``, default ``<home>/lake``)."""
        return cls(settings.resolved_lake_url, engine)

    def table(self, name: str) -> LakeTable:
        """The registered table ``name``, or :class:`EvidenceError` listing the known tables."""
        try:
            return self.tables[name]
        except KeyError:
            raise EvidenceError(f"no lake table {name!r}; known: {', '.join(sorted(self.tables))}") from None

    # -- writing ----------------------------------------------------------------------------------
    def stage(self, table: str, data: pl.DataFrame | pa.Table, *, team_id: str, date: str,
              validated: bool = False) -> LakeFile:
        """Validate ``data`` and write it as one new file of ``table``, not yet visible to any reader.

        The partition values are checked before anything else, and a validation failure raises
        :class:`EvidenceError` having written nothing. ``validated``: the caller has run :meth:`validate` on
        rows that include these (one check of a frame it splits into many files); they are conformed only.
        """
        t = self.table(table)
        identifier(team_id, "team_id")
        _check_date(date)
        self.check_layout(creating=True)
        arrow = conform(t, data) if validated else validate(t, conform(t, data))
        if t.sort_by:
            arrow = arrow.sort_by([(c, "ascending") for c in t.sort_by])
        part = uuid.uuid4().hex
        relative = f"{t.name}/team_id={team_id}/date={date}/part-{part}.parquet"
        arrow = arrow.replace_schema_metadata(
            {TABLE_KEY: t.name.encode(), VERSION_KEY: str(t.version).encode(), FILE_KEY: relative.encode()})
        with self.engine.begin() as conn:  # before the file exists: vacuum never sees it unprotected
            manifest.lease(conn, [relative], until=self._lease_end())
        try:
            size, digest = self._put(arrow, relative, part)
        except BaseException:
            with self.engine.begin() as conn:
                manifest.release(conn, [relative])
            raise
        runs = tuple(sorted(set(arrow.column("run_id").to_pylist()))) if "run_id" in arrow.column_names else ()
        return LakeFile(t.name, relative, team_id, date, arrow.num_rows, size, t.version, runs, digest, leased=True)

    def renew_staged(self, staged: Sequence[LakeFile]) -> None:
        """Extend the leases on ``staged`` files by :attr:`lease_seconds` from now, for a writer that works
        longer than that between staging and committing. A lease that lapsed already (vacuum may have
        deleted its file) raises :class:`EvidenceError`: the writer must stage those rows again."""
        paths = [f.path for f in staged if f.leased]
        if not paths:
            return
        with self.engine.begin() as conn:
            lapsed = manifest.renew(conn, paths, until=self._lease_end())
        if lapsed:
            raise EvidenceError(f"the lease on staged lake file {self.address(sorted(lapsed)[0])} lapsed"
                                + (f" (and {len(lapsed) - 1} more)" if len(lapsed) > 1 else "")
                                + ": vacuum may have deleted it; stage its rows again")

    def _lease_end(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.lease_seconds)

    def validate(self, table: str, data: pl.DataFrame | pa.Table) -> None:
        """Check ``data`` against ``table``'s schema and checks (:class:`EvidenceError` when it does not hold),
        writing nothing: for a caller that then stages it in several files with ``validated=True``."""
        t = self.table(table)
        validate(t, conform(t, data))

    def _put(self, arrow: pa.Table, relative: str, part: str) -> tuple[int, str]:
        """Write ``arrow`` as the file ``relative`` so that it appears whole or not at all; return its size
        in bytes and sha256. A local file is written as ``_staging/<part>.tmp`` first (its lease covers that too).

        A full disk raises :class:`EvidenceError` naming the file and its partition, having left nothing behind.
        """
        final = self.path(relative)
        sink = pa.BufferOutputStream()
        pq.write_table(arrow, sink, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        body = sink.getvalue()
        digest = integrity.checksum(body)
        try:
            if not self.local:  # an object store: one PUT of the finished bytes is atomic
                self.fs.pipe_file(final, body.to_pybytes())
                return body.size, digest
            staging = f"{self.root}/{STAGING}"
            os.makedirs(staging, exist_ok=True)
            tmp = f"{staging}/{part}.tmp"
            try:
                _write_bytes(tmp, body)
                os.makedirs(os.path.dirname(final), exist_ok=True)
                os.replace(tmp, final)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            table, team, date, _ = relative.split("/")
            raise EvidenceError(
                f"no space left on the device writing lake file {self.address(relative)} ({table}, "
                f"{team.replace('=', ' ')}, {date.replace('=', ' ')}): nothing was recorded; free space on the "
                "lake's disk and run the command again"
            ) from None
        return body.size, digest

    def commit(self, conn: sa.Connection, written: Sequence[LakeFile], *, origin: str, ref: str) -> None:
        """Name ``written`` in the manifest within ``conn``'s transaction (visible when it commits).

        Each file must still be there as it was written (size and footer) and, when staged, still leased
        (a lapsed lease may have let vacuum delete it): otherwise :class:`EvidenceError` names the file and
        the caller's transaction rolls back, recording nothing; the writer must stage its rows again.
        """
        for f in written:
            found = integrity.problem(self, f, parsed=True)
            if found is not None:
                raise LakeFileError(f"cannot commit: staged {found.describe()}; nothing was recorded: stage the "
                                    "rows again")
        lapsed = manifest.release(conn, [f.path for f in written if f.leased])
        if lapsed:
            raise EvidenceError(
                f"cannot commit: the lease on staged lake file {self.address(sorted(lapsed)[0])} lapsed, so vacuum "
                "may delete it; nothing was recorded: stage the rows again (or renew leases while working: "
                "Lake.renew_staged)"
            )
        manifest.record(conn, written, origin=origin, ref=ref, now=datetime.now(UTC))

    def write(self, table: str, data: pl.DataFrame | pa.Table, *, team_id: str, date: str, origin: str,
              ref: str) -> str:
        """Stage ``data`` and commit it at once, in a transaction of its own; return the file's address."""
        staged = self.stage(table, data, team_id=team_id, date=date)
        with self.engine.begin() as conn:
            self.commit(conn, [staged], origin=origin, ref=ref)
        return self.address(staged.path)

    # -- reading ----------------------------------------------------------------------------------
    def files(self, table: str, where: FileFilter = FileFilter()) -> list[tuple[str, int]]:
        """(address, schema version) of the live files of ``table`` that ``where`` selects.

        A file of a schema version this build does not read raises :class:`SchemaVersionError` naming
        it, so every reader (:meth:`scan`, the DuckDB views) refuses it before opening anything.
        """
        return self._addressed(self.table(table), self.live(table, where))

    def snapshot(self, teams: Sequence[str] | None = None) -> tuple[dict[str, list[tuple[str, int]]], list[FileProblem]]:
        """(address, schema version) of every table's live files (of ``teams``, or all), from one read of the
        manifest, leaving out the files that fail the cheap check (:mod:`.integrity`); and those files."""
        self.check_layout()
        with self.engine.connect() as conn:
            found = manifest.live_tables(conn, list(self.tables), teams)
        problems = [p for files in found.values() for f in files if (p := integrity.problem(self, f))]
        bad = {p.path for p in problems}
        good = {name: [(f.path, f.version) for f in files if f.path not in bad] for name, files in found.items()}
        return {name: self._addressed(self.tables[name], listed) for name, listed in good.items()}, problems

    def verify(self, *, team: str | None = None, table: str | None = None) -> list[FileProblem]:
        """Every live file (of ``team`` and ``table``, or all) that differs from its manifest row, by the
        full check: size, footer, columns and sha256 (``assay lake verify``)."""
        self.check_layout()
        names = [self.table(table).name] if table else list(self.tables)
        with self.engine.connect() as conn:
            found = manifest.live_tables(conn, names, None if team is None else [team])
        return [p for files in found.values() for f in files if (p := integrity.problem(self, f, full=True))]

    def _addressed(self, t: LakeTable, listed: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """``listed`` (relative path, version) as addresses; a version this build does not read is refused by name."""
        return _known(t, [(self.address(path), version) for path, version in listed])

    def live(self, table: str, where: FileFilter = FileFilter()) -> list[tuple[str, int]]:
        """(path relative to the root, schema version) of the live files of ``table`` that ``where`` selects.

        Each is checked cheaply against its manifest row first (:func:`.integrity.problem`): a file missing
        or not as written raises :class:`EvidenceError` naming it, its team and date (files of other
        partitions are never looked at).
        """
        self.check_layout()
        with self.engine.connect() as conn:
            listed = manifest.listed(conn, self.table(table).name, where)
        for f in listed:
            found = integrity.problem(self, f)
            if found is not None:
                raise found.error()
        return [(f.path, f.version) for f in listed]

    def scan(self, table: str, where: FileFilter = FileFilter(), **narrow: Any) -> pl.LazyFrame:
        """The rows of ``table`` in the files ``where`` (or ``runs=``, ``teams=``, ...) selects, lazily.

        Partition columns ``team_id`` and ``date`` are added as strings. Files of older schema
        versions read as the current one. A named file that is missing raises :class:`EvidenceError`
        naming it (only for readers of its partition: others never open it).
        """
        where = FileFilter(**narrow) if narrow else where
        return self.scan_files(table, self.files(table, where))

    def scan_files(self, table: str, found: Sequence[tuple[str, int]]) -> pl.LazyFrame:
        """The rows of the given (address, schema version) files of ``table``, lazily, read as the current version."""
        t = self.table(table)
        if not found:
            return pl.LazyFrame(schema=pl.from_arrow(t.read_schema.empty_table()).schema)  # type: ignore[union-attr]
        by_version: dict[int, list[str]] = {}
        for address, version in _known(t, found):
            by_version.setdefault(version, []).append(address)
        if self.local:
            missing = [a for a, _ in found if not os.path.exists(a)]
            if missing:
                raise LakeFileError(
                    f"lake file {missing[0]} is listed by the manifest but missing"
                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                    + "; restore it from a backup: the rows it held cannot be read"
                )
        return pl.concat([self._scan_version(t, v, paths) for v, paths in sorted(by_version.items())], how="vertical")

    def _scan_version(self, t: LakeTable, version: int, paths: list[str]) -> pl.LazyFrame:
        """Files of one schema version, read lazily as the current version (columns added since filled in)."""
        lf = scan_files(self.fs, paths, schema=t.file_schema(version))
        added = t.added_since(version)
        if added:
            dtypes = pl.from_arrow(pa.schema([(n, typ) for n, (_, typ) in added.items()]).empty_table()).schema  # type: ignore[union-attr]
            lf = lf.with_columns(pl.lit(value, dtypes[name]).alias(name) for name, (value, _) in added.items())
        widened = t.widened_since(version)  # struct fields added since: cast, so they read null
        if widened:
            types = pl.from_arrow(pa.schema(list(widened.items())).empty_table()).schema  # type: ignore[union-attr]
            lf = lf.with_columns(pl.col(name).cast(types[name]) for name in widened)
        return lf.select(t.read_schema.names)

    def footer(self, path: str) -> pa.Schema:
        """The schema (with metadata) of the file at filesystem ``path``; object-store files are fetched
        first (PyArrow reading through an fsspec filesystem can abort the process at exit)."""
        if self.local:
            return pq.read_schema(path)
        return pq.read_schema(pa.BufferReader(self.fs.cat_file(path)))

    def read(self, table: str, where: FileFilter = FileFilter(), **equals: Any) -> pl.DataFrame:
        """:meth:`scan` filtered on column equality (``read("case_runs", run_id="r1")``), collected.

        Filtering on ``run_id`` also opens only that run's files. A corrupt file is named in the error.
        """
        if "run_id" in equals and where.runs is None:
            where = dataclasses.replace(where, runs=[equals["run_id"]])
        lf = self.scan(table, where)
        unknown = set(equals) - set(self.table(table).read_schema.names)  # known without opening a file
        if unknown:
            raise EvidenceError(f"{table}: no column(s) {sorted(unknown)} to filter on")
        return self.collect(lf.filter(**equals) if equals else lf, table, where)

    def collect(self, frame: pl.LazyFrame, table: str, where: FileFilter = FileFilter(), *,
                streaming: bool = False) -> pl.DataFrame:
        """Collect a query over :meth:`scan` (``streaming``: in batches, for wide aggregations); when a
        file cannot be read, say which one."""
        try:
            return frame.collect(engine="streaming" if streaming else "auto")
        except (pl.exceptions.ComputeError, OSError) as exc:
            self.check_files(table, where, full=True)
            raise EvidenceError(f"{table}: the lake could not be read: {exc}") from None

    def check_files(self, table: str, where: FileFilter = FileFilter(), *, full: bool = False) -> None:
        """Check every selected file against its manifest row (``full``: with its columns and sha256 too);
        raise :class:`EvidenceError` naming the first bad one."""
        self.check_layout()
        with self.engine.connect() as conn:
            listed = manifest.listed(conn, self.table(table).name, where)
        for f in listed:
            found = integrity.problem(self, f, full=full)
            if found is not None:
                raise found.error()

    # -- places -----------------------------------------------------------------------------------
    def path(self, relative: str) -> str:
        """The filesystem path of a file named relative to the lake's root."""
        return f"{self.root}/{relative}"

    def address(self, relative: str) -> str:
        """Where readers find a file: its local path, or its URL on an object store."""
        path = self.path(relative)
        return path if self.local else self.fs.unstrip_protocol(path)

    def accept_layout(self) -> None:
        """Skip the layout check for this instance (``assay lake migrate`` writes into an unlisted lake)."""
        self._layout_checked = True

    def check_layout(self, *, creating: bool = False) -> None:
        """Refuse a lake written before the manifest (run ``assay lake migrate``); mark a new one."""
        if self._layout_checked:
            return
        marker = self.path(MARKER)
        if not self.fs.exists(marker):
            old = [name for name in self.tables if self.fs.exists(self.path(name))]
            if old:
                raise LakeLayoutError(
                    f"the lake at {self.url} holds tables ({', '.join(old)}) that no catalog manifest lists: it was "
                    "written by an earlier Assay. Run `assay lake migrate` once to list its files in the catalog"
                )
            if not creating:
                return
            self.fs.makedirs(self.root, exist_ok=True)
            self.fs.pipe_file(marker, b'{"format": "assay.lake", "files": "listed by the catalog manifest"}\n')
        self._layout_checked = True


def _write_bytes(path: str, body: pa.Buffer) -> None:
    """Write a finished file's bytes to a local ``path`` (the one place a local lake file's bytes are written)."""
    with open(path, "wb") as out:
        out.write(memoryview(body))


def _known(t: LakeTable, found: Sequence[tuple[str, int]]) -> Sequence[tuple[str, int]]:
    """``found`` (address, version), once every version is one this build reads; else the first other is refused by name."""
    for address, version in found:
        if version not in t.known_versions:
            raise SchemaVersionError(address, version, t.known_versions)
    return found


def _check_date(value: Any) -> str:
    rule = "a calendar date written YYYY-MM-DD"
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise IdentifierError("date", value, rule)
    try:
        _date.fromisoformat(value)
    except ValueError:
        raise IdentifierError("date", value, rule) from None
    return value


__all__ = ["FILE_KEY", "LEASE_SECONDS", "MARKER", "STAGING", "Lake", "LakeLayoutError", "TABLE_KEY", "VERSION_KEY"]
