"""Why a verdict came out: the results that decided it, and the lines of a conversation behind a result.

- :func:`deciding_results`: per case run, the results that moved or blocked its verdict under a
  criteria spec -- for a ``fail`` the counted results not met (of required keys, and of threshold
  groups below their ``min``); for an ``error`` the counted results that could not be determined and
  the keys with no result in the run. The counted keys are the plan of :mod:`.verdict_rules`, and which
  groups are below ``min`` is read from the case verdict rows, never decided again here.
- :func:`counted_by`: which consumers count each assertion key.
- :func:`deciding_lines`: the transcript turns or tool calls that decided one result, derived from the
  mechanism's parameters over the case run's evidence. Only mechanisms that are decided by lines can
  point at one (a text found, a tool call made); for the others nothing is marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from assay.core.criteria import CriteriaSpec
from assay.core.mechanisms import validate_params

from .mechanisms.helpers import found_by
from .mechanisms.tool import argument_matches
from .verdict_rules import plan as _plan

__all__ = ["DECIDING_COLUMNS", "NO_RESULT", "counted_by", "deciding_lines", "deciding_results"]

DECIDING_COLUMNS = ("run_id", "case_run_id", "assertion_key", "met", "value", "evaluator", "reason")
"""The columns of :func:`deciding_results`."""

NO_RESULT = "no result in this run"
"""The reason given for a counted key that has no result at all in the run."""


def _missing_keys(results: pl.LazyFrame, runs: pl.LazyFrame, spec: CriteriaSpec) -> pl.LazyFrame:
    """Per run of ``runs``: the counted keys with no result in it (a required key, or every key of a group)."""
    plan = _plan(spec)
    terms = [(f"r{i}", k) for i, k in enumerate(plan.required)]
    terms += [(f"g{g}", k) for g, keys, _ in plan.groups for k in keys]
    if not terms:
        return pl.LazyFrame(schema={"run_id": pl.String, "assertion_key": pl.String})
    term_keys = pl.LazyFrame({"_term": [t for t, _ in terms], "assertion_key": [k for _, k in terms]})
    present = results.select("run_id", "assertion_key").unique().with_columns(_present=pl.lit(True))
    return (
        runs.join(term_keys, how="cross")
        .join(present, on=["run_id", "assertion_key"], how="left")
        .with_columns(_absent=pl.col("_present").is_null().all().over("run_id", "_term"))
        .filter("_absent")
        .select("run_id", "assertion_key")
        .unique()
    )


def deciding_results(results: pl.LazyFrame, cases: pl.LazyFrame, spec: CriteriaSpec) -> pl.LazyFrame:
    """The results that decided each ``fail`` or ``error`` case run: :data:`DECIDING_COLUMNS`.

    ``results`` are the current results (one per case run and key) with ``run_id``, ``case_run_id``,
    ``assertion_key``, ``met``, ``value``, ``evaluator`` and ``reason``; ``cases`` are the rows of
    :func:`~.verdicts.case_verdicts` under ``spec`` (``run_id``, ``case_run_id``, ``verdict``,
    ``groups``). A passing case run has none. A key with no result in the run is listed for each
    erroring case run of that run, with ``met``, ``value`` and ``evaluator`` null and :data:`NO_RESULT`.
    """
    plan = _plan(spec)
    key, met, verdict = pl.col("assertion_key"), pl.col("met"), pl.col("verdict")
    group = pl.col("_group")
    below = (  # the keys of each case run's threshold groups below their min
        cases.select("case_run_id", _group=pl.col("groups")).explode("_group")
        .filter(group.struct.field("ok").not_().fill_null(False))
        .select("case_run_id", assertion_key=group.struct.field("keys")).explode("assertion_key")
        .unique().with_columns(_below=pl.lit(True))
    )
    not_met = met.not_().fill_null(False)
    decided = (
        results.join(cases.select("case_run_id", "verdict"), on="case_run_id")
        .join(below, on=["case_run_id", "assertion_key"], how="left")
        .filter(((verdict == "fail") & not_met & (key.is_in(plan.required) | pl.col("_below").fill_null(False)))
                | ((verdict == "error") & key.is_in(plan.counted) & met.is_null()))
        .select(*DECIDING_COLUMNS)
    )
    erroring = cases.filter(verdict == "error").select("run_id", "case_run_id")
    absent = (
        erroring.join(_missing_keys(results, erroring.select("run_id").unique(), spec), on="run_id")
        .with_columns(met=pl.lit(None, pl.Boolean), value=pl.lit(None, pl.Float64),
                      evaluator=pl.lit(None, pl.String), reason=pl.lit(NO_RESULT))
        .select(*DECIDING_COLUMNS)
    )
    return pl.concat([decided, absent]).sort("case_run_id", "assertion_key")


def counted_by(specs: Mapping[str, CriteriaSpec]) -> dict[str, list[str]]:
    """Assertion key -> the consumers (sorted) whose spec counts it; keys no spec counts are absent."""
    out: dict[str, list[str]] = {}
    for consumer in sorted(specs):
        for k in _plan(specs[consumer]).counted:
            out.setdefault(k, []).append(consumer)
    return out


# mechanism -> (which lines: turns or calls, the met value for which lines decided it, a pattern?)
_POINTERS: dict[str, tuple[str, bool, bool]] = {
    "transcript.contains": ("turns", True, False),
    "transcript.regex": ("turns", True, True),
    "transcript.not_contains": ("turns", False, False),
    "transcript.not_regex": ("turns", False, True),
    "tool.called": ("calls", True, False),
    "tool.not_called": ("calls", False, False),
}


def deciding_lines(
    turns: pl.DataFrame, calls: pl.DataFrame, mechanism: str, params: Mapping[str, Any], met: bool | None
) -> tuple[str, list[int]] | None:
    """The lines that decided one result: ``("turns", [indexes])`` or ``("calls", [indexes])``, or None.

    ``turns`` holds the case run's transcript (``role``, ``text``) and ``calls`` its tool calls
    (``name``, ``arguments``), in order; indexes are positions in them. A text found decides a met
    ``transcript.contains`` / ``transcript.regex`` and an unmet ``transcript.not_contains`` / ``transcript.not_regex``; a matching
    call decides a met ``tool.called`` and an unmet ``tool.not_called``. Anything else (an absence, a
    count, a latency, a rubric, a vendor's evaluation) points at no line: None.
    """
    pointer = _POINTERS.get(mechanism)
    if pointer is None or met is not pointer[1]:
        return None
    what, _, pattern = pointer
    p: Any = validate_params(mechanism, dict(params))
    if what == "turns":
        rows = turns.select("role", pl.col("text").fill_null("")).with_row_index("_i")
        if p.role is not None:
            rows = rows.filter(pl.col("role") == p.role)
        hits = rows.filter(found_by(p.case_insensitive, p.text, pattern)(pl.col("text")))
    else:
        hits = calls.select("name", "arguments").with_row_index("_i").filter(pl.col("name") == p.tool)
        for k, expected in (p.arguments or {}).items():  # the rule of tool.called, one filter at a time
            hits = hits.filter(argument_matches(k, expected).fill_null(False))
    return what, hits["_i"].cast(pl.Int64).to_list()
