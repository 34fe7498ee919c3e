"""DuckDB over the evidence lake: one view per lake table over the files its manifest lists, catalog tables as Arrow.

DuckDB never installs or loads an extension here (air-gapped machines are common): Parquet is built
in, and an object-store lake is reached through its fsspec filesystem, registered on the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.core.errors import EvidenceError

from .lake.tables import PARTITIONS

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from .lake import Lake, LakeTable

_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""No extension is ever installed or loaded (ICU, which gives TimeZone, is built in)."""


def connect(lake: "Lake", tables: "dict[str, pa.Table] | None" = None) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection with a view per lake table and ``tables`` registered by name.

    Each view reads the files the manifest lists for the table (older schema versions read as the
    current one) and adds ``team_id`` and ``date`` as VARCHAR, like :meth:`Lake.scan`. The views list
    the files live at connection time; reconnect to see later writes.
    """
    import duckdb

    con = duckdb.connect(":memory:", config=dict(_CONFIG))
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back in UTC whatever the machine's zone
    if not lake.local:
        con.register_filesystem(lake.fs)
    for name, table in lake.tables.items():
        files: dict[int, list[str]] = {}
        for address, version in lake.files(name):
            files.setdefault(version, []).append(address)
        if files:
            con.execute(f"CREATE VIEW {_quote(name)} AS {_view_sql(table, files)}")
        else:
            con.register(name, table.read_schema.empty_table())
    for name, arrow in (tables or {}).items():
        if name in lake.tables:
            raise EvidenceError(f"catalog table {name!r} would hide the lake table of the same name")
        con.register(name, arrow)
    return con


def _view_sql(table: "LakeTable", files: dict[int, list[str]]) -> str:
    """One SELECT per schema version (columns added since filled in), unioned."""
    hive_types = ", ".join(f"{_literal(p)}: VARCHAR" for p in PARTITIONS)
    parts = []
    for version, paths in sorted(files.items()):
        added = table.added_since(version)
        select = ", ".join(
            f"CAST({_sql_value(added[c][0])} AS {_SQL_TYPES[str(added[c][1])]}) AS {_quote(c)}" if c in added else _quote(c)
            for c in table.read_schema.names
        )
        parts.append(
            f"SELECT {select} FROM read_parquet([{', '.join(map(_literal, paths))}], hive_partitioning = true, "
            f"hive_types = {{{hive_types}}})"
        )
    return " UNION ALL ".join(parts)


_SQL_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN", "string": "VARCHAR"}
"""DuckDB types of the Arrow types a column added to a lake table may have."""


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
