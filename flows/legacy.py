"""Reading a legacy export: every file found, every row parsed and checked, before anything is written.

:func:`read_export` returns the rows of one lineage (:mod:`.legacy_lineages`) with their values
parsed (timestamps tz-aware, numbers as floats, JSON as objects) and each result's verdict blob read
as (met, value). Every problem of every file is collected, and a :class:`LegacyExportError` names them
all (file, row, column, what is allowed, the fix); a valid export raises nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from assay.core.errors import LegacyExportError, NotFoundError

from .legacy_lineages import CHAT_PREFIX, LINEAGES, BlobError, Col, Lineage, Table

FORMATS = (".csv", ".parquet")
"""The file formats of an export, chosen by extension."""

ROLES = {"user": "caller", "customer": "caller", "caller": "caller", "assistant": "agent", "agent": "agent",
         "bot": "agent", "system": "system", "tool": "system"}
"""A legacy transcript turn's role -> ours."""

Row = dict[str, Any]


@dataclass
class Export:
    """A validated export of one lineage."""

    lineage: Lineage
    folder: str
    cases: list[Row] = field(default_factory=list)
    runs: list[Row] = field(default_factory=list)
    results: list[Row] = field(default_factory=list)
    """Each with ``_met``, ``_value`` (its blob read) and ``_turns`` (its transcript, ours)."""
    skipped: int = 0
    """Rows of the shared Hamming tables that belong to the other lane."""


def lineage(name: str) -> Lineage:
    """A lineage by name, or a :class:`NotFoundError` naming the four."""
    if name not in LINEAGES:
        raise NotFoundError("lineage", name, "see docs/legacy.md for each lineage's export", known=list(LINEAGES))
    return LINEAGES[name]


def read_export(name: str, path: str | Path) -> Export:
    """Read and validate the export of lineage ``name`` in directory ``path`` (all of it, or an error)."""
    line = lineage(name)
    folder = Path(path)
    if not folder.is_dir():
        raise LegacyExportError(str(folder), [
            f"not a directory: give the directory holding {', '.join(_names(line))} (.csv or .parquet)"])
    problems: list[str] = []
    out = Export(line, str(folder))
    tables = {role: _read_table(folder, getattr(line, role), line, problems, out)
              for role in ("cases", "runs", "results")}
    if not problems:
        out.cases, out.runs, out.results = tables["cases"], tables["runs"], tables["results"]
        _check_results(line, out, folder, problems)
    if problems:
        raise LegacyExportError(str(folder), problems)
    return out


def _names(line: Lineage) -> list[str]:
    return [t.file for t in (line.cases, line.runs, line.results)]


def _file(folder: Path, table: Table, problems: list[str]) -> Path | None:
    found = [folder / f"{table.file}{ext}" for ext in FORMATS if (folder / f"{table.file}{ext}").is_file()]
    if len(found) == 1:
        return found[0]
    if found:
        problems.append(f"{table.file}: both {found[0].name} and {found[1].name} exist; keep one of them")
    else:
        problems.append(f"{table.file}: no {table.file}.csv or {table.file}.parquet in {folder}; "
                        "export the table there")
    return None


def _frame(file: Path) -> pl.DataFrame:
    """Every column as text (a Parquet column of any type is read as its text)."""
    if file.suffix == ".csv":
        return pl.read_csv(file, infer_schema=False)
    frame = pl.read_parquet(file)
    return frame.with_columns(_as_text(c, t) for c, t in frame.schema.items())


def _as_text(column: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):  # ISO 8601, with its zone when it has one
        return pl.col(column).dt.to_string("%Y-%m-%dT%H:%M:%S%.f" + ("%:z" if dtype.time_zone else ""))
    return pl.col(column).cast(pl.String)


