"""Reading for the drill-down: which results decided each case run's verdict, and one case run in full.

- :func:`case_detail` / :func:`case_entries`: the per-case breakdown of ``assay verdicts --cases``, each
  case run with its call id and the results that moved or blocked its verdict
  (:func:`assay.transforms.explain.deciding_results`).
- :func:`show`: ``assay show``: one case run, its current results (with the consumers that count
  each) and its transcript and tool calls, the lines that decided a result marked
  (:func:`assay.transforms.explain.deciding_lines`).

Reads the lake and the catalog; writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec
from assay.core.errors import AmbiguousError, NotFoundError
from assay.storage.catalog import tables as t
from assay.storage.catalog.assertions import stamped_criteria
from assay.storage.catalog.runs import get_run
from assay.storage.lake import FileFilter
from assay.transforms.explain import counted_by, deciding_lines, deciding_results
from assay.transforms.verdicts import case_verdicts

from .rescoring import current_atoms
from .workspace import Workspace

__all__ = ["CaseDetail", "case_detail", "case_entries", "case_labels", "current_results", "show"]

CALL_ID = pl.when(pl.col("source_ref") != "").then(pl.col("source_ref")).otherwise(pl.col("provider_ref"))
"""A case run's call id: the call set's own id for a recorded call, else the vendor's id for the execution."""

_RESULT_COLUMNS = ("run_id", "case_run_id", "case_key", "outcome_id", "judged_at", "assertion_id", "assertion_key",
                   "mechanism", "met", "value", "evaluator", "reason")
_ENTRY_RESULT = ("assertion_key", "met", "value", "evaluator", "reason")


def current_results(ws: Workspace, run_ids: Sequence[str]) -> pl.DataFrame:
    """The current results of ``run_ids`` (each case run's latest outcome) with their value and reason."""
    run_ids = list(run_ids)
    where = FileFilter(runs=run_ids)
    current = current_atoms(ws, run_ids).select("result_id")
    atoms = (ws.lake.scan("assertion_results", where).filter(pl.col("run_id").is_in(run_ids))
             .join(current, on="result_id", how="semi").select(*_RESULT_COLUMNS))
    return ws.lake.collect(atoms, "assertion_results", where)


def case_labels(ws: Workspace, run_ids: Sequence[str]) -> pl.DataFrame:
    """Per case run of ``run_ids``: ``case_run_id, run_id, case_key, source_ref, call_id`` (call id may be null)."""
    run_ids = list(run_ids)
    where = FileFilter(runs=run_ids)
    frame = (ws.lake.scan("case_runs", where).filter(pl.col("run_id").is_in(run_ids))
             .select("case_run_id", "run_id", "case_key", "source_ref", call_id=CALL_ID))
    return ws.lake.collect(frame, "case_runs", where)


@dataclass(frozen=True)
class CaseDetail:
    """What the per-case breakdown of some runs reads once, whatever the criteria."""

    results: pl.DataFrame
    """:func:`current_results`."""
    labels: pl.DataFrame
    """:func:`case_labels`."""


def case_detail(ws: Workspace, run_ids: Sequence[str]) -> CaseDetail:
    return CaseDetail(current_results(ws, run_ids), case_labels(ws, run_ids))


