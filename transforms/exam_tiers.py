"""Cheapest first: a replay of an exam whose outcome or trajectory already failed is not shown to the judge.

An exam's assertions run in tiers (outcome → trajectory → profile → judged, :mod:`assay.core.exam_checks`).
The deterministic tiers are evaluated together, at no cost; the judged tier costs a model call per replay and
never decides alone. So a replay whose cheaper tiers failed is already failed, and asking the judge about it
would only spend money: :func:`short_circuit` answers its rubric rows itself, undetermined, naming the failed
assertions. A case run is an exam's replay when any of its assertions is judged by an ``exam.*`` mechanism;
other suites' rubrics are always asked.
"""

from __future__ import annotations

import polars as pl

from assay.core.exam_checks import MECHANISM_TIERS

__all__ = ["GATING_MECHANISMS", "SHORT_CIRCUIT", "short_circuit"]

GATING_MECHANISMS = frozenset(m for m, tier in MECHANISM_TIERS.items() if tier in ("outcome", "trajectory"))
"""The mechanisms of the tiers that gate a replay, cheaper than the judge."""
SHORT_CIRCUIT = "not shown to the judge: a cheaper tier already failed on this replay"
"""How a short-circuited rubric result's reason begins."""


def short_circuit(waiting: pl.DataFrame, evaluated: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rubric rows still to ask the judge, rubric rows answered here) of ``waiting``, the rubric rows of
    ``evaluated`` awaiting the judge. ``evaluated`` holds every result of the pass: ``case_run_id``,
    ``assertion_key``, ``mechanism``, ``met``. An answered row keeps ``met`` and ``value`` null and says which
    cheaper assertions failed."""
    exam_replays = evaluated.filter(pl.col("mechanism").str.starts_with("exam."))["case_run_id"].unique()
    failed = (
        evaluated.filter(pl.col("case_run_id").is_in(exam_replays.implode())
                         & pl.col("mechanism").is_in(sorted(GATING_MECHANISMS)) & (pl.col("met") == False))  # noqa: E712
        .group_by("case_run_id")
        .agg(_failed=pl.col("assertion_key").unique().sort().str.join(", "))
    )
    marked = waiting.join(failed, on="case_run_id", how="left")
    answered = marked.filter(pl.col("_failed").is_not_null()).with_columns(
        met=pl.lit(None, pl.Boolean), value=pl.lit(None, pl.Float64),
        reason=pl.format(SHORT_CIRCUIT + " ({})", pl.col("_failed")),
    ).drop("_failed")
    return marked.filter(pl.col("_failed").is_null()).drop("_failed"), answered
