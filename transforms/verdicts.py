"""Verdicts from result atoms: a criteria spec applied to stored ``assertion_results`` rows (product §2).

This is the re-score tier: no judge, no runner, only arithmetic over atoms. Everything here is
lazy and vectorised (group_by/agg expressions built once from the spec, never a loop over runs).

Rules, per run (and per case run for the breakdown), over the **latest outcome** of each case run:

- *counted* keys are the required keys and the keys of the threshold groups, minus the ignored keys
  (an ignored key is never counted, even when a group also names it). Keys the spec does not name
  are advisory and never counted;
- *undetermined* results are counted results whose ``met`` is null (the case run did not execute, a
  vendor error). When the spec's ``allow_undetermined`` allows them -- at most ``count`` of them, or
  at most ``ratio`` of the unit's counted results, undetermined ones included -- they are
  **excluded**: not counted, in no threshold ratio's denominator, and the reason says so (how many
  case runs were counted of how many, how many results were excluded, and the smallest non-empty
  reason text among them). Without an allowance (or over it) nothing is excluded;
- **error** when any counted result is undetermined and not excluded, or when a required key, or
  every key of a threshold group, has no result at all in the run, or has results in the unit
  (run or case run) that were all excluded ("no determined result": nothing decides it) -- never an
  empty set that passes;
- else **fail** when any determined result of a required key is not met, or a threshold group's
  met-ratio (met results / its determined results, plus any undetermined ones not excluded) is below
  its ``min`` (``min`` is inclusive);
- else **pass** (``"no counted results"`` when the spec counts nothing).

A spec whose ``applies`` says a key counts only where it can be evaluated (``capable``) leaves out that
key's results from runners that cannot evaluate it (evaluator ``assay:unsupported``): they are in no count
and no ratio, the reason ends with how many were not counted and why ("2 results not counted: `tool.called`
is not evaluated by hamming"), and a key whose results were all left out does not apply to the unit. A unit
whose every counted result was left out is **error** ("no counted result decides it"), never ``pass``; a
required key with no result at all is still **error**.

With an allowance, every reason ends with that coverage clause; without one, reasons read as they
always did. The allowance applies to the run's results for the run verdict and to each case run's own
results in the breakdown. It does not reach cases that have no case run at all, nor runs that ended
``timed_out`` or ``error``: :func:`with_coverage` keeps those ``error`` whatever the allowance, since
what is missing there was never judged, not judged undetermined.

A key with results in some case runs of a run but not in another (a case-level assertion) does not
apply to that other case run: in the per-case breakdown it neither fails nor errors there.

How it is computed: the atoms are summarised once per outcome (a group_by with one integer
column per required key and per group), the latest outcome of each case run is chosen among those
summaries, and the run (or case run) is the sum of its chosen summaries. ``outcome_id`` identifies
an outcome (it is the outcomes table's key), so it is the only grouping key over the atoms.
"""

from __future__ import annotations

import polars as pl

from assay.core.criteria import UNSUPPORTED, CriteriaSpec
from assay.core.errors import EvidenceError

from .verdict_rules import GROUP_DTYPE, VERDICT_COLUMNS, Plan, count_columns, plan, presence_columns, verdict_exprs

__all__ = [
    "GROUP_DTYPE", "MAX_EVALUATORS", "VERDICT_COLUMNS", "case_verdicts", "flips", "latest", "latest_outcomes",
    "run_verdicts",
]

_LATEST_COLUMNS = ("case_run_id", "outcome_id", "judged_at")
_VERDICT_INPUT = ("run_id", "case_run_id", "case_key", "outcome_id", "judged_at", "assertion_key", "met", "reason",
                 "evaluator")

MAX_EVALUATORS = 128
"""How many distinct evaluators behind counted results :func:`run_verdicts` tells apart in one call
(each outcome's set is a 128-bit mask); more raises :class:`EvidenceError` rather than list too few."""

def _require(atoms: pl.LazyFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in atoms.collect_schema().names()]
    if missing:
        raise EvidenceError(f"{what}: atoms lack column(s) {missing}; pass assertion_results rows")


