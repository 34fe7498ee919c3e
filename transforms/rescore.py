"""Re-score over the lake's re-score state: the same verdicts as :func:`.verdicts.run_verdicts`, fast.

The state (``current_results``) holds only the atoms of each case run's latest outcome, with the run,
case run, assertion key and evaluator as 64-bit codes. No latest outcome is resolved here, and no
string is compared per row: the spec's keys become codes once, the atoms are summarised per
(run, key) -- only the counted keys' rows -- and the run is the sum of its keys. The verdict rules,
reasons and columns are :mod:`.verdicts`' own (``_verdict_exprs``), so the two paths cannot differ
in anything but speed; a differential test holds them to that.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assay.core.criteria import CriteriaSpec

from .verdicts import _count_columns, _plan, _presence_columns, _verdict_exprs

__all__ = ["STATE_COLUMNS", "coded_run_verdicts"]

STATE_COLUMNS = ("run", "case_run", "key", "met", "evaluator_code")
"""What a re-score reads of the state."""


def coded_run_verdicts(
    state: pl.LazyFrame, spec: CriteriaSpec, key_codes: Mapping[str, int], evaluator_names: Mapping[int, str]
) -> pl.LazyFrame:
    """One verdict row per run code present in ``state``: ``run`` then :data:`~.verdicts.VERDICT_COLUMNS`.

    ``key_codes`` maps every assertion key the spec names to its code; ``evaluator_names`` maps
    evaluator codes back to names (for the ``evaluators`` column).
    """
    plan = _plan(spec)
    code = {k: key_codes[k] for k in plan.counted}
    key, met, run = pl.col("key"), pl.col("met"), pl.col("run")
    atoms = state.select(*STATE_COLUMNS)
    per_key = (
        atoms.filter(key.is_in(list(code.values())))
        .group_by("run", "key")
        .agg(n=pl.len(), met=met.sum(), nulls=met.null_count(), not_met=(~met).sum(),
             evaluators=pl.col("evaluator_code").unique())
    )
    # Required keys are also counted in case runs (a case run may hold two results of one key).
    required = [code[k] for k in plan.required]
    units = (
        atoms.filter(key.is_in(required))
        .group_by("run", "key", "case_run")
        .agg(failed=(~met).any())
        .group_by("run", "key")
        .agg(units=pl.len(), failed_units=pl.col("failed").sum())
    )
    per_key = per_key.join(units, on=["run", "key"], how="left")
    n, m = pl.col("n"), pl.col("met")
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
    per_run = atoms.select(run).unique().join(per_key.group_by("run").agg(aggs), on="run", how="left")
    counts = _count_columns(plan)
    names = pl.col("evaluators").list.eval(
        pl.element().replace_strict(dict(evaluator_names), return_dtype=pl.String)
    ).list.sort()
    return (
        per_run.with_columns(pl.col(counts).fill_null(0).cast(pl.Int64), evaluators=names)
        .with_columns(pl.col(c).alias(f"_run{c}") for c in _presence_columns(plan))
        .select("run", *_verdict_exprs(plan, run_level=True))
    )