def case_entries(detail: CaseDetail, spec: CriteriaSpec, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Run id -> its case runs under ``spec``, by case key then call id: ``case_key, case_run_id, call_id,
    verdict, reason`` and ``results`` (the results that decided a fail or an error; empty for a pass)."""
    results = detail.results.lazy().filter(pl.col("run_id").is_in(list(run_ids)))
    cases = case_verdicts(results, spec)
    decided = (deciding_results(results, cases, spec)
               .group_by("case_run_id").agg(pl.struct(*_ENTRY_RESULT).alias("results")))
    frame = (
        cases.select("run_id", "case_run_id", "case_key", "verdict", "reason")
        .join(detail.labels.lazy().select("case_run_id", "call_id"), on="case_run_id", how="left")
        .join(decided, on="case_run_id", how="left")
        .with_columns(pl.col("results").fill_null([]))
        .sort("run_id", "case_key", "call_id", "case_run_id", nulls_last=True)
        .collect()
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for row in frame.iter_rows(named=True):
        out.setdefault(row.pop("run_id"), []).append(row)
    return out


# --- one case run -----------------------------------------------------------------------------------


def _find(ws: Workspace, ident: str, run: str | None) -> dict[str, Any]:
    """The case run named by ``ident``: its id, a unique prefix of 6+ characters, or its call id."""
    where = FileFilter(runs=[get_run(ws.engine, run).run_id]) if run else FileFilter()
    ids = ws.lake.collect(ws.lake.scan("case_runs", where).select(
        "case_run_id", "run_id", "case_key", "source_ref", "provider_ref", call_id=CALL_ID), "case_runs", where)
    exact = ids.filter(pl.col("case_run_id") == ident)
    hits = exact if exact.height else ids.filter(
        (pl.col("case_run_id").str.starts_with(ident) & pl.lit(len(ident) >= 6))
        | (pl.col("source_ref") == ident) | (pl.col("provider_ref") == ident))
    if hits.height == 1:
        return hits.row(0, named=True)
    where_said = f" in run {run}" if run else ""
    if hits.height > 1:
        listed = "; ".join(f"{r['case_run_id']} (run {r['run_id']}, {r['case_key']})"
                           for r in hits.sort("run_id").head(5).iter_rows(named=True))
        raise AmbiguousError(
            f"{ident!r} names {hits.height} case runs{where_said}: {listed}"
            + ("; ..." if hits.height > 5 else "")
            + "; pass the full case-run id, or name the run with --run RUN")
    known = [*ids["case_run_id"].to_list(), *ids["call_id"].drop_nulls().unique().to_list()]
    raise NotFoundError("case run", ident, f"give a case-run id (or a unique prefix of 6+ characters) or a call id"
                                           f"{where_said}; `assay verdicts RUN --cases` lists both",
                        known=known, known_as=f"case runs and calls{where_said}")


def _params(ws: Workspace, assertion_ids: list[str]) -> dict[str, dict[str, Any]]:
    a = t.assertions
    with ws.engine.connect() as conn:
        rows = conn.execute(sa.select(a.c.assertion_id, a.c.params).where(a.c.assertion_id.in_(assertion_ids)))
        return {r.assertion_id: dict(r.params or {}) for r in rows}


def _lines(frame: pl.DataFrame, column: str, fields: dict[str, pl.DataType]) -> pl.DataFrame:
    items = frame[column].explode().drop_nulls()  # one case run: its list, one row per turn or call
    if items.len() == 0:
        return pl.DataFrame(schema=fields)
    return items.struct.unnest()


def show(ws: Workspace, ident: str, run: str | None = None) -> dict[str, Any]:
    """One case run: where it belongs, its verdict per consumer, its current results (each with the
    consumers that count it and the lines that decided it), its transcript and tool calls."""
    hit = _find(ws, ident, run)
    r = get_run(ws.engine, hit["run_id"])
    row = ws.lake.read("case_runs", FileFilter(runs=[r.run_id]), case_run_id=hit["case_run_id"])
    turns = _lines(row, "transcript", {"role": pl.String, "text": pl.String, "t": pl.Float64, "end_t": pl.Float64})
    calls = _lines(row, "tool_calls", {"name": pl.String, "arguments": pl.String, "result": pl.String,
                                       "is_error": pl.Boolean, "t": pl.Float64})
    results = current_results(ws, [r.run_id])
    with ws.engine.connect() as conn:
        specs = {s.consumer_key: CriteriaSpec.model_validate(s.spec) for s in stamped_criteria(conn, [r.run_id])}
    mine = results.filter(pl.col("case_run_id") == hit["case_run_id"]).sort("assertion_key")
    params = _params(ws, mine["assertion_id"].unique().to_list())
    counting = counted_by(specs)
    marks: dict[tuple[str, int], list[str]] = {}
    shown = []
    for res in mine.iter_rows(named=True):
        lines = deciding_lines(turns, calls, res["mechanism"], params.get(res["assertion_id"], {}), res["met"])
        for i in (lines[1] if lines else []):
            marks.setdefault((lines[0], i), []).append(res["assertion_key"])
        shown.append({
            "assertion_key": res["assertion_key"], "mechanism": res["mechanism"], "met": res["met"],
            "value": res["value"], "evaluator": res["evaluator"], "reason": res["reason"],
            "counted_by": counting.get(res["assertion_key"], []),
            "decided_by": {lines[0]: lines[1]} if lines else None,
        })
    verdicts = []
    for consumer, spec in sorted(specs.items()):
        mine_v = case_verdicts(results.lazy(), spec).filter(pl.col("case_run_id") == hit["case_run_id"]).collect()
        v = mine_v.row(0, named=True) if mine_v.height else {"verdict": None, "reason": "not judged yet"}
        verdicts.append({"consumer": consumer, "verdict": v["verdict"], "reason": v["reason"]})
    case = row.row(0, named=True)
    return {
        "case_run": {
            "case_run_id": case["case_run_id"], "run_id": r.run_id, "suite": f"{r.team_id}/{r.suite_key}",
            "case_key": case["case_key"], "call_id": hit["call_id"], "runner": case["runner"],
            "status": case["status"], "error": case["error"], "duration_ms": case["duration_ms"],
            "cost_usd": case["cost_usd"], "started_at": case["started_at"],
        },
        "verdicts": verdicts,
        "results": shown,
        "transcript": [{"index": i, **turn, "decides": marks.get(("turns", i), [])}
                       for i, turn in enumerate(turns.iter_rows(named=True))],
        "tool_calls": [{"index": i, **call, "decides": marks.get(("calls", i), [])}
                       for i, call in enumerate(calls.iter_rows(named=True))],
    }
