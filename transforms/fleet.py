"""The projections: result atoms turned into the tables analysts read (product §5).

Pure Polars over frames the caller reads; everything is per run, so a run's rows can be recomputed
alone whenever anything it is made of changed (the incremental pass of
:mod:`assay.storage.projection`), and the fleet-wide rollups (per team and week, across assertion
versions, across teams) are group-bys over these rows (:mod:`assay.storage.fleet_views`).

- :func:`project_verdicts`: per run, consumer and criteria version (stamped and current), the verdict
  over the current results with its coverage, and the per-case breakdown. The rules are
  :mod:`.verdicts`' own.
- :func:`behaviour_stats`: per run, assertion version and evaluator, how the current results came out.
- :func:`evaluator_pairs`: our result against a vendor's on the same behaviour and case run.
- :func:`run_costs`: what running and judging each run cost.

"Current" results are the atoms of each case run's latest outcome (:func:`.verdicts.latest`).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assay.core.criteria import CriteriaSpec

from .repeats import repeated_run_verdicts, without_pass_rate
from .verdicts import case_verdicts, run_verdicts, with_coverage

__all__ = ["OURS", "behaviour_stats", "evaluator_pairs", "project_verdicts", "run_costs", "week_of"]

OURS = "assay:"
"""The prefix of every evaluator of our own (a transcript check, a structural check, our judge)."""

COVERAGE = ("run_id", "status", "status_reason", "case_count", "case_runs", "cases_run")
"""What :func:`project_verdicts` needs of each run: the catalog's run ledger (its status, the cases in its
snapshot, the case runs stored) and how many distinct cases have a case run (``cases_run``)."""

VERSIONS = ("run_id", "consumer_key", "criteria_id", "criteria_version", "is_stamped", "is_current", "stamped_verdict")
"""Which criteria versions to apply to which run: one row per (run, consumer, version)."""


def week_of(moment: pl.Expr) -> pl.Expr:
    """Monday of the ISO week of a UTC timestamp, as a date: the fleet's period."""
    return moment.dt.truncate("1w").dt.date()


