"""Verdicts of repeated cases: a consumer's per-case pass rate over a run's replays (product §2).

A run may replay each case several times; every replay is a case run (``source_ref`` ``replay-0001``,
``replay-0002``, ... in replay order) with its own verdict under the consumer's criteria
(:func:`assay.transforms.verdicts.case_verdicts`). A criteria with ``pass_rate`` judges each *case* on the
series of its replays' verdicts (:func:`assay.transforms.series.decide`: the sequential test, else the Wilson
bounds): ``pass`` or ``fail`` only when the evidence decides, ``flaky`` when it cannot, ``error`` when no
replay executed and was judged.

The run's verdict is then read from its cases: ``error`` when a case is ``error``; else ``fail`` when a case
is ``fail``; else ``pass`` when a case is ``pass``; a run whose every case is ``flaky`` is ``error`` (nothing
decided, and a flaky case is never silently a pass). Flaky cases are excluded from the counts and named in
the reason with their pass rate and Wilson bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from assay.core.criteria import CriteriaSpec, PassRate

from .series import Decision, decide, replays_to_decide
from .verdicts import case_verdicts, run_verdicts

__all__ = ["DECISION_SCHEMA", "REPLAY_PREFIX", "case_decisions", "escalation_needs", "repeated_run_verdicts", "replay_number", "series_run_verdicts",
           "undecided_cases", "without_pass_rate"]

REPLAY_PREFIX = "replay-"
"""The ``source_ref`` prefix of a replay's case run (``replay-0003``)."""

DECISION_SCHEMA: dict[str, Any] = {
    "run_id": pl.String, "case_key": pl.String, "verdict": pl.String, "passes": pl.Int64, "runs": pl.Int64,
    "errors": pl.Int64, "lower": pl.Float64, "upper": pl.Float64, "how": pl.String, "at": pl.Int64,
    "reason": pl.String,
}
"""One row per (run, case): the case's decision over its replays."""


def replay_number(source_ref: pl.Expr) -> pl.Expr:
    """A case run's replay number from its ``source_ref`` (``replay-0003`` -> 3); 1 for a case run once."""
    digits = source_ref.str.strip_prefix(REPLAY_PREFIX)
    return pl.when(source_ref.str.starts_with(REPLAY_PREFIX)).then(digits.cast(pl.Int64, strict=False)).otherwise(1)


def without_pass_rate(spec: CriteriaSpec) -> CriteriaSpec:
    """The spec each replay is judged under: the same criteria, without the per-case rate."""
    return spec.model_copy(update={"pass_rate": None})


def case_decisions(case_rows: pl.DataFrame, order: pl.DataFrame, rule: PassRate,
                   budgets: Mapping[str, int | None] | None = None) -> pl.DataFrame:
    """Each case's decision (:data:`DECISION_SCHEMA`) from its replays' verdicts.

    ``case_rows``: ``run_id, case_run_id, case_key, verdict`` (each replay's verdict under the criteria
    without its ``pass_rate``); ``order``: ``case_run_id, source_ref`` of the same case runs. With
    ``budgets`` (run id -> its escalation budget, None for none), a flaky case's reason says why replaying
    stopped: at the budget, or with no escalation asked for.
    """
    rows = []
    for run_id, case_key, outcomes in _series(case_rows, order):
        row = _decision_row(decide(outcomes, rule))
        if row["verdict"] == "flaky" and budgets is not None and run_id in budgets:
            budget = budgets[run_id]
            row["reason"] += (f"; stopped at the escalation budget of {budget} replays" if budget is not None
                              and len(outcomes) >= budget else "; no escalation budget: replay more with --budget")
        rows.append({"run_id": run_id, "case_key": case_key, **row})
    return pl.DataFrame(rows, schema=DECISION_SCHEMA)


def _series(case_rows: pl.DataFrame, order: pl.DataFrame) -> list[tuple[str, str, list[bool | None]]]:
    """(run, case, its replays' outcomes in replay order: True pass, False fail, None error)."""
    series = (
        case_rows.select("run_id", "case_run_id", "case_key", "verdict")
        .join(order.select("case_run_id", "source_ref"), on="case_run_id", how="left")
        .with_columns(_replay=replay_number(pl.col("source_ref").fill_null("")))
        .sort("run_id", "case_key", "_replay", "case_run_id")
        .group_by("run_id", "case_key", maintain_order=True)
        .agg(pl.col("verdict"))
    )
    return [(run_id, case_key, [_outcome(v) for v in verdicts]) for run_id, case_key, verdicts in series.iter_rows()]