def latest_outcomes(outcomes: pl.LazyFrame) -> pl.LazyFrame:
    """The rows of ``outcomes`` (one per outcome: outcome_id, case_run_id, judged_at, ...) that are each
    case run's latest: greatest judged_at, then greatest outcome_id.

    This is the one Polars definition of "latest outcome"; its SQL form is the ``latest_outcomes`` view
    of :func:`assay.connect` (:mod:`assay.storage.views`), and a test keeps the two in agreement.
    """
    cr = "case_run_id"
    # cached: both branches below read it, and recomputing the per-outcome summaries doubles the cost
    flagged = outcomes.with_columns(pl.col(cr).is_unique().alias("_only")).cache()
    several = flagged.filter(~pl.col("_only"))  # the few re-judged case runs
    several = several.filter(pl.col("judged_at") == pl.col("judged_at").max().over(cr)).filter(
        pl.col("outcome_id") == pl.col("outcome_id").max().over(cr)
    )
    return pl.concat([flagged.filter(pl.col("_only")), several]).drop("_only")


def latest(atoms: pl.LazyFrame) -> pl.LazyFrame:
    """The atoms of each case run's latest outcome, all columns kept.

    The latest outcome of a case run is the one judged last (its atoms' greatest ``judged_at``);
    outcomes judged at the same instant are ordered by ``outcome_id``, the greatest winning, so the
    choice never depends on file or row order (:func:`latest_outcomes`). The SQL form is the
    ``current_results`` of :func:`assay.connect`. Only outcomes with atoms are seen here.
    """
    _require(atoms, _LATEST_COLUMNS, "latest")
    outcomes = atoms.group_by("outcome_id").agg(pl.col("case_run_id").first(), pl.col("judged_at").max())
    return atoms.join(latest_outcomes(outcomes).select("outcome_id"), on="outcome_id", how="semi")


# --- the atoms, as the count columns of :mod:`.verdict_rules` ---------------------------------


def _current_outcomes(atoms: pl.LazyFrame, p: Plan, carry: list[str], evaluators: pl.Expr) -> pl.LazyFrame:
    """One row per case run -- its latest outcome -- with the counts the spec needs.

    Atoms are summarised per outcome first and the latest outcome of each case run is chosen among
    those summaries (the rule of :func:`latest`): far cheaper than filtering the atoms themselves.
    ``carry`` are columns constant within a case run, taken from its first atom; ``evaluators`` is
    the aggregation that records the outcome's evaluators of counted results.
    """
    key, met, reason = _applicable_key(p), pl.col("met").cast(pl.Boolean), pl.col("reason")
    counted = key.is_in(p.counted).fill_null(False)
    undetermined = counted & met.is_null()
    aggs = [
        *(pl.col(c).first() for c in ["case_run_id", *carry]),
        pl.col("judged_at").max(),
        counted.sum().alias("counted"),
        (counted & met).sum().alias("met"),
        undetermined.sum().alias("nulls"),
        reason.filter(undetermined & (reason.str.len_bytes() > 0)).min().alias("_null_reason"),
        evaluators.alias("evaluators"),
    ]
    for r, k in enumerate(p.required):
        aggs += [(key == k).sum().alias(f"_r{r}_n"), ((key == k) & ~met).sum().alias(f"_r{r}_not_met"),
                 ((key == k) & met.is_null()).sum().alias(f"_r{r}_nulls")]
    for g, keys, _ in p.groups:
        aggs += [key.is_in(keys).sum().alias(f"_g{g}_n"), (key.is_in(keys) & met).sum().alias(f"_g{g}_met"),
                 (key.is_in(keys) & met.is_null()).sum().alias(f"_g{g}_nulls")]
    if p.capable:
        raw = pl.col("assertion_key")
        aggs += _not_applicable(p)
        aggs += [(raw == k).sum().alias(f"_r{r}_seen") for r, k in enumerate(p.required)]
        aggs += [raw.is_in(keys).sum().alias(f"_g{g}_seen") for g, keys, _ in p.groups]
    per_outcome = atoms.group_by("outcome_id").agg(aggs)
    return latest_outcomes(per_outcome).with_columns(pl.col(count_columns(p, units=False)).cast(pl.Int64))


def _unable(p: Plan) -> pl.Expr:
    """True for a result of a key that counts only where its runner can evaluate it, from a runner that cannot."""
    return pl.col("assertion_key").is_in(p.capable) & (pl.col("evaluator") == UNSUPPORTED)


def _applicable_key(p: Plan) -> pl.Expr:
    """The assertion key, null where the result does not apply under the spec's ``applies`` (never counted)."""
    key = pl.col("assertion_key")
    return pl.when(~_unable(p)).then(key) if p.capable else key


