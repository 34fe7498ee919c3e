"""DuckDB over the evidence lake: one de-duplicated view per lake table, catalog tables as Arrow.

DuckDB never installs or loads an extension here (air-gapped machines are common): Parquet is built
in, and an object-store lake is reached through its fsspec filesystem, registered on the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.core.errors import EvidenceError

from .lake.store import FILE_COLUMN
from .lake.tables import PARTITIONS

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from .lake import Lake, LakeTable

_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""No extension is ever installed or loaded (ICU, which gives TimeZone, is built in)."""


def connect(lake: "Lake", tables: "dict[str, pa.Table] | None" = None) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection with a view per lake table and ``tables`` registered by name.

    Each view reads the table's published files (version-checked through ``lake`` first), adds
    ``team_id`` and ``date`` as VARCHAR and keeps one row per natural key, like :meth:`Lake.scan`.
    The views list the files present at connection time; reconnect to see later writes.
    """
    import duckdb

    con = duckdb.connect(":memory:", config=dict(_CONFIG))
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back in UTC whatever the machine's zone
    if not lake.local:
        con.register_filesystem(lake.fs)
    for name, table in lake.tables.items():
        files = lake.files(name)
        if files:
            con.execute(f"CREATE VIEW {_quote(name)} AS {_view_sql(table, files)}")
        else:
            con.register(name, table.read_schema.empty_table())
    for name, arrow in (tables or {}).items():
        if name in lake.tables:
            raise EvidenceError(f"catalog table {name!r} would hide the lake table of the same name")
        con.register(name, arrow)
    return con


def _view_sql(table: "LakeTable", files: list[str]) -> str:
    paths = ", ".join(_literal(f) for f in files)
    hive_types = ", ".join(f"{_literal(p)}: VARCHAR" for p in PARTITIONS)
    key = ", ".join(map(_quote, table.natural_key))
    columns = ", ".join(map(_quote, table.read_schema.names))
    return (
        f"SELECT {columns} FROM read_parquet([{paths}], hive_partitioning = true, union_by_name = true, "
        f"hive_types = {{{hive_types}}}, filename = {_literal(FILE_COLUMN)}) "
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {_quote(table.first_by)}, {_quote(FILE_COLUMN)}) = 1"
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
