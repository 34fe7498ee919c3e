"""What the JUnit report says of each case run beyond its verdict, read from the lake and the catalog.

:func:`read_case_facts` completes each case entry of ``verdicts_for(..., cases=True)`` with:

- ``duration_ms``: how long the case run took (the report's ``time``);
- ``rule_verdict``: its verdict under the consumer's required keys alone, for a consumer with threshold
  groups (a group is a ratio over the run: a case failing only a group's ratio fails no rule of its own);
- ``ratios``: each threshold group's ``met/determined`` in this case run, and the group's ``min``;
- on each deciding result, ``line``: the transcript line or tool call that decided it, when one does
  (:func:`assay.transforms.explain.deciding_lines`).

Reads only; the entries passed in are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec
from assay.storage.catalog import tables as t
from assay.storage.catalog.assertions import stamped_criteria
from assay.storage.lake import FileFilter
from assay.transforms.explain import deciding_lines
from assay.transforms.verdicts import case_verdicts

from .drill import CaseDetail, case_detail
from .workspace import Workspace

__all__ = ["read_case_facts"]

_LINE_CHARS = 160


def _group_ratios(results: pl.DataFrame, spec: CriteriaSpec) -> dict[str, dict[str, str]]:
    """Case run id -> ``{KEY+KEY: "met/determined (min M)"}`` for each counted threshold group it has results of."""
    out: dict[str, dict[str, str]] = {}
    for _, keys, low in spec.counted_groups():
        counts = (results.filter(pl.col("assertion_key").is_in(keys))
                  .group_by("case_run_id")
                  .agg(met=pl.col("met").cast(pl.Boolean).sum(), determined=pl.col("met").is_not_null().sum()))
        for case_run_id, met, determined in counts.iter_rows():
            out.setdefault(case_run_id, {})["+".join(keys)] = f"{met}/{determined} met (min {low:g})"
    return out


def _rule_verdicts(results: pl.DataFrame, spec: CriteriaSpec) -> dict[str, str | None]:
    """Case run id -> its verdict under the required keys alone (only for a spec with threshold groups)."""
    if not spec.threshold or spec.pass_rate is not None:
        return {}
    own = spec.model_copy(update={"threshold": []})
    return dict(case_verdicts(results.lazy(), own).select("case_run_id", "verdict").collect().iter_rows())


def _params(ws: Workspace, assertion_ids: list[str]) -> dict[str, dict[str, Any]]:
    a = t.assertions
    with ws.engine.connect() as conn:
        rows = conn.execute(sa.select(a.c.assertion_id, a.c.params).where(a.c.assertion_id.in_(assertion_ids)))
        return {r.assertion_id: dict(r.params or {}) for r in rows}


def _short(text: str | None) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= _LINE_CHARS else one[: _LINE_CHARS - 1] + "…"


class _Lines:
    """The deciding line of a failing case run's results: its transcript and tool calls, read once."""

    def __init__(self, ws: Workspace, run_ids: list[str], detail: CaseDetail, case_run_ids: set[str]) -> None:
        where = FileFilter(runs=run_ids)
        frame = (ws.lake.scan("case_runs", where)
                 .filter(pl.col("run_id").is_in(run_ids) & pl.col("case_run_id").is_in(sorted(case_run_ids)))
                 .select("case_run_id", "transcript", "tool_calls"))
        self._rows = {r["case_run_id"]: r for r in ws.lake.collect(frame, "case_runs", where).iter_rows(named=True)}
        mine = detail.results.filter(pl.col("case_run_id").is_in(sorted(case_run_ids)))
        self._which = {(r["case_run_id"], r["assertion_key"]): (r["mechanism"], r["assertion_id"])
                       for r in mine.iter_rows(named=True)}
        self._params = _params(ws, mine["assertion_id"].unique().to_list()) if mine.height else {}

    def line(self, case_run_id: str, result: dict[str, Any]) -> str | None:
        which = self._which.get((case_run_id, result["assertion_key"]))
        row = self._rows.get(case_run_id)
        if which is None or row is None:
            return None
        turns = pl.DataFrame(row["transcript"] or [], schema={"role": pl.String, "text": pl.String})
        calls = pl.DataFrame(row["tool_calls"] or [], schema={"name": pl.String, "arguments": pl.String})
        lines = deciding_lines(turns, calls, which[0], self._params.get(which[1], {}), result.get("met"))
        if not lines or not lines[1]:
            return None
        what, (i, *_) = lines
        if what == "turns":
            turn = turns.row(i, named=True)
            return f"transcript line {i} ({turn['role']}): {_short(turn['text'])!r}"
        call = calls.row(i, named=True)
        return f"tool call {i}: {call['name']}({_short(call['arguments'])})"


def read_case_facts(ws: Workspace, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with each case entry completed as the module says (new dicts; ``rows`` is not changed)."""
    run_ids = list(dict.fromkeys(r["run_id"] for r in rows))
    if not any(r.get("cases") for r in rows):
        return list(rows)
    detail = case_detail(ws, run_ids)
    where = FileFilter(runs=run_ids)
    durations = dict(ws.lake.collect(ws.lake.scan("case_runs", where).filter(pl.col("run_id").is_in(run_ids))
                                     .select("case_run_id", "duration_ms"), "case_runs", where).iter_rows())
    with ws.engine.connect() as conn:
        specs = {(s.run_id, s.consumer_key): CriteriaSpec.model_validate(s.spec) for s in stamped_criteria(conn, run_ids)}
    failing = {c["case_run_id"] for r in rows for c in r.get("cases") or [] if c.get("results")}
    lines = _Lines(ws, run_ids, detail, failing) if failing else None
    out = []
    for r in rows:
        spec = specs.get((r["run_id"], r["consumer"]))
        results = detail.results.filter(pl.col("run_id") == r["run_id"])
        rule = _rule_verdicts(results, spec) if spec else {}
        ratios = _group_ratios(results, spec) if spec and spec.pass_rate is None else {}
        cases = []
        for c in r.get("cases") or []:
            ref = c["case_run_id"]
            facts: dict[str, Any] = {"duration_ms": durations.get(ref), "ratios": ratios.get(ref, {})}
            if ref in rule:
                facts["rule_verdict"] = rule[ref]
            found = [{**res, "line": lines.line(ref, res) if lines else None} for res in c.get("results") or []]
            cases.append({**c, **facts, "results": found})
        out.append({**r, "cases": cases})
    return out