def _not_applicable(p: Plan) -> list[pl.Expr]:
    """Per outcome: how many results do not apply (``_na``) and why, one note per (key, runner) (``_na_notes``)."""
    unable = _unable(p)
    runner = pl.col("reason").str.extract(r'runner "([^"]+)"', 1).fill_null("its runner")
    note = pl.format("`{}` is not evaluated by {}", pl.col("assertion_key"), runner)
    return [unable.sum().cast(pl.Int64).alias("_na"), note.filter(unable).unique().sort().alias("_na_notes")]


def _counted_evaluator(p: Plan) -> pl.Expr:
    return pl.when(_applicable_key(p).is_in(p.counted)).then(pl.col("evaluator"))


def _evaluator_masks(p: Plan, categories: pl.Categories) -> pl.Expr:
    """Per outcome, its counted results' evaluators as bits of a UInt128 (bit i: the i-th category)."""
    code = _counted_evaluator(p).cast(pl.Categorical(categories)).to_physical()
    return pl.when(code < MAX_EVALUATORS).then(pl.lit(2, dtype=pl.UInt128).pow(code)).bitwise_or().fill_null(0)


def _evaluator_lists(per_run: pl.LazyFrame, categories: pl.Categories) -> pl.LazyFrame:
    """``per_run``'s evaluator masks decoded to sorted lists of names (vectorised, each distinct mask once)."""

    def names(codes: pl.Series) -> pl.Series:
        known = categories.to_series()
        if known.len() > MAX_EVALUATORS:
            raise EvidenceError(
                f"run_verdicts: {known.len()} distinct evaluators behind counted results, more than the "
                f"{MAX_EVALUATORS} one call tells apart; re-score fewer runs per call"
            )
        return known.gather(codes)

    code, mask = pl.col("_code"), pl.col("evaluators")
    decoded = (  # each distinct set once: runs mostly share a handful of evaluator sets
        per_run.select(mask).unique()
        .with_columns(pl.int_ranges(0, MAX_EVALUATORS, dtype=pl.UInt32).alias("_code"))
        .explode("_code")
        .filter((mask & pl.lit(2, dtype=pl.UInt128).pow(code)) != 0)
        .group_by("evaluators")
        .agg(code.map_batches(names, return_dtype=pl.String, is_elementwise=True).sort().alias("_names"))
    )
    return per_run.join(decoded, on="evaluators", how="left").drop("evaluators").rename({"_names": "evaluators"})


def run_verdicts(atoms: pl.LazyFrame, spec: CriteriaSpec) -> pl.LazyFrame:
    """One verdict row per run under ``spec``: ``run_id`` then :data:`VERDICT_COLUMNS`.

    ``atoms`` are ``assertion_results`` rows, possibly of many runs, outcomes and keys: this
    function applies :func:`latest`'s rule itself, so pass every outcome. Every run with an atom
    gets a row, even when none of its atoms is counted.
    """
    _require(atoms, _VERDICT_INPUT, "run_verdicts")
    p = plan(spec)
    categories = pl.Categories.random()  # this call's own evaluator codes, 0, 1, 2, ...
    current = _current_outcomes(atoms, p, ["run_id"], _evaluator_masks(p, categories))
    units = [(pl.col(f"_r{r}_{c}") > 0).sum().cast(pl.Int64).alias(f"_r{r}_{u}")
             for r in range(len(p.required)) for c, u in (("n", "units"), ("not_met", "failed_units"))]
    per_run = current.group_by("run_id").agg(
        pl.col(count_columns(p, units=False)).sum(), *units, pl.col("evaluators").bitwise_or(),
        pl.col("_null_reason").min(), pl.len().cast(pl.Int64).alias("case_runs"),
        (pl.col("nulls") > 0).sum().cast(pl.Int64).alias("_null_units"),
        *((pl.col("_na_notes").explode().drop_nulls().unique().sort(),) if p.capable else ()),
    )
    return (
        _evaluator_lists(per_run, categories)
        .with_columns(pl.col(c).alias(f"_run{c}") for c in presence_columns(p))
        .select("run_id", *verdict_exprs(p, run_level=True))
        .sort("run_id")
    )


