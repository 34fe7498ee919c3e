"""``rubric``: judged by our judge model from the transcript, later, by the judging flow.

Deterministic judging only marks a rubric assertion: awaiting the configured judge (evaluator
``assay:judge:<model>``), or impossible because no judge is configured (``assay:judge``).
"""

from __future__ import annotations

import polars as pl

from assay.core.mechanisms import Rubric

from .evidence import Evidence
from .registry import mechanism

NO_JUDGE = "no judge configured: set ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL"
"""The reason of a rubric result when no judge model is configured."""
AWAITING_JUDGE = "awaiting the judge"
"""The reason of a rubric result left for the configured judge."""


def judge_evaluator(judge: str | None) -> str:
    """The evaluator a rubric result gets from the judge ``judge`` (``assay:judge`` when none is configured)."""
    return f"assay:judge:{judge}" if judge else "assay:judge"


@mechanism("rubric", version=1)
def rubric(evidence: Evidence, rows: pl.Series, p: Rubric, judge: str | None) -> pl.DataFrame:
    """Marked as waiting for the judge (or as impossible without one): met and value null."""
    reason = NO_JUDGE if judge is None else AWAITING_JUDGE
    evaluator = judge_evaluator(judge)
    n = rows.len()
    return pl.DataFrame({
        "met": pl.repeat(None, n, dtype=pl.Boolean, eager=True), "value": pl.repeat(None, n, dtype=pl.Float64, eager=True),
        "reason": pl.repeat(reason, n, dtype=pl.String, eager=True),
        "evaluator": pl.repeat(evaluator, n, dtype=pl.String, eager=True),
    })


__all__ = ["AWAITING_JUDGE", "NO_JUDGE", "judge_evaluator", "rubric"]
