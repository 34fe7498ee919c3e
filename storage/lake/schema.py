"""What a lake table is: its Arrow schema, natural key, pandera checks and the older versions it still
reads, and the two things every write does with it — conform the data to the schema, then validate it.

The tables themselves are declared in :mod:`.tables`. The partition columns ``team_id`` and ``date``
live only in the file path, never in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from assay.core.errors import EvidenceError

if TYPE_CHECKING:  # pandera is imported when a table is first validated: readers never need it
    import pandera.polars as pa_pl

Check = Callable[[], "pa_pl.Check"]
"""A pandera check, built when its table's schema is first needed (:func:`isin` and the others make one)."""

PARTITIONS: tuple[str, ...] = ("team_id", "date")
"""The hive partition columns, in path order; readers add them back as String columns."""


@dataclass(frozen=True)
class OlderVersion:
    """A schema version of a table that this build still reads, and how its rows read today."""

    version: int
    arrow_schema: pa.Schema
    """The columns inside a file of this version."""
    added: Mapping[str, Any]
    """Columns added since this version, with the value every row of such a file reads as."""


@dataclass(frozen=True)
class LakeTable:
    """One lake table at the schema version this build writes, and the older versions it still reads."""

    name: str
    version: int
    """Written into every file's metadata as ``assay.schema_version``; readers refuse other values."""
    arrow_schema: pa.Schema
    """The columns inside each file (no partition columns), in order."""
    natural_key: tuple[str, ...]
    """Columns that identify a row; every reader keeps one row per key."""
    checks: Mapping[str, Sequence[Check]] = field(default_factory=dict, repr=False, compare=False)
    """Column checks by name, on top of the dtypes and nullability of ``arrow_schema``."""
    frame_checks: Sequence[Check] = field(default=(), repr=False, compare=False)
    """Checks over whole rows."""
    first_by: str = "reported_at"
    """Among rows sharing a natural key, readers keep the one with the smallest value here."""
    older: tuple[OlderVersion, ...] = ()
    """Versions written by earlier builds that readers still accept (each has a golden file in the tests)."""
    sort_by: tuple[str, ...] = ()
    """Rows are written sorted by these columns, so a reader's filter on them skips row groups."""

    @cached_property
    def pandera_schema(self) -> pa_pl.DataFrameSchema:
        """Checked on every write (the natural key unique within the batch); a failure writes nothing."""
        import pandera.polars as pa_pl

        dtypes = pl.from_arrow(self.arrow_schema.empty_table()).schema  # type: ignore[union-attr]
        columns = {
            f.name: pa_pl.Column(dtypes[f.name], nullable=f.nullable, checks=[c() for c in self.checks.get(f.name, ())])
            for f in self.arrow_schema
        }
        return pa_pl.DataFrameSchema(columns, checks=[c() for c in self.frame_checks], unique=list(self.natural_key),
                                     strict=True, name=self.name)

    @property
    def known_versions(self) -> list[int]:
        """Every schema version readers accept, oldest first."""
        return sorted([*(o.version for o in self.older), self.version])

    def file_schema(self, version: int) -> pa.Schema:
        """The columns inside a file of ``version``."""
        return self.arrow_schema if version == self.version else self._older(version).arrow_schema

    def added_since(self, version: int) -> dict[str, tuple[Any, pa.DataType]]:
        """Columns a file of ``version`` lacks, each with the value and type its rows read as."""
        if version == self.version:
            return {}
        return {name: (value, self.arrow_schema.field(name).type) for name, value in self._older(version).added.items()}

    def widened_since(self, version: int) -> dict[str, pa.DataType]:
        """Columns a file of ``version`` holds with fewer struct fields, each with the type readers cast it to
        (``CAST`` in DuckDB, ``.cast`` in Polars: both match struct fields by name; added ones read null)."""
        if version == self.version:
            return {}
        old = self._older(version).arrow_schema
        return {f.name: f.type for f in self.arrow_schema if f.name in old.names and old.field(f.name).type != f.type}

    def _older(self, version: int) -> OlderVersion:
        return next(o for o in self.older if o.version == version)

    @property
    def read_schema(self) -> pa.Schema:
        """The columns a reader sees: the file columns, then the partition columns as strings."""
        return pa.schema([*self.arrow_schema, *(pa.field(p, pa.string(), nullable=False) for p in PARTITIONS)])


