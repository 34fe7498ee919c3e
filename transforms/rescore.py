"""Re-score from counts: the same verdicts as :func:`.verdicts.run_verdicts`, from a summary kept per (run, key).

A verdict under any criteria needs, per run and assertion key, only a few counts: results, met,
undetermined, not met, the case runs with a result and those with a failure, and the evaluators
behind them. :func:`key_counts` computes them from the atoms of each case run's latest outcome (with
the run, case run, key and evaluator as 64-bit codes); the lake keeps them as state
(``run_key_counts``), rewritten for the runs each judging pass touches. :func:`counted_run_verdicts`
turns counts into verdicts for a spec -- a few hundred thousand rows for a suite of twenty thousand
runs, whatever the number of atoms. The verdict rules, reasons and columns are :mod:`.verdicts`'
own (``_verdict_exprs``); a differential test holds the two paths to the same answers.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assay.core.criteria import CriteriaSpec

from .verdicts import _count_columns, _plan, _presence_columns, _verdict_exprs

__all__ = ["COUNT_COLUMNS", "STATE_COLUMNS", "counted_run_verdicts", "key_counts"]

STATE_COLUMNS = ("run", "case_run", "key", "met", "evaluator_code")
"""What :func:`key_counts` reads of the current atoms."""

COUNT_COLUMNS = ("run", "key", "n", "met", "nulls", "not_met", "units", "failed_units", "evaluators")
"""One row per (run, key): what a verdict under any criteria needs of that key's current results."""


def key_counts(current: pl.LazyFrame) -> pl.LazyFrame:
    """Per (run, key) of the current atoms: results, met, undetermined, not met, case runs with a result
    (``units``) and with a not-met one (``failed_units``), and the evaluator codes, sorted."""
    met = pl.col("met")
    atoms = current.select(*STATE_COLUMNS)
    per_case_run = atoms.group_by("run", "key", "case_run").agg(failed=(~met).any())
    units = per_case_run.group_by("run", "key").agg(units=pl.len(), failed_units=pl.col("failed").sum())
    return (
        atoms.group_by("run", "key")
        .agg(n=pl.len(), met=met.sum(), nulls=met.null_count(), not_met=(~met).sum(),
             evaluators=pl.col("evaluator_code").unique().sort())
        .join(units, on=["run", "key"], how="left")
        .select(pl.col("run", "key"), pl.col("n", "met", "nulls", "not_met", "units", "failed_units").cast(pl.Int64),
                "evaluators")
    )


def counted_run_verdicts(
    counts: pl.LazyFrame, spec: CriteriaSpec, key_codes: Mapping[str, int], evaluator_names: Mapping[int, str]
) -> pl.LazyFrame:
    """One verdict row per run code in ``counts`` (:data:`COUNT_COLUMNS`): ``run`` then ``VERDICT_COLUMNS``.

    ``key_codes`` maps every assertion key the spec names to its code; ``evaluator_names`` maps
    evaluator codes back to names (for the ``evaluators`` column).
    """
    plan = _plan(spec)
    code = {k: key_codes[k] for k in plan.counted}
    key, n, m = pl.col("key"), pl.col("n"), pl.col("met")
    counted = counts.filter(key.is_in(list(code.values())))
    aggs = [n.sum().alias("counted"), m.sum().alias("met"), pl.col("nulls").sum().alias("nulls")]
    for r, k in enumerate(plan.required):
        this = key == code[k]
        aggs += [n.filter(this).sum().alias(f"_r{r}_n"), pl.col("not_met").filter(this).sum().alias(f"_r{r}_not_met"),
                 pl.col("units").filter(this).sum().alias(f"_r{r}_units"),
                 pl.col("failed_units").filter(this).sum().alias(f"_r{r}_failed_units")]
    for g, keys, _ in plan.groups:
        these = key.is_in([code[k] for k in keys])
        aggs += [n.filter(these).sum().alias(f"_g{g}_n"), m.filter(these).sum().alias(f"_g{g}_met")]
    aggs.append(pl.col("evaluators").explode().unique().alias("evaluators"))
    per_run = counts.select("run").unique().join(counted.group_by("run").agg(aggs), on="run", how="left")
    names = pl.col("evaluators").list.eval(
        pl.element().replace_strict(dict(evaluator_names), return_dtype=pl.String)
    ).list.sort()
    return (
        per_run.with_columns(pl.col(_count_columns(plan)).fill_null(0).cast(pl.Int64), evaluators=names)
        .with_columns(pl.col(c).alias(f"_run{c}") for c in _presence_columns(plan))
        .select("run", *_verdict_exprs(plan, run_level=True))
    )
