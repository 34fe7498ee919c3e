"""The carry-forward policy: what a judging pass evaluates afresh, what it carries, what gets an outcome.

Pure functions over frames; no store is read or written here. A judging pass looks at every
(case run, current assertion version) pair that applies now -- an *assignment* -- next to the stored
result of the same pair in the case run's latest outcome, and puts each pair in one of three piles:

- **fresh**: evaluated now. A pair with no stored result; a stored result its evaluator would now give
  differently (see :func:`stale`); or any pair under ``force``.
- **carried**: the stored result is copied into the new outcome unchanged (evidence is write-once, so
  the same evaluator over the same evidence says the same thing).
- **left out**: neither -- the pass is limited to some keys (``keys``) or to new pairs
  (``new_versions_only``), and the pair has no stored result to carry.

A case run then gets a new outcome only when the pass has something new to say about it: a fresh
result, or a different set of assertions than its latest outcome (:func:`new_outcomes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl

from .mechanisms.rubric import AWAITING_JUDGE, judge_evaluator

__all__ = ["JUDGE_SPEND", "STORED", "PassPlan", "new_outcomes", "pass_results", "plan_pass", "stale"]

JUDGE_SPEND: dict[str, pl.DataType] = {
    "judge_tokens_in": pl.Int32(), "judge_tokens_out": pl.Int32(), "judge_cost_usd": pl.Float64(),
}
"""What our judge spent on a result (null for every other evaluator)."""

STORED = ("met", "value", "reason", "evaluator", "evaluator_version", *JUDGE_SPEND)
"""The columns of a stored result that a carried pair keeps (a judgement keeps what it cost)."""


def stale(versions: Mapping[str, int], judge: str | None) -> pl.Expr:
    """Over stored results (with their ``mechanism``): would their evaluator now say something else?

    - the mechanism's evaluator has another version than the one that gave the result (it was fixed);
    - the result came from our judge, and the judge has changed, or the result was still waiting for it,
      or the configured judge gave no verdict (an error is asked again, never carried as an answer).
    """
    current = pl.col("mechanism").replace_strict(dict(versions), default=None, return_dtype=pl.Int32)
    evaluator = pl.col("evaluator")
    unanswered = pl.lit(judge is not None) & pl.col("met").is_null()
    rejudge = evaluator.str.starts_with("assay:judge") & (
        (evaluator != judge_evaluator(judge)) | (pl.col("reason") == AWAITING_JUDGE).fill_null(False) | unanswered
    )
    return (pl.col("evaluator_version") != current).fill_null(True) | rejudge


@dataclass(frozen=True)
class PassPlan:
    """What one judging pass does with each assignment."""

    fresh: pl.DataFrame
    """Assignments to evaluate now (the assignments' own columns)."""
    carried: pl.DataFrame
    """Stored results carried into the new outcome: assignment columns plus :data:`STORED`."""
    left_out: int
    """Assignments neither evaluated nor carried (outside ``keys``, or not new, with no stored result)."""


def plan_pass(
    assignments: pl.DataFrame,
    previous: pl.DataFrame,
    *,
    versions: Mapping[str, int],
    judge: str | None,
    keys: Iterable[str] | None = None,
    new_versions_only: bool = False,
    force: bool = False,
) -> PassPlan:
    """Split ``assignments`` into fresh, carried and left out, given ``previous`` results.

    ``assignments`` has one row per (case run, assertion version): ``case_run_id``, ``assertion_id``,
    ``assertion_key``, ``mechanism`` and whatever else the evaluator needs (``params``, ...).
    ``previous`` holds the stored results of each case run's latest outcome: ``case_run_id``,
    ``assertion_id`` and :data:`STORED`. ``versions`` maps each mechanism to its evaluator's current
    version; ``judge`` is the judge model configured now (None: no judge). ``keys`` limits fresh
    evaluation to those assertion keys; ``new_versions_only`` to pairs with no stored result;
    ``force`` re-evaluates even pairs whose stored result still stands.
    """
    columns = assignments.columns
    marked = assignments.join(
        previous.select("case_run_id", "assertion_id", *STORED), on=["case_run_id", "assertion_id"], how="left",
        maintain_order="left",
    )
    stored = pl.col("evaluator").is_not_null()
    chosen = pl.lit(True) if keys is None else pl.col("assertion_key").is_in(sorted(set(keys)))
    if force:
        fresh = chosen
    elif new_versions_only:
        fresh = chosen & ~stored
    else:
        fresh = chosen & (~stored | stale(versions, judge))
    marked = marked.with_columns(_fresh=fresh, _carried=~fresh & stored)
    return PassPlan(
        fresh=marked.filter("_fresh").select(columns),
        carried=marked.filter("_carried").drop("_fresh", "_carried"),
        left_out=marked.filter(~pl.col("_fresh") & ~pl.col("_carried")).height,
    )


def pass_results(evaluated: pl.DataFrame, carried: pl.DataFrame, versions: Mapping[str, int]) -> pl.DataFrame:
    """A pass's results: the ``evaluated`` ones stamped with their evaluator's version, then the carried ones.

    ``fresh`` (boolean) says which is which; columns are ``carried``'s. ``evaluated`` results without
    :data:`JUDGE_SPEND` columns spent nothing on our judge (null).
    """
    stamped = evaluated.with_columns(
        evaluator_version=pl.col("mechanism").replace_strict(dict(versions), return_dtype=pl.Int32),
        *(pl.lit(None, dtype).alias(name) for name, dtype in JUDGE_SPEND.items() if name not in evaluated.columns),
    )
    return pl.concat([
        stamped.select(carried.columns).with_columns(fresh=pl.lit(True)),
        carried.with_columns(fresh=pl.lit(False)),
    ])


def new_outcomes(case_runs: pl.DataFrame, results: pl.DataFrame, previous: pl.DataFrame) -> pl.DataFrame:
    """The case runs that get a new outcome from a pass, with its counts.

    ``case_runs`` has ``case_run_id`` and whatever key columns the outcome needs (run, case, team,
    date); ``results`` is the pass's results with a boolean ``fresh`` column; ``previous`` as in
    :func:`plan_pass`. A case run whose results were all carried, over the same set of assertions as
    its latest outcome, has nothing new to say and gets none; nor does one with no result in this pass
    (an empty outcome would say nothing, and "latest outcome" is read from atoms). Returns ``case_runs``' columns plus
    ``evaluated`` and ``carried`` (Int64).
    """
    per_run = results.group_by("case_run_id").agg(
        evaluated=pl.col("fresh").sum().cast(pl.Int64),
        carried=(~pl.col("fresh")).sum().cast(pl.Int64),
        _ids=pl.col("assertion_id").sort(),
    )
    before = previous.group_by("case_run_id").agg(_before=pl.col("assertion_id").sort())
    joined = (
        case_runs.join(per_run, on="case_run_id", how="left")
        .join(before, on="case_run_id", how="left")
        .with_columns(pl.col("evaluated", "carried").fill_null(0))
    )
    empty = pl.col("evaluated") + pl.col("carried") == 0
    unchanged = (
        (pl.col("evaluated") == 0)
        & (pl.col("_ids").fill_null([]) == pl.col("_before").fill_null([]))
        & pl.col("_before").is_not_null()
    )
    return joined.filter(~(empty | unchanged)).drop("_ids", "_before")