def _deferred(make: Callable[[Any], pa_pl.Check]) -> Check:
    """A check that ``make(pandera.polars)`` builds when its table's schema is first needed."""

    def build() -> pa_pl.Check:
        import pandera.polars as pa_pl

        return make(pa_pl)

    return build


def isin(values: Sequence[str]) -> Check:
    """A column check: every non-null value is one of ``values``."""
    allowed = list(values)
    return _deferred(lambda pa_pl: pa_pl.Check.isin(allowed))


def list_field_isin(field: str, values: Sequence[str]) -> Check:
    """A check on a ``list<struct>`` column: every element's ``field`` is one of ``values`` (not null)."""
    allowed = list(values)

    def check(data: pa_pl.PolarsData) -> pl.LazyFrame:
        ok = pl.element().struct.field(field).is_in(allowed).fill_null(False)
        return data.lazyframe.select(pl.col(data.key).list.eval(ok).list.all())

    error = f"every element's {field} in {allowed}"
    return _deferred(lambda pa_pl: pa_pl.Check(check, name=f"{field}_isin", error=error))


def score_on_scale(score: str = "score", low: str = "scale_min", high: str = "scale_max") -> Check:
    """A frame check: ``low <= score <= high`` wherever all three are present."""

    def check(data: pa_pl.PolarsData) -> pl.LazyFrame:
        s, lo, hi = pl.col(score), pl.col(low), pl.col(high)
        unknown = s.is_null() | lo.is_null() | hi.is_null()
        return data.lazyframe.select(unknown | ((s >= lo) & (s <= hi)).fill_null(False))

    error = f"{low} <= {score} <= {high}"
    return _deferred(lambda pa_pl: pa_pl.Check(check, name=f"{score}_on_scale", error=error))


def lake_table(
    name: str,
    version: int,
    arrow_schema: pa.Schema,
    natural_key: Sequence[str],
    checks: Mapping[str, Sequence[Check]] | None = None,
    frame_checks: Sequence[Check] = (),
    first_by: str = "reported_at",
    older: Sequence[OlderVersion] = (),
    sort_by: Sequence[str] = (),
) -> LakeTable:
    """Build a :class:`LakeTable` whose pandera schema follows ``arrow_schema`` (dtypes, nullability).

    ``checks`` adds column checks by name; the natural key is checked unique within each batch.
    """
    checks = dict(checks or {})
    unknown = (set(checks) | set(natural_key) | {first_by}) - set(arrow_schema.names)
    if unknown:
        raise ValueError(f"lake table {name!r}: no column(s) {sorted(unknown)} in its Arrow schema")
    if arrow_schema.field(first_by).nullable:
        raise ValueError(f"lake table {name!r}: first_by column {first_by!r} must be non-nullable")
    for old in older:
        if set(old.arrow_schema.names) | set(old.added) != set(arrow_schema.names):
            raise ValueError(f"lake table {name!r} v{old.version}: its columns plus `added` must be v{version}'s columns")
        for f in old.arrow_schema:
            if not _compatible(f.type, arrow_schema.field(f.name).type):
                raise ValueError(f"lake table {name!r} v{old.version}: column {f.name!r} is {f.type}, which does not "
                                 f"cast to v{version}'s {arrow_schema.field(f.name).type} (struct fields may be added)")
    return LakeTable(name, version, arrow_schema, tuple(natural_key), checks, tuple(frame_checks), first_by,
                     tuple(older), tuple(sort_by))


