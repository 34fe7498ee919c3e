"""DuckDB over the evidence lake and the catalog: what :func:`assay.connect` opens.

- one view per lake table over the files its manifest lists (:meth:`Lake.files`);
- with ``catalog=True``, the catalog's tables (:data:`CATALOG_TABLES`) copied in through SQLAlchemy and
  Arrow, and the derived views of :mod:`.views` (``latest_outcomes``, ``current_results``,
  ``verdicts_now``).

DuckDB never installs or loads an extension here (air-gapped machines are common): Parquet and JSON are
built in, an object-store lake is reached through its fsspec filesystem, registered on the connection,
and the catalog through SQLAlchemy (DuckDB's sqlite and postgres scanners are extensions).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

import pyarrow as pa
import sqlalchemy as sa

from assay.core.engines import duckdb_connect
from assay.core.errors import AssayError, EvidenceError
from assay.core.ids import canonical_json

from . import views
from .catalog import tables as catalog
from .catalog.tables import UtcDateTime
from .lake.integrity import LakeFileError
from .lake.remote import register_filesystem
from .lake.schema import PARTITIONS
from .lake.tables import TABLES

if TYPE_CHECKING:
    import duckdb

    from .lake import Lake, LakeTable
    from .lake.integrity import FileProblem

__all__ = [
    "CATALOG_TABLES", "Answer", "QueryError", "blank", "catalog_schema", "connect", "lake_error", "read_catalog", "run",
]

CATALOG_TABLES: tuple[sa.Table, ...] = (
    catalog.teams, catalog.consumers, catalog.suites, catalog.cases, catalog.assertions, catalog.criteria,
    catalog.runs, catalog.run_criteria,
)
"""The catalog tables ``connect(..., catalog=True)`` copies in, under their own names and columns."""


class QueryError(AssayError, ValueError):
    """DuckDB refused a query (bad SQL, an unknown table or column); ``sql`` is the query."""

    def __init__(self, sql: str, message: str):
        self.sql = sql
        super().__init__(f"query failed: {message}; the views and their columns: docs/reference/query.md")


def connect(
    lake: "Lake", tables: "dict[str, pa.Table] | None" = None, *, catalog: bool = False,
    teams: "Iterable[str] | None" = None,
) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection with a view per lake table and ``tables`` registered by name.

    Each view reads the files the manifest lists for the table (of ``teams`` only, when given; older
    schema versions read as the current one) and adds ``team_id`` and ``date`` as VARCHAR, like
    :meth:`Lake.scan`. With ``catalog``, the catalog's tables and the derived views come too
    (:func:`assay.connect` asks for them). Everything is read at connection time; reconnect to see later
    writes.

    A listed file that fails the cheap check against the manifest (:mod:`.lake.integrity`) is left out of
    its view and stands in it as a guard of its partition: a query that reads that team and date fails
    with :class:`EvidenceError` naming the file, while one filtered to other teams or dates never meets it.
    """
    con = _duckdb()
    register_filesystem(con, lake.fs)
    # one read of the manifest: a judging pass is seen whole or not at all
    listed, problems = lake.snapshot(None if teams is None else list(teams))
    for name, table in lake.tables.items():
        _lake_relation(con, name, table, listed[name], [p for p in problems if p.table == name])
    for name, arrow in (tables or {}).items():
        if name in lake.tables:
            raise EvidenceError(f"catalog table {name!r} would hide the lake table of the same name")
        con.register(name, arrow)
    if catalog:
        clash = sorted((set(lake.tables) | set(tables or {})) & {t.name for t in CATALOG_TABLES})
        if clash:
            raise EvidenceError(f"catalog table(s) {clash} would hide a lake or registered table of the same name")
        _install(con, read_catalog(lake.engine), provided=lake.tables)
    return con


def blank() -> "duckdb.DuckDBPyConnection":
    """Every relation ``connect(..., catalog=True)`` makes over the registered lake tables, with no rows.

    What the query reference (:mod:`.reference`) describes, so the reference names what analysts get.
    """
    con = _duckdb()
    for name, table in TABLES.items():
        _lake_relation(con, name, table, [])
    _install(con, {t.name: catalog_schema(t).empty_table() for t in CATALOG_TABLES}, provided=TABLES)
    return con


