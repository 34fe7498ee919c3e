"""``vendor.evaluation``: the runner's own evaluation, read as met + value; its evaluator is the vendor's.

Exactly one evaluation named ``p.name`` must exist for the case run. A runner that reported none does
not produce that evaluation: met false with the evaluator ``assay:unsupported``, exactly as a runner that
does not support the mechanism at all, so a criteria's ``applies: capable`` leaves both out alike. A
vendor's error or "unknown" is never a failure (met null). A score maps onto met only through ``pass_score`` (on the vendor's own
scale). The value is the evaluation's reading on ours, as :func:`assay.core.evidence.vendor_reading`
defines it: the score normalised to 0–1 on its declared scale, else 1.0 (pass) or 0.0 (fail), else
null. Version 2: version 1 copied the raw score into value, unscaled. Version 3: version 2 left a missing
evaluation undetermined.
"""

from __future__ import annotations

import polars as pl

from assay.core.criteria import UNSUPPORTED
from assay.core.mechanisms import VendorEvaluation

from .evidence import Evidence
from .helpers import either, number, words
from .registry import mechanism


@mechanism("vendor.evaluation", version=3)
def vendor_evaluation(evidence: Evidence, rows: pl.Series, p: VendorEvaluation, judge: str | None) -> pl.DataFrame:
    """Map the runner's own evaluation named ``p.name`` onto met + value."""
    named = (
        evidence.evaluations.filter(pl.col("name") == p.name)
        .group_by("_row")
        .agg(pl.len().alias("n"), pl.col("verdict", "score", "scale_min", "scale_max", "evaluator", "rationale").first())
    )
    found = rows.to_frame("_row").join(named, on="_row", how="left", maintain_order="left").with_columns(
        runner=evidence.case_runs["runner"].gather(rows).fill_null(""))
    n, verdict, score = pl.col("n"), pl.col("verdict"), pl.col("score").fill_nan(None)
    rationale = either(pl.col("rationale"), "no rationale given")
    single = (n == 1).fill_null(False)
    undecided = verdict.is_not_null() & ~verdict.is_in(["pass", "fail"])  # error, unknown or unrecognised
    met = pl.when(n.is_null()).then(False).when(~single | undecided).then(None)
    if p.pass_score is not None:
        met = met.when(score.is_not_null()).then(score >= p.pass_score)
    met = met.when(verdict == "pass").then(True).when(verdict == "fail").then(False).otherwise(None)
    below = f"the vendor's score is below pass_score {number(p.pass_score)}" if p.pass_score is not None else ""
    reason = (
        pl.when(n.is_null()).then(words('runner "', pl.col("runner"), f'" reported no evaluation named "{p.name}": '
                                          "it does not produce that evaluation"))
        .when(n > 1).then(words("the runner reported ", n, f' evaluations named "{p.name}"; expected one'))
        .when(verdict == "error").then(words("the vendor reported an error: ", rationale))
        .when(verdict == "unknown").then(pl.lit("the vendor could not reach a verdict (unknown)"))
        .when(undecided).then(words('the vendor reported an unrecognised verdict "', verdict, '"'))
        .when(met.is_null() & score.is_not_null())
        .then(pl.lit("the vendor gave a score but no verdict: set pass_score on the assertion to map the score onto met"))
        .when(met.is_null()).then(pl.lit("the vendor reported neither a verdict nor a score"))
        .when(~met & score.is_not_null() & pl.lit(p.pass_score is not None)).then(pl.lit(below))
        .when(~met).then(words("the vendor judged it failed: ", rationale))
    )
    low, high = pl.col("scale_min"), pl.col("scale_max")
    on_scale = score.is_not_null() & low.is_not_null() & high.is_not_null() & (high > low)
    value = (
        pl.when(~single).then(None).when(on_scale).then((score - low) / (high - low))
        .when(verdict == "pass").then(1.0).when(verdict == "fail").then(0.0)
    )
    return found.select(
        met=met, value=value, reason=reason,
        evaluator=pl.when(single).then(pl.col("evaluator")).when(n.is_null()).then(pl.lit(UNSUPPORTED))
        .otherwise(pl.lit("assay:vendor")),
    )


__all__ = ["vendor_evaluation"]