def conform(t: LakeTable, data: pl.DataFrame | pa.Table) -> pa.Table:
    """``data`` cast to ``t``'s columns (nullability is left to :func:`validate`).

    Refuses missing or extra columns and values of another kind (an integer where text belongs, a
    naive timestamp where a UTC one belongs) with :class:`EvidenceError`; widening casts
    (large strings, integers to floats, another time zone) are fine.
    """
    arrow = data.to_arrow() if isinstance(data, pl.DataFrame) else data
    if not isinstance(arrow, pa.Table):
        raise EvidenceError(f"{t.name}: expected a polars DataFrame or a pyarrow Table, got {type(data).__name__}")
    want, got = t.arrow_schema.names, arrow.column_names
    missing, extra = [n for n in want if n not in got], [n for n in got if n not in want]
    if missing or extra or len(set(got)) != len(got):
        raise EvidenceError(
            f"{t.name}: missing column(s) {missing}, unexpected column(s) {extra}"
            + (f", duplicate column names in {got}" if len(set(got)) != len(got) else "")
            + "; team_id and date are arguments of write, not columns"
        )
    columns = []
    for f in t.arrow_schema:
        col = arrow.column(f.name)
        if not _compatible(col.type, f.type):
            raise EvidenceError(f"{t.name}: column {f.name!r} has type {col.type}, expected {f.type}")
        try:
            columns.append(col if col.type == f.type else col.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise EvidenceError(f"{t.name}: column {f.name!r} cannot be cast to {f.type}: {e}") from None
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in t.arrow_schema]))


def validate(t: LakeTable, arrow: pa.Table) -> pa.Table:
    """Run ``t``'s pandera checks on a :func:`conform`-ed table; return it with ``t``'s exact schema.

    Raises :class:`EvidenceError` naming the table, each failing column and check, and a few bad values.
    """
    from pandera.errors import SchemaError, SchemaErrors

    df = pl.from_arrow(arrow)
    try:
        t.pandera_schema.validate(df, lazy=True)  # type: ignore[arg-type]
    except (SchemaErrors, SchemaError) as e:
        raise EvidenceError(_describe(t, df, e.failure_cases)) from None  # type: ignore[arg-type]
    return pa.Table.from_arrays(arrow.columns, schema=t.arrow_schema)


def _describe(t: LakeTable, df: pl.DataFrame, failures: pl.DataFrame, shown: int = 3) -> str:
    lines = [f"{t.name}: evidence refused, nothing written:"]
    groups = failures.group_by(["schema_context", "column", "check"], maintain_order=True)
    for (context, column, check), group in groups:
        whole_rows = context == "DataFrameSchema"
        if whole_rows and check == "multiple_fields_uniqueness":
            what, check = f"natural key {t.natural_key}", "unique within the batch"
        else:
            what = "rows" if whole_rows else f"column {column!r}"
        if whole_rows:  # show the failing rows' natural keys, not the whole rows
            rows = df[[i for i in group["index"].to_list()[:shown] if i is not None]]
            bad = [", ".join(f"{k}={r[k]!r}" for k in t.natural_key) for r in rows.iter_rows(named=True)]
        else:
            bad = [_short(v) for v in group["failure_case"].to_list()[:shown]]
        lines.append(f"  {what} failed {check}: {group.height} row(s), e.g. {'; '.join(bad)}")
    return "\n".join(lines)


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _compatible(got: pa.DataType, want: pa.DataType) -> bool:
    if pa.types.is_null(got):
        return True
    if pa.types.is_string(want):
        return pa.types.is_string(got) or pa.types.is_large_string(got) or pa.types.is_string_view(got)
    if pa.types.is_floating(want):
        return pa.types.is_floating(got) or pa.types.is_integer(got)
    if pa.types.is_timestamp(want):
        return pa.types.is_timestamp(got) and (got.tz is None) == (want.tz is None)
    if pa.types.is_list(want):
        lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_list_view, pa.types.is_large_list_view)
        return any(is_(got) for is_ in lists) and _compatible(got.value_type, want.value_type)
    if pa.types.is_struct(want):
        names = [want.field(i).name for i in range(want.num_fields)]
        return pa.types.is_struct(got) and all(
            got.field(i).name in names and _compatible(got.field(i).type, want.field(got.field(i).name).type)
            for i in range(got.num_fields)
        )
    return got == want