@dataclass(frozen=True)
class Answer:
    """What a query returned: column names, their DuckDB types, and the rows as Python values."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        """One dict per row, values as JSON carries them (timestamps as ISO text, decimals as numbers, JSON as JSON)."""
        parse = [t == "JSON" for t in self.types]
        return [
            {c: json.loads(v) if p and v is not None else _plain(v)
             for c, v, p in zip(self.columns, row, parse, strict=True)}
            for row in self.rows
        ]

    def text(self, null: str = "") -> list[list[str]]:
        """Each value as text: strings as they are, everything else as JSON would write it, nulls as ``null``."""
        return [[_text(v, null) for v in row] for row in self.rows]

    def to_csv(self) -> str:
        """The answer as CSV with a header row (nulls empty, nested values as JSON)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.text())
        return out.getvalue()

    def to_json(self) -> str:
        """The answer as a JSON array of objects, one per row."""
        return json.dumps(self.records(), indent=2, ensure_ascii=False)


def run(con: "duckdb.DuckDBPyConnection", sql: str) -> Answer:
    """The answer to ``sql`` (its last statement); :class:`QueryError` with DuckDB's message when refused."""
    import duckdb

    try:
        relation = con.sql(sql)
        if relation is None:  # a statement with no answer (SET, CREATE ...)
            return Answer([], [], [])
        return Answer(list(relation.columns), [str(t) for t in relation.types], relation.fetchall())
    except duckdb.Error as exc:
        raise lake_error(exc) or QueryError(sql, _first(exc)) from None


def lake_error(exc: Exception) -> EvidenceError | None:
    """The lake problem behind a DuckDB error, as :class:`EvidenceError` (a guarded partition's message, or a
    file DuckDB could not read, named), else None; DuckDB's SQL is never repeated."""
    message = _first(exc)
    if _GUARD in message:
        return LakeFileError(message.split(_GUARD, 1)[1])
    if "parquet" in message.lower() or "No files found" in message:
        return EvidenceError(f"the lake could not be read: {message}; run `assay lake verify` to find the file")
    return None


def _first(exc: Exception) -> str:
    first = str(exc).strip().split("\n\n")[0]  # DuckDB's message, then a blank line and a pointer into the SQL
    return " ".join(first.split())


def _text(value: Any, null: str) -> str:
    if value is None:
        return null
    plain = _plain(value)
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)


