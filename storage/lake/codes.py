"""The 64-bit codes of the lake's re-score state, computed over whole columns, and the names behind them.

The rules are :func:`assay.core.ids.id_code` (ids: their first 64 bits) and
:func:`~assay.core.ids.name_code` (names: the first 64 bits of their sha256); this module applies them
to Polars columns and keeps the names in the catalog's ``lake_names``, so readers can turn codes
back into names. A test checks that the column form and the scalar form agree.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import sqlalchemy as sa

from assay.core.errors import EvidenceError
from assay.core.ids import name_code

from ..catalog import tables as t
from ..catalog.engine import insert_ignoring_duplicates

__all__ = ["id_codes", "name_codes", "names_of", "record_names"]


def id_codes(column: str) -> pl.Expr:
    """:func:`~assay.core.ids.id_code` of every id in ``column`` (32 hex characters each)."""
    hi = pl.col(column).str.slice(0, 8).str.to_integer(base=16).cast(pl.UInt64)
    lo = pl.col(column).str.slice(8, 8).str.to_integer(base=16).cast(pl.UInt64)
    return (hi * (1 << 32) + lo).cast(pl.Int64, wrap_numerical=True)


def name_codes(frame: pl.DataFrame, column: str) -> tuple[pl.Expr, dict[int, str]]:
    """An expression giving :func:`~assay.core.ids.name_code` of ``column``, and the names it codes."""
    names = {name_code(n): n for n in frame[column].unique().drop_nulls().to_list()}
    return pl.col(column).replace_strict({n: c for c, n in names.items()}, return_dtype=pl.Int64), names


def record_names(conn: sa.Connection, names: Mapping[int, str]) -> None:
    """Keep ``names`` (code -> name) in ``lake_names``; a code already naming something else is refused."""
    if not names:
        return
    known = dict(conn.execute(sa.select(t.lake_names.c.code, t.lake_names.c.name)
                              .where(t.lake_names.c.code.in_(list(names)))).all())
    clash = [(code, name, known[code]) for code, name in names.items() if code in known and known[code] != name]
    # in code order: two writers recording overlapping new names lock their index entries in the same order,
    # so on PostgreSQL neither waits on the other's second row while holding its first (a deadlock)
    new = [{"code": c, "name": n} for c, n in sorted(names.items()) if c not in known]
    if new:  # another writer may record the same new name meanwhile; a clash between them is checked after
        conn.execute(insert_ignoring_duplicates(conn, t.lake_names, ["code"]), new)
        raced = dict(conn.execute(sa.select(t.lake_names.c.code, t.lake_names.c.name)
                                  .where(t.lake_names.c.code.in_([r["code"] for r in new]))).all())
        clash += [(r["code"], r["name"], raced[r["code"]]) for r in new if raced.get(r["code"]) != r["name"]]
    if clash:
        code, name, other = clash[0]
        raise EvidenceError(f"names {name!r} and {other!r} share the 64-bit code {code}; rename one of them")


def names_of(conn: sa.Connection, codes: list[int] | None = None) -> dict[int, str]:
    """The names behind ``codes`` (those known), or every name the lake has coded."""
    q = sa.select(t.lake_names.c.code, t.lake_names.c.name)
    return dict(conn.execute(q if codes is None else q.where(t.lake_names.c.code.in_(codes))).all())