def case_verdicts(atoms: pl.LazyFrame, spec: CriteriaSpec) -> pl.LazyFrame:
    """The same rules per case run: one row per (run_id, case_run_id, case_key), then :data:`VERDICT_COLUMNS`.

    Applies :func:`latest`'s rule itself. A key absent from the whole run is an error for each of
    its case runs (as for the run); a key absent from one case run but present in others does not
    apply there. The allowance of undetermined results applies to each case run's own results.
    """
    _require(atoms, _VERDICT_INPUT, "case_verdicts")
    p = plan(spec)
    by = ["run_id", "case_run_id", "case_key"]
    evaluators = _counted_evaluator(p).drop_nulls().unique()
    current = _current_outcomes(atoms, p, ["run_id", "case_key"], evaluators).with_columns(
        case_runs=pl.lit(1, dtype=pl.Int64), _null_units=(pl.col("nulls") > 0).cast(pl.Int64))
    presence = presence_columns(p)
    run_presence = current.group_by("run_id").agg(pl.col(c).sum().alias(f"_run{c}") for c in presence)
    return (
        current.join(run_presence, on="run_id", how="left")
        .with_columns(pl.col("evaluators").list.sort())
        .select(*by, *verdict_exprs(p, run_level=False))
        .sort(by)
    )


PARTIAL_STATUSES = ("timed_out", "error")
"""A run that ended so never reported all its evidence: its verdict under any criteria that counts a key is
``error``, never ``pass`` (nor ``fail``: what is missing might have decided it)."""


def with_coverage(verdicts: pl.DataFrame, runs: pl.DataFrame, spec: CriteriaSpec) -> pl.DataFrame:
    """``verdicts`` (``run_id`` + :data:`VERDICT_COLUMNS`) with each run's coverage applied, one row per run of ``runs``.

    ``runs`` holds ``run_id``, ``status``, ``status_reason``, ``case_count`` (cases in the run's snapshot) and
    ``case_runs`` (case runs stored). A case with no case run counts as undetermined for every counted key,
    so when ``spec`` counts anything:

    - a run that ended ``timed_out`` or ``error`` is partial: ``error``, the reason saying how it ended and
      how much evidence it left;
    - a run with fewer case runs than cases is ``error``, saying how many of how many;
    - a partial run with no verdict row (nothing judged) is listed as ``error`` instead of dropped; a run
      still under way with none is "not judged yet" (verdict null).
    """
    counts = bool(set(spec.required) | {k for g in spec.threshold for k in g.keys})
    status, reason = pl.col("status"), pl.col("status_reason").fill_null("no reason given")
    cases, stored = pl.col("case_count"), pl.col("_stored")
    partial = (
        pl.when(status.is_in(PARTIAL_STATUSES))
        .then(pl.format("partial: the run ended {} ({}) with {} case run(s) stored for {} case(s); "
                        "a partial run is never pass", status, reason, stored, cases))
        .when(status.is_in(["released", "completed"]) & (stored < cases))  # the runner said it was done
        .then(pl.format("partial: {} of {} case(s) have no case run; each counts as undetermined", cases - stored, cases))
    )
    joined = runs.select("run_id", "status", "status_reason", "case_count", _stored="case_runs").join(
        verdicts, on="run_id", how="left")  # the verdict's own case_runs are those judged
    nothing = pl.col("verdict").is_null()
    ended = status.is_in(PARTIAL_STATUSES)
    why = partial if counts else pl.lit(None, dtype=pl.String)
    flagged = pl.col("_partial").is_not_null()
    out = joined.with_columns(_partial=why).with_columns(
        verdict=pl.when(flagged | (nothing & ended)).then(pl.lit("error")).otherwise(pl.col("verdict")),
        reason=pl.when(flagged & nothing).then(pl.col("_partial"))
        .when(flagged).then(pl.format("{}; {}", pl.col("_partial"), pl.col("reason")))
        .when(nothing & ended).then(pl.format("nothing was judged: the run ended {} ({})", status, reason))
        .when(nothing).then(pl.lit("not judged yet"))
        .otherwise(pl.col("reason")),
    )
    return out.select(verdicts.columns).sort("run_id")


def flips(verdicts: pl.DataFrame, stamped: pl.DataFrame) -> pl.DataFrame:
    """Runs whose verdict here differs from the verdict stamped on them (``stamped``: run_id, stamped).

    Returns ``run_id, stamped, verdict, reason`` for each run present in both frames whose verdicts
    differ; a run with no stamped verdict (null) is not a flip.
    """
    inputs = ((verdicts, ("run_id", "verdict"), "verdicts"), (stamped, ("run_id", "stamped"), "stamped"))
    for frame, cols, what in inputs:
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise EvidenceError(f"flips: {what} lacks column(s) {missing}")
    keep = [c for c in ("run_id", "verdict", "reason") if c in verdicts.columns]
    return (
        stamped.select("run_id", "stamped")
        .join(verdicts.select(keep), on="run_id", how="inner")
        .filter(pl.col("stamped") != pl.col("verdict"))
        .sort("run_id")
    )
