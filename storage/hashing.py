""":func:`assay.core.ids.stable_id` over whole columns: the same ids, hashed by DuckDB instead of a Python loop.

A report of 10,000 case runs needs 10,000 case-run ids and as many evaluation ids, and a judging pass
one id per outcome and per atom; a loop of ``hashlib`` calls costs more than the rest of assembling
them. DuckDB's ``sha256`` over the parts joined by the unit separator is the same function (a test
holds the two to it).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import duckdb

__all__ = ["stable_ids"]


def stable_ids(*columns: pl.Series | str) -> pl.Series:
    """``stable_id(*parts)`` of each row of ``columns`` (a plain string is the same part on every row)."""
    height = max((len(c) for c in columns if isinstance(c, pl.Series)), default=1)
    frame = pl.DataFrame({
        f"p{i}": c.cast(pl.String) if isinstance(c, pl.Series) else pl.repeat(c, height, dtype=pl.String, eager=True)
        for i, c in enumerate(columns)
    })
    if frame.is_empty():
        return pl.Series("id", [], dtype=pl.String)
    if any(frame[name].null_count() for name in frame.columns):
        raise ValueError("stable_ids: every part must be a string, not null")
    parts = ", ".join(f"p{i}" for i in range(len(columns)))
    con = _connection().cursor()  # a cursor per call: cheap, and safe across threads
    try:
        con.register("parts", frame)
        ids = con.sql(f"SELECT left(sha256(concat_ws(chr(31), {parts})), 32) AS id FROM parts").pl()["id"]
    finally:
        con.close()
    return ids


@functools.cache
def _connection() -> "duckdb.DuckDBPyConnection":
    """One in-memory DuckDB per process, closed at exit."""
    import atexit

    from assay.core.engines import duckdb_connect

    con = duckdb_connect()
    atexit.register(con.close)
    return con
