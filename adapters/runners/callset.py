"""The bulk load of a call set: read, check and convert a whole file of recorded calls in DuckDB.

The format, its rules and their two forms (a DuckDB query for the whole file, a check per line that
says what is wrong) live in :mod:`assay.core.callset`. This module runs the query, refuses the file
with every bad line named when one is bad, and hands the ``recorded`` runner report-ready Arrow
tables shaped by :func:`~assay.core.evidence.case_run_schema` and
:func:`~assay.core.evidence.evaluation_schema`. Evaluations are read as met + value by the one vendor
mapping, :func:`~assay.core.evidence.vendor_reading`, called once per distinct (verdict, score, scale)
rather than once per row: a file of a million calls has a handful of distinct readings.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from assay.core.bundle_input import InputLimits
from assay.core.callset import LINE, Problem, explain, scan_sql
from assay.core.errors import RunnerError
from assay.core.evidence import case_run_schema, evaluation_schema, vendor_reading
from assay.core.redact import SUSPECT_PATTERN, redact

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CallSet", "CallSetError", "file_sha256", "load_call_set"]


def file_sha256(path: Path) -> str:
    """sha256 hex of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class CallSet:
    """A validated call set as report-ready Arrow tables."""

    case_runs: "pa.Table"
    """One row per call, in file order, matching :func:`case_run_schema`."""
    evaluations: "pa.Table"
    """Every call's evaluations, in file order, matching :func:`evaluation_schema`."""
    evaluation_offsets: list[int]
    """The evaluations of case run ``i`` are rows ``evaluation_offsets[i]:evaluation_offsets[i + 1]``."""
    providers: list[str]
    """The distinct ``provider`` values of the file."""


class CallSetError(RunnerError):
    """A call set that cannot be replayed. Nothing from it was reported."""

    def __init__(self, file: str, problems: list[Problem], more: bool = False):
        self.file, self.problems = file, problems
        lines = []
        for line, field, what in problems:
            where = ", ".join(part for part in (f"line {line}" if line else "", field) if part)
            lines.append(f"  {where}: {what}" if where else f"  {what}")
        tail = ["  ... and more; fix these first"] if more else []
        super().__init__("\n".join([f"call set {file} cannot be replayed (nothing was reported):", *lines, *tail]))


_QUERY = scan_sql()
_UNIQUE = tuple(f.name for f in LINE.fields if f.unique)


def _scan(path: Path, case_keys: list[str]) -> "pa.Table":
    """Parse and check the whole file in DuckDB (parallel, one parse per line); rows in file order.

    Raises ``duckdb.Error`` when DuckDB cannot read the file (malformed JSON, a value it cannot cast).
    """
    from assay.core.engines import duckdb_connect

    con = duckdb_connect()
    try:
        con.execute("SET TimeZone = 'UTC'; SET preserve_insertion_order = true;")
        with _globless(path) as readable:
            return con.sql(_QUERY, params={"path": str(readable), "cases": case_keys}).to_arrow_table()
    finally:
        con.close()


@contextmanager
def _globless(path: Path) -> Iterator[Path]:
    """DuckDB expands ``*``, ``?`` and ``[`` in a path it reads; give it a plain name linked to the file."""
    if not any(ch in str(path) for ch in "*?["):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="assay-callset-") as tmp:
        link = Path(tmp) / "calls.jsonl"
        link.symlink_to(path)
        yield link


def _redacted(column: "pa.ChunkedArray | pa.Array") -> "pa.Array":
    """Redact JSON-text values; only rows whose text could hold a secret are parsed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    suspects = pc.fill_null(pc.match_substring_regex(column, SUSPECT_PATTERN, ignore_case=True), False)
    values = column.to_pylist() if pc.any(suspects).as_py() else None
    if values is None:
        return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    for i in pc.indices_nonzero(suspects).to_pylist():
        values[i] = json.dumps(redact(json.loads(values[i])), ensure_ascii=False, separators=(",", ":"))
    return pa.array(values, pa.string())


def load_call_set(path: Path, cases: Mapping[str, str]) -> CallSet:
    """Read, validate and convert a whole call set; ``cases`` maps case_key to case_id.

    Raises :class:`CallSetError` (a ``RunnerError``) naming every bad line before anything is returned.
    """
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = sorted(cases)
    try:
        raw = _scan(path, keys)
    except duckdb.Error as exc:
        _refuse(path, cases, fallback=f"could not be read: {exc}")
    if raw.num_rows and (
        pc.any(raw["bad"]).as_py() or any(pc.count_distinct(raw[name]).as_py() != raw.num_rows for name in _UNIQUE)
    ):
        _refuse(path, cases, fallback="a line does not match the call-set format")

    schema, eval_schema = case_run_schema(), evaluation_schema()
    case_index = pc.index_in(raw["case"], pa.array(keys, pa.string()))
    case_id = pc.take(pa.array([cases[k] for k in keys], pa.string()), case_index)
    columns = {
        "case_id": case_id,
        "source_ref": raw["call_id"],
        "status": pc.if_else(pc.is_null(raw["error"]), "executed", "error"),
        "artefact": pa.nulls(raw.num_rows, pa.string()),
        "provider_payload": _redacted(raw["provider_payload"]),
    }
    case_runs = pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else raw[f.name].cast(f.type) for f in schema], schema=schema
    )

    evals = raw["evaluations"].combine_chunks()
    flat = pc.list_flatten(evals)
    parents = pc.list_parent_indices(evals)
    offsets = pc.cumulative_sum(evals.value_lengths()).to_pylist()
    eval_columns = {
        "case_id": pc.take(case_id, parents),
        "source_ref": pc.take(raw["call_id"], parents),
        "raw": _redacted(flat.field("raw")),
        **_readings(flat),
    }
    evaluations = pa.Table.from_arrays(
        [(eval_columns[f.name] if f.name in eval_columns else flat.field(f.name)).cast(f.type) for f in eval_schema],
        schema=eval_schema,
    )
    providers = sorted(p for p in pc.unique(raw["provider"]).to_pylist() if p is not None)
    return CallSet(case_runs, evaluations, [0, *offsets], providers)


_READ_FROM = ("verdict", "score", "scale_min", "scale_max")


def _readings(flat: "pa.StructArray") -> "dict[str, pa.Array]":
    """``met`` and ``value`` of every evaluation by :func:`vendor_reading` (no pass score in a call set),
    computed once per distinct (verdict, score, scale_min, scale_max) and joined back in row order."""
    import polars as pl
    import pyarrow as pa

    rows = pl.from_arrow(pa.Table.from_arrays([flat.field(n) for n in _READ_FROM], names=list(_READ_FROM)))
    assert isinstance(rows, pl.DataFrame)
    rows = rows.with_columns(pl.col("score", "scale_min", "scale_max").cast(pl.Float64))
    distinct = rows.unique()
    met, value = zip(*(vendor_reading(*r) for r in distinct.iter_rows())) if distinct.height else ((), ())
    distinct = distinct.with_columns(met=pl.Series(met, dtype=pl.Boolean), value=pl.Series(value, dtype=pl.Float64))
    read = rows.join(distinct, on=list(_READ_FROM), how="left", nulls_equal=True, maintain_order="left")
    return {"met": read["met"].to_arrow(), "value": read["value"].to_arrow()}


def _refuse(path: Path, cases: Mapping[str, str], fallback: str) -> NoReturn:
    problems, more = explain(path, set(cases), limits=InputLimits.from_settings())
    raise CallSetError(str(path), problems or [(None, "", fallback)], more)
