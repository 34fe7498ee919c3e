"""A runner's own verdict on one of our assertions answers that assertion.

Some runners send our assertions into a vendor's own slots (a VAPI eval judge plan, a Hamming selected
assertion) and report the vendor's verdict as a runner evaluation named
``native_evaluation_name(key)`` (``assertion:<key>``). For that case run, such an evaluation *is* the
answer to assertion ``key``, whatever its mechanism: the engine takes these rows out before any
mechanism runs (:func:`split_native`) and answers them here. The rule knows no vendor and no mechanism.

Precedence (see :mod:`.judge`): a case run that is missing or did not execute is decided first (met
null); then a native evaluation, even for a mechanism the runner does not declare; then the usual rules.

- met and value are the evaluation's own (``met``/``value``, read from the vendor's verdict and scale
  when the runner reported them; from ``pass``/``fail`` when the columns are absent);
- the evaluator is the evaluation's (``vapi:eval``, ``hamming:assertion``, ...);
- the reason is the vendor's rationale; without one, a text saying what the vendor decided;
- two or more evaluations with the same name for one case run answer nothing: met null, "expected one".
"""

from __future__ import annotations

import polars as pl

from assay.core.evidence import NATIVE_PREFIX

from .mechanisms.helpers import either, words

RESULT_COLUMNS = ("met", "value", "reason", "evaluator")


def _readings(evaluations: pl.DataFrame) -> list[pl.Expr]:
    """met and value of each evaluation: its own columns when present, else read from pass/fail."""
    verdict = pl.col("verdict")
    met = pl.col("met") if "met" in evaluations.columns else (
        pl.when(verdict == "pass").then(True).when(verdict == "fail").then(False))
    value = pl.col("value") if "value" in evaluations.columns else (
        pl.when(verdict == "pass").then(1.0).when(verdict == "fail").then(0.0))
    return [met.cast(pl.Boolean).alias("met"), value.cast(pl.Float64).alias("value")]


def split_native(assignments: pl.DataFrame, case_runs: pl.DataFrame,
                 evaluations: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(results for the assignments a native evaluation answers, the other assignments).

    The results have the assignment columns followed by met, value, reason, evaluator.
    """
    if "assertion_key" not in assignments.columns or "name" not in evaluations.columns:
        return assignments.clear().with_columns(_empty()), assignments
    natives = (
        evaluations.filter(pl.col("name").str.starts_with(NATIVE_PREFIX))
        .with_columns(*_readings(evaluations), assertion_key=pl.col("name").str.strip_prefix(NATIVE_PREFIX))
        .group_by("case_run_id", "assertion_key")
        .agg(pl.len().alias("_n"), pl.col("met", "value", "verdict", "evaluator", "rationale").first())
    )
    executed = case_runs.filter((pl.col("status") != "error").fill_null(True)).select("case_run_id")
    indexed = assignments.with_row_index("_i")
    hit = (indexed.join(executed, on="case_run_id", how="semi")
           .join(natives, on=["case_run_id", "assertion_key"], how="inner"))
    rest = indexed.join(hit.select("_i"), on="_i", how="anti").drop("_i")
    single = pl.col("_n") == 1
    met = pl.when(single).then(pl.col("met"))
    name = words(f'"{NATIVE_PREFIX}', pl.col("assertion_key"), '"')
    rationale = pl.col("rationale")
    reason = (
        pl.when(~single).then(words("the runner reported ", pl.col("_n"), " evaluations named ", name, "; expected one"))
        .when(rationale.is_not_null() & (rationale != "")).then(rationale)
        .when(met.is_null()).then(words("the runner's own evaluation reached no verdict (",
                                        either(pl.col("verdict"), "none"), ")"))
        .when(~met).then(pl.lit("the runner's own evaluation judged it not met"))
    )
    results = hit.select(
        *assignments.columns, met=met, value=pl.when(single).then(pl.col("value")), reason=reason,
        evaluator=pl.when(single).then(pl.col("evaluator")).otherwise(pl.lit("assay:vendor")),
    )
    return results, rest


def _empty() -> list[pl.Expr]:
    return [pl.lit(None, pl.Boolean).alias("met"), pl.lit(None, pl.Float64).alias("value"),
            pl.lit(None, pl.String).alias("reason"), pl.lit(None, pl.String).alias("evaluator")]


__all__ = ["split_native"]