def _plain(value: Any) -> Any:
    """``value`` as JSON carries it: ISO text for instants and dates, floats for decimals, recursively."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | UUID | timedelta):
        return str(value)
    return value


def catalog_schema(table: sa.Table) -> pa.Schema:
    """The Arrow columns of a catalog table: JSON columns travel as JSON text (DuckDB types them JSON)."""
    return pa.schema([pa.field(c.name, _arrow_type(c), nullable=bool(c.nullable)) for c in table.columns])


def read_catalog(engine: sa.Engine) -> dict[str, pa.Table]:
    """Every table of :data:`CATALOG_TABLES` as Arrow, read in one catalog transaction (a consistent snapshot)."""
    out = {}
    with engine.connect() as conn:
        for table in CATALOG_TABLES:
            rows = conn.execute(sa.select(table).order_by(*table.primary_key.columns)).all()
            columns = {
                c.name: [None if r[i] is None else canonical_json(r[i]) for r in rows] if isinstance(c.type, sa.JSON)
                else [r[i] for r in rows]
                for i, c in enumerate(table.columns)
            }
            out[table.name] = pa.table(columns, schema=catalog_schema(table))
    return out


def _arrow_type(column: sa.Column) -> pa.DataType:
    kind = column.type
    if isinstance(kind, UtcDateTime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(kind, sa.JSON | sa.String):
        return pa.string()
    if isinstance(kind, sa.BigInteger):
        return pa.int64()
    if isinstance(kind, sa.Integer):
        return pa.int32()
    if isinstance(kind, sa.Boolean):
        return pa.bool_()
    raise EvidenceError(f"catalog column {column.table.name}.{column.name}: no Arrow type for {kind!r} here")


def _duckdb() -> "duckdb.DuckDBPyConnection":
    con = duckdb_connect()
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back in UTC whatever the machine's zone
    return con


def _lake_relation(
    con: "duckdb.DuckDBPyConnection", name: str, table: "LakeTable", found: list[tuple[str, int]],
    bad: "Iterable[FileProblem]" = (),
) -> None:
    """A view over ``found`` (address, schema version), or the table's empty read schema when there is none;
    each of the ``bad`` files stands in it as a guard that fails a query reading its team and date."""
    files: dict[int, list[str]] = {}
    for address, version in found:
        files.setdefault(version, []).append(address)
    guards = [_guard_sql(p) for p in bad]
    if not guards and not files:
        con.register(name, table.read_schema.empty_table())
        return
    if not files:
        con.register(f"_empty_{name}", table.read_schema.empty_table())
    body = _view_sql(table, files) if files else f"SELECT * FROM {_quote(f'_empty_{name}')}"
    con.execute(f"CREATE VIEW {_quote(name)} AS {' UNION ALL BY NAME '.join([body, *guards])}")


_GUARD = "assay lake: "


def _guard_sql(p: "FileProblem") -> str:
    """One row of the bad file's partition (``team_id``, ``date``; its other columns null) that raises when read:
    a filter on another team or date removes it before it is."""
    return (f"SELECT {_literal(p.team_id)} AS team_id, {_literal(p.date)} AS date "
            f"WHERE error({_literal(_GUARD + p.message())}) IS NULL")


def _install(con: "duckdb.DuckDBPyConnection", arrow: Mapping[str, pa.Table], provided: Iterable[str]) -> None:
    """Copy the catalog's tables in (JSON text typed JSON), then create the derived views."""
    for table in CATALOG_TABLES:
        json_columns = [c.name for c in table.columns if isinstance(c.type, sa.JSON)]
        casts = ", ".join(f"CAST({_quote(c)} AS JSON) AS {_quote(c)}" for c in json_columns)
        replace = f" REPLACE ({casts})" if json_columns else ""
        con.register("_catalog_arrow", arrow[table.name])
        con.execute(f"CREATE TABLE {_quote(table.name)} AS SELECT *{replace} FROM _catalog_arrow")
        con.unregister("_catalog_arrow")
    views.install(con, views.criteria_terms(arrow["criteria"]), provided=provided)


def _view_sql(table: "LakeTable", files: dict[int, list[str]]) -> str:
    """One SELECT per schema version (columns added since filled in), unioned."""
    hive_types = ", ".join(f"{_literal(p)}: VARCHAR" for p in PARTITIONS)
    parts = []
    for version, paths in sorted(files.items()):
        added, widened = table.added_since(version), table.widened_since(version)
        select = ", ".join(
            f"CAST({_sql_value(added[c][0])} AS {_sql_type(added[c][1])}) AS {_quote(c)}" if c in added
            else f"CAST({_quote(c)} AS {_sql_type(widened[c])}) AS {_quote(c)}" if c in widened else _quote(c)
            for c in table.read_schema.names
        )
        parts.append(
            f"SELECT {select} FROM read_parquet([{', '.join(map(_literal, paths))}], hive_partitioning = true, "
            f"hive_types = {{{hive_types}}})"
        )
    return " UNION ALL ".join(parts)


_SQL_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN", "string": "VARCHAR"}
"""DuckDB types of the Arrow types a column added to a lake table may have."""


def _sql_type(arrow: pa.DataType) -> str:
    """The DuckDB type of a widened column (lists and structs of :data:`_SQL_TYPES`); casts match fields by name."""
    if pa.types.is_list(arrow):
        return f"{_sql_type(arrow.value_type)}[]"
    if pa.types.is_struct(arrow):
        return "STRUCT(" + ", ".join(f"{_quote(f.name)} {_sql_type(f.type)}" for f in arrow) + ")"
    return _SQL_TYPES[str(arrow)]


def _sql_value(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return _literal(value)
    return repr(value)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
