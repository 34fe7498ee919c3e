"""Re-score from counts: the same verdicts as :func:`.verdicts.run_verdicts`, from a summary kept per (run, key).

A verdict under any criteria needs, per run and assertion key, only a few counts: results, met,
undetermined, not met, the case runs with a result and those with a failure, the evaluators behind them,
the case runs with an undetermined result and the smallest reason text given for one, and the run's case runs
(these three let a spec's ``allow_undetermined`` exclude undetermined results and say so).
:func:`key_counts` computes them from the atoms of each case run's latest outcome (with
the run, case run, key and evaluator as 64-bit codes); the lake keeps them as state
(``run_key_counts``), rewritten for the runs each judging pass touches. :func:`counted_run_verdicts`
turns counts into verdicts for a spec -- a few hundred thousand rows for a suite of twenty thousand
runs, whatever the number of atoms. The verdict rules, reasons and columns are :mod:`.verdicts`'
own (:mod:`.verdict_rules`); a differential test holds the two paths to the same answers.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assay.core.criteria import CriteriaSpec
from assay.core.errors import EvidenceError

from .verdict_rules import count_columns, plan, presence_columns, verdict_exprs

__all__ = ["COUNT_COLUMNS", "STATE_COLUMNS", "counted_run_verdicts", "key_counts"]

STATE_COLUMNS = ("run", "case_run", "key", "met", "reason", "evaluator_code")
"""What :func:`key_counts` reads of the current atoms."""

COUNT_COLUMNS = ("run", "key", "n", "met", "nulls", "not_met", "units", "failed_units", "evaluators",
                 "null_case_runs", "null_reason", "case_runs")
"""One row per (run, key): what a verdict under any criteria needs of that key's current results."""


def key_counts(current: pl.LazyFrame) -> pl.LazyFrame:
    """Per (run, key) of the current atoms: results, met, undetermined, not met, case runs with a result
    (``units``) and with a not-met one (``failed_units``), the evaluator codes, sorted; the case-run codes
    with an undetermined result (``null_case_runs``, sorted), the smallest non-empty reason text of an
    undetermined result (``null_reason``), and the run's case runs (``case_runs``, the same on each row
    of the run)."""
    met, reason = pl.col("met"), pl.col("reason")
    atoms = current.select(*STATE_COLUMNS)
    per_case_run = atoms.group_by("run", "key", "case_run").agg(failed=(~met).any())
    units = per_case_run.group_by("run", "key").agg(units=pl.len(), failed_units=pl.col("failed").sum())
    case_runs = atoms.group_by("run").agg(case_runs=pl.col("case_run").n_unique())
    return (
        atoms.group_by("run", "key")
        .agg(n=pl.len(), met=met.sum(), nulls=met.null_count(), not_met=(~met).sum(),
             evaluators=pl.col("evaluator_code").unique().sort(),
             null_case_runs=pl.col("case_run").filter(met.is_null()).unique().sort(),
             null_reason=reason.filter(met.is_null() & (reason.str.len_bytes() > 0)).min())
        .join(units, on=["run", "key"], how="left")
        .join(case_runs, on="run", how="left")
        .select(pl.col("run", "key"), pl.col("n", "met", "nulls", "not_met", "units", "failed_units").cast(pl.Int64),
                "evaluators", "null_case_runs", "null_reason", pl.col("case_runs").cast(pl.Int64))
    )


def counted_run_verdicts(
    counts: pl.LazyFrame, spec: CriteriaSpec, key_codes: Mapping[str, int], evaluator_names: Mapping[int, str]
) -> pl.LazyFrame:
    """One verdict row per run code in ``counts`` (:data:`COUNT_COLUMNS`): ``run`` then ``VERDICT_COLUMNS``.

    ``key_codes`` maps every assertion key the spec names to its code; ``evaluator_names`` maps
    evaluator codes back to names (for the ``evaluators`` column). A spec whose ``applies`` names a key reads
    each result's evaluator, which the counts do not keep: it is refused, to be scored from the atoms.
    """
    p = plan(spec)
    if p.capable:
        raise EvidenceError(f"counted_run_verdicts: applies ({', '.join(p.capable)}) needs each result's evaluator; "
                            "score this criteria with run_verdicts over the current atoms")
    code = {k: key_codes[k] for k in p.counted}
    key, n, m, nulls = pl.col("key"), pl.col("n"), pl.col("met"), pl.col("nulls")
    counted = counts.filter(key.is_in(list(code.values())))
    aggs = [n.sum().alias("counted"), m.sum().alias("met"), nulls.sum().alias("nulls"),
            pl.col("null_reason").min().alias("_null_reason"),
            pl.col("null_case_runs").explode().drop_nulls().n_unique().cast(pl.Int64).alias("_null_units")]
    for r, k in enumerate(p.required):
        this = key == code[k]
        aggs += [n.filter(this).sum().alias(f"_r{r}_n"), pl.col("not_met").filter(this).sum().alias(f"_r{r}_not_met"),
                 nulls.filter(this).sum().alias(f"_r{r}_nulls"),
                 pl.col("units").filter(this).sum().alias(f"_r{r}_units"),
                 pl.col("failed_units").filter(this).sum().alias(f"_r{r}_failed_units")]
    for g, keys, _ in p.groups:
        these = key.is_in([code[k] for k in keys])
        aggs += [n.filter(these).sum().alias(f"_g{g}_n"), m.filter(these).sum().alias(f"_g{g}_met"),
                 nulls.filter(these).sum().alias(f"_g{g}_nulls")]
    aggs.append(pl.col("evaluators").explode().unique().alias("evaluators"))
    runs = counts.group_by("run").agg(pl.col("case_runs").max())
    per_run = runs.join(counted.group_by("run").agg(aggs), on="run", how="left")
    names = pl.col("evaluators").list.eval(
        pl.element().replace_strict(dict(evaluator_names), return_dtype=pl.String)
    ).list.sort()
    return (
        per_run.with_columns(pl.col([*count_columns(p), "_null_units"]).fill_null(0).cast(pl.Int64), evaluators=names)
        .with_columns(pl.col(c).alias(f"_run{c}") for c in presence_columns(p))
        .select("run", *verdict_exprs(p, run_level=True))
    )