def escalation_needs(atoms: pl.LazyFrame, spec: CriteriaSpec, order: pl.DataFrame) -> dict[str, int]:
    """Case key -> the fewest further replays that could decide it, for each case of one run the evidence
    has not decided under ``spec`` (:func:`assay.transforms.series.replays_to_decide`)."""
    if spec.pass_rate is None:
        return {}
    cases = case_verdicts(atoms, without_pass_rate(spec)).collect()
    needs = {}
    for _, case_key, outcomes in _series(cases, order):
        if decide(outcomes, spec.pass_rate).verdict == "flaky":
            needs[case_key] = replays_to_decide(outcomes, spec.pass_rate)
    return needs


def _outcome(verdict: str | None) -> bool | None:
    return True if verdict == "pass" else False if verdict == "fail" else None


def _decision_row(d: Decision) -> dict[str, Any]:
    return {"verdict": d.verdict, "passes": d.passes, "runs": d.runs, "errors": d.errors, "lower": d.lower,
            "upper": d.upper, "how": d.how, "at": d.at, "reason": d.reason}


def undecided_cases(decisions: pl.DataFrame) -> list[str]:
    """The case keys the evidence has not decided (``flaky``), in key order."""
    return sorted(decisions.filter(pl.col("verdict") == "flaky")["case_key"].unique().to_list())


def _listing(rows: Sequence[dict[str, Any]], limit: int = 3) -> str:
    shown = "; ".join(f"{r['case_key']} ({r['reason']})" for r in rows[:limit])
    return shown + (f"; and {len(rows) - limit} more" if len(rows) > limit else "")


def _run_reason(cases: list[dict[str, Any]]) -> tuple[str, str]:
    """(verdict, reason) of a run from its cases' decisions."""
    by: dict[str, list[dict[str, Any]]] = {"pass": [], "fail": [], "flaky": [], "error": []}
    for c in cases:
        by[c["verdict"]].append(c)
    decided = len(by["pass"]) + len(by["fail"])
    flaky = (f"; {len(by['flaky'])} flaky, excluded: {_listing(by['flaky'])}" if by["flaky"] else "")
    if by["error"]:
        return "error", f"{len(by['error'])} of {len(cases)} cases undetermined: {_listing(by['error'])}{flaky}"
    if by["fail"]:
        return "fail", f"{len(by['fail'])} of {decided} decided cases fail: {_listing(by['fail'])}{flaky}"
    if by["pass"]:
        return "pass", f"{len(by['pass'])} of {len(cases)} cases pass on their replays{flaky}"
    return "error", f"no case decided: {len(by['flaky'])} flaky, excluded: {_listing(by['flaky'])}"


def series_run_verdicts(base: pl.DataFrame, decisions: pl.DataFrame) -> pl.DataFrame:
    """``base`` (``run_id`` + the verdict columns, from the atoms) with each run's verdict and reason read
    from its cases' ``decisions`` instead; a run with no decision keeps its row as it was."""
    if base.is_empty():
        return base
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in decisions.sort("run_id", "case_key").iter_rows(named=True):
        by_run.setdefault(row["run_id"], []).append(row)
    read = {run_id: _run_reason(cases) for run_id, cases in by_run.items()}
    frame = pl.DataFrame(
        {"run_id": list(read), "_verdict": [v for v, _ in read.values()], "_reason": [r for _, r in read.values()]},
        schema={"run_id": pl.String, "_verdict": pl.String, "_reason": pl.String},
    )
    return base.join(frame, on="run_id", how="left").with_columns(
        verdict=pl.coalesce("_verdict", "verdict"), reason=pl.coalesce("_reason", "reason"),
    ).drop("_verdict", "_reason")


def repeated_run_verdicts(atoms: pl.LazyFrame, spec: CriteriaSpec, order: pl.DataFrame,
                          budgets: Mapping[str, int | None] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(run rows, case decisions) of a spec with a ``pass_rate``: each replay judged under the spec without
    it, each case decided over its replays, each run read from its cases. ``order``: ``case_run_id,
    source_ref`` of the runs' case runs; ``budgets``: as :func:`case_decisions` reads them."""
    if spec.pass_rate is None:
        raise ValueError("repeated_run_verdicts needs a criteria with a pass_rate")
    inner = without_pass_rate(spec)
    base = run_verdicts(atoms, inner).collect()
    decisions = case_decisions(case_verdicts(atoms, inner).collect(), order, spec.pass_rate, budgets)
    return series_run_verdicts(base, decisions), decisions