def _read_table(folder: Path, table: Table, line: Lineage, problems: list[str], out: Export) -> list[Row]:
    file = _file(folder, table, problems)
    if file is None:
        return []
    try:
        frame = _frame(file)
    except (pl.exceptions.PolarsError, OSError) as exc:
        problems.append(f"{file.name}: cannot be read as {file.suffix[1:].upper()}: {exc}")
        return []
    known = [c.name for c in table.columns]
    missing = [c.name for c in table.columns if c.required and c.name not in frame.columns]
    unknown = [c for c in frame.columns if c not in known]
    if missing or unknown:
        what = "; ".join(([f"missing required column(s) {', '.join(missing)}"] if missing else [])
                         + ([f"unknown column(s) {', '.join(unknown)}"] if unknown else []))
        problems.append(f"{file.name}: {what}; its columns are {', '.join(known)} (required: "
                        f"{', '.join(c.name for c in table.columns if c.required)}), see docs/legacy.md")
        return []
    rows, seen = [], set()
    for n, raw in enumerate(frame.iter_rows(named=True), start=1):
        ident = raw.get("id") or ""
        if line.chat is not None and ident.startswith(CHAT_PREFIX) != line.chat:
            out.skipped += 1
            continue
        row: Row = {"_file": file.name, "_row": n}
        for col in table.columns:
            row[col.name] = _value(col, raw.get(col.name), f"{file.name}: row {n}, column {col.name!r}", problems)
        if ident in seen:
            problems.append(f"{file.name}: row {n}, column 'id': {ident!r} appears twice; ids are unique per table")
        seen.add(ident)
        rows.append(row)
    return rows


def _value(col: Col, text: str | None, where: str, problems: list[str]) -> Any:
    if text is None or text.strip() == "":
        if col.required:
            because = f" ({col.why})" if col.why else ""
            problems.append(f"{where}: empty, and it is required{because}; give every row a value")
        return None
    try:
        return _parse(col, text.strip())
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None


def _parse(col: Col, text: str) -> Any:
    if col.choices and text not in col.choices:
        raise ValueError(f"{text!r} is not one of {', '.join(col.choices)}; use one of those")
    if col.kind == "timestamp":
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{text!r} is not an ISO 8601 timestamp (2026-08-14T10:00:00Z)") from None
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    if col.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
    if col.kind in ("object", "list"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"unreadable JSON ({exc.msg} at character {exc.pos}); export it as JSON text") from None
        if not isinstance(value, dict if col.kind == "object" else list):
            raise ValueError(f"must be a JSON {'object' if col.kind == 'object' else 'array'}, not {text[:40]!r}")
        return value
    return text


def _check_results(line: Lineage, out: Export, folder: Path, problems: list[str]) -> None:
    """Each result names a run and a case of the export, its blob reads, its transcript is turns."""
    runs = {r["id"] for r in out.runs}
    cases = {c["id"] for c in out.cases}
    lane = {None: "", True: " chat-lane", False: " voice (not chat-)"}[line.chat]
    for r in out.results:
        where = f"{r['_file']}: row {r['_row']}"
        for column, known, table in ((line.result_run, runs, line.runs), (line.result_case, cases, line.cases)):
            if r[column] not in known:
                problems.append(f"{where}, column {column!r}: {r[column]!r} is not an id among the{lane} rows of "
                                f"{table.file}; export the row it names, or drop this result")
        try:
            r["_met"], r["_value"] = line.read_blob(r[line.blob])
        except BlobError as exc:
            problems.append(f"{where}, column {line.blob!r}: unreadable verdict blob: {exc} (see docs/legacy.md)")
        r["_turns"] = _turns(r.get(line.transcript) if line.transcript else None, f"{where}, column 'transcript'",
                             problems)


def _turns(transcript: list[Any] | None, where: str, problems: list[str]) -> list[dict[str, Any]]:
    turns = []
    for i, turn in enumerate(transcript or []):
        role = turn.get("role") if isinstance(turn, dict) else None
        text = turn.get("content", turn.get("text")) if isinstance(turn, dict) else None
        if role not in ROLES or not isinstance(text, str):
            problems.append(f"{where}: turn {i} must be an object with a role ({', '.join(ROLES)}) and a text "
                            f"'content', not {json.dumps(turn)[:60]}")
            continue
        t, end = turn.get("time"), turn.get("end_time")
        turns.append({"role": ROLES[role], "text": text, "t": _seconds(t), "end_t": _seconds(end)})
    return turns


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
