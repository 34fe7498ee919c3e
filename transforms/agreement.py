"""How well our judge agrees with people: agreement rate and Cohen's kappa over a labelled set.

Each item has a person's label (``expected``: True for pass, False for fail) and the judge's verdict
(``met``: True, False, or null when the judge gave none). Both figures are binary, pass/fail:

- **agreement** = items where the judge and the label agree / items the judge decided;
- **Cohen's kappa** = (p_o - p_e) / (1 - p_e) over the same items, where p_o is that agreement and p_e
  the agreement expected by chance from each side's pass rate. Kappa is undefined (None) when
  p_e is 1 (both sides gave every item the same single label).

**Undetermined items** (``met`` null: the judge errored or answered something unreadable) count in
neither figure; they are reported as ``undetermined`` next to them, so a judge that gives up on the
hard items shows up as low coverage, never as a silently better score.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["Agreement", "agreement"]


@dataclass(frozen=True)
class Agreement:
    """Agreement of a judge with labels, and the 2x2 table it came from."""

    items: int
    """Labelled items in all."""
    undetermined: int
    """Items the judge gave no verdict on (counted in neither figure)."""
    both_pass: int
    """Labelled pass, judged pass."""
    label_pass_judge_fail: int
    """Labelled pass, judged fail."""
    label_fail_judge_pass: int
    """Labelled fail, judged pass."""
    both_fail: int
    """Labelled fail, judged fail."""
    agreement: float | None
    """Share of decided items where judge and label agree; None when the judge decided none."""
    kappa: float | None
    """Cohen's kappa over the decided items; None when undefined."""

    def to_dict(self) -> dict[str, float | int | None]:
        return dict(self.__dict__)


def agreement(items: pl.DataFrame) -> Agreement:
    """The figures for ``items``: boolean columns ``expected`` (the label, not null) and ``met`` (the judge)."""
    if items["expected"].null_count():
        raise ValueError("every labelled item needs an expected verdict (true for pass, false for fail)")
    e, m = pl.col("expected"), pl.col("met")
    counts = items.select(
        items=pl.len(), undetermined=m.is_null().sum(),
        a=(e & m).sum(), b=(e & ~m).sum(), c=(~e & m).sum(), d=(~e & ~m).sum(),
    ).row(0, named=True)
    a, b, c, d = (int(counts[k] or 0) for k in "abcd")
    n = a + b + c + d
    observed = (a + d) / n if n else None
    chance = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2 if n else None
    kappa = None if observed is None or chance is None or chance == 1 else (observed - chance) / (1 - chance)
    return Agreement(int(counts["items"]), int(counts["undetermined"]), a, b, c, d, observed, kappa)