def project_verdicts(
    atoms: pl.DataFrame, runs: pl.DataFrame, versions: pl.DataFrame, specs: Mapping[str, CriteriaSpec],
    order: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run and case verdicts for every row of ``versions`` (:data:`VERSIONS`), over the current ``atoms``.

    ``runs`` has :data:`COVERAGE` for each run (a run whose cases did not all report is ``error`` under a
    criteria that counts anything, as ``assay rescore`` says; ``coverage`` is the share of its cases with a
    case run); ``specs`` maps each ``criteria_id`` to its
    spec. With ``order`` (``case_run_id, source_ref`` of the case runs), a criteria with a ``pass_rate`` decides
    each case over its replays (:mod:`.repeats`); the case rows are then each replay's own verdict. Returns
    (run rows, case rows), keyed like ``versions`` (case rows add case_run_id, case_key).
    """
    run_parts, case_parts = [], []
    lazy = atoms.lazy()
    # Teams often share a criteria's wording (a template, a common gate): each distinct spec is applied once,
    # to every run any of its versions is asked of.
    same = {cid: spec.model_dump_json() for cid, spec in specs.items()}
    by_spec = versions.with_columns(_spec=pl.col("criteria_id").replace_strict(same, return_dtype=pl.String))
    for (text,), chosen in by_spec.group_by("_spec", maintain_order=True):
        chosen = chosen.drop("_spec")
        spec = CriteriaSpec.model_validate_json(str(text))
        run_ids = chosen["run_id"].unique()
        mine = lazy.filter(pl.col("run_id").is_in(run_ids.implode()))
        if spec.pass_rate is not None and order is not None:  # each case decided over its replays
            judged, _ = repeated_run_verdicts(mine, spec, order)
            spec = without_pass_rate(spec)  # the per-case breakdown: each replay's own verdict
        else:
            judged = run_verdicts(mine, spec).collect()
        covered = with_coverage(judged, runs.filter(pl.col("run_id").is_in(run_ids.implode())), spec)
        run_parts.append(chosen.join(covered, on="run_id", how="left"))
        cases = case_verdicts(mine, spec).collect()
        case_parts.append(chosen.drop("stamped_verdict").join(cases, on="run_id", how="inner"))
    if not run_parts:
        return pl.DataFrame(), pl.DataFrame()
    run_rows = pl.concat(run_parts, how="vertical_relaxed").join(
        runs.select("run_id", "case_count", "cases_run"), on="run_id", how="left"
    ).with_columns(
        cases=pl.col("case_count").cast(pl.Int64),
        coverage=pl.when(pl.col("case_count") > 0).then(pl.col("cases_run") / pl.col("case_count")),
        changed=pl.col("is_stamped") & (pl.col("stamped_verdict") != pl.col("verdict")).fill_null(False),
        evaluators=pl.col("evaluators").fill_null(pl.lit([], dtype=pl.List(pl.String))),
    ).with_columns(mixed_evaluators=pl.col("evaluators").list.len() > 1)
    return run_rows, pl.concat(case_parts, how="vertical_relaxed")


def behaviour_stats(atoms: pl.LazyFrame) -> pl.LazyFrame:
    """Per (run, assertion version, evaluator) of the current ``atoms``: results, met, not met, undetermined."""
    met = pl.col("met")
    return atoms.group_by("run_id", "assertion_id", "evaluator").agg(
        pl.col("assertion_key", "assertion_version", "mechanism").first(),
        pl.len().cast(pl.Int64).alias("results"),
        (met == True).sum().cast(pl.Int64).alias("met"),  # noqa: E712 -- null stays out of both counts
        (met == False).sum().cast(pl.Int64).alias("not_met"),  # noqa: E712
        met.is_null().sum().cast(pl.Int64).alias("undetermined"),
    )


def evaluator_pairs(atoms: pl.LazyFrame, pairs: pl.DataFrame) -> pl.LazyFrame:
    """Our result against a vendor's, per case run and behaviour, over the current ``atoms``.

    ``pairs`` (vendor_assertion_id, behaviour) says which vendor evaluation measures which of our
    behaviours (a ``vendor.evaluation`` assertion's ``same_behaviour_as``). A vendor row is paired with
    our result of that behaviour on the same case run, when we have one (an evaluator of :data:`OURS`).
    """
    vendor = atoms.join(pairs.lazy(), left_on="assertion_id", right_on="vendor_assertion_id").select(
        "run_id", "case_run_id", "case_key", "behaviour", vendor_key="assertion_key", vendor_evaluator="evaluator",
        vendor_met="met", vendor_reason="reason",
    )
    ours = atoms.filter(pl.col("evaluator").str.starts_with(OURS)).select(
        "case_run_id", behaviour="assertion_key", our_evaluator="evaluator", our_met="met", our_reason="reason",
    )
    both = pl.col("our_met").is_not_null() & pl.col("vendor_met").is_not_null()
    return vendor.join(ours, on=["case_run_id", "behaviour"], how="inner").with_columns(
        agree=pl.when(both).then(pl.col("our_met") == pl.col("vendor_met"))
    )


def run_costs(case_runs: pl.LazyFrame, atoms: pl.LazyFrame) -> pl.LazyFrame:
    """Per run: case runs and the runner's reported cost (``case_runs``: run_id, cost_usd), and our judge's
    spend over **every** outcome's ``atoms``, each judgement counted once.

    A result carried forward, or served from the judge's cache, keeps the figures of the request that
    produced it; so a judgement is one distinct (case run, assertion version, evaluator version, spend),
    whichever outcomes hold it.
    """
    cost = pl.col("cost_usd")
    runner = case_runs.group_by("run_id").agg(
        pl.len().cast(pl.Int64).alias("case_runs"),
        pl.when(cost.is_not_null().any()).then(cost.sum()).alias("runner_cost_usd"),
    )
    spend = ("judge_tokens_in", "judge_tokens_out", "judge_cost_usd")
    judged = (
        atoms.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in spend))
        .select("run_id", "case_run_id", "assertion_id", "evaluator", "evaluator_version", *spend).unique()
        .group_by("run_id").agg(
            pl.len().cast(pl.Int64).alias("judge_requests"),
            pl.col("judge_tokens_in").sum().cast(pl.Int64), pl.col("judge_tokens_out").sum().cast(pl.Int64),
            pl.when(pl.col("judge_cost_usd").is_not_null().any()).then(pl.col("judge_cost_usd").sum())
            .alias("judge_cost_usd"),
        )
    )
    zero = {"judge_requests": 0, "judge_tokens_in": 0, "judge_tokens_out": 0}
    both = pl.col("runner_cost_usd").is_not_null() | pl.col("judge_cost_usd").is_not_null()
    return runner.join(judged, on="run_id", how="left").with_columns(
        *(pl.col(c).fill_null(v) for c, v in zero.items()),
    ).with_columns(
        total_cost_usd=pl.when(both).then(pl.col("runner_cost_usd").fill_null(0) + pl.col("judge_cost_usd").fill_null(0))
    )
