"""Agreement rate and Cohen's kappa of a judge against labels, checked against hand-computed values."""

from __future__ import annotations

import polars as pl
import pytest

from assay.transforms.agreement import agreement


def items(table: dict[tuple[bool, bool | None], int]) -> pl.DataFrame:
    """Labelled items from a contingency table: (expected, met) -> how many."""
    rows = [(e, m) for (e, m), n in table.items() for _ in range(n)]
    return pl.DataFrame({"expected": [e for e, _ in rows], "met": [m for _, m in rows]},
                        schema={"expected": pl.Boolean, "met": pl.Boolean})


def test_the_classic_two_by_two_example() -> None:
    # 50 items: both pass 20, label pass / judge fail 5, label fail / judge pass 10, both fail 15.
    # p_o = 35/50 = 0.7; p_e = (25*30 + 25*20) / 50^2 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    got = agreement(items({(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15}))
    assert (got.items, got.undetermined) == (50, 0)
    assert (got.both_pass, got.label_pass_judge_fail, got.label_fail_judge_pass, got.both_fail) == (20, 5, 10, 15)
    assert got.agreement == pytest.approx(0.7) and got.kappa == pytest.approx(0.4)


def test_undetermined_items_count_in_neither_figure() -> None:
    table = {(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15}
    got = agreement(items({**table, (True, None): 3, (False, None): 4}))
    assert (got.items, got.undetermined) == (57, 7)
    assert got.agreement == pytest.approx(0.7) and got.kappa == pytest.approx(0.4)


def test_perfect_and_chance_level_agreement() -> None:
    perfect = agreement(items({(True, True): 7, (False, False): 3}))
    assert perfect.agreement == 1.0 and perfect.kappa == pytest.approx(1.0)
    # The judge says pass to everything: agrees on the 60% labelled pass, kappa 0 (no better than chance).
    always = agreement(items({(True, True): 6, (False, True): 4}))
    assert always.agreement == pytest.approx(0.6) and always.kappa == pytest.approx(0.0)
    # Worse than chance: always the opposite.
    opposite = agreement(items({(True, False): 5, (False, True): 5}))
    assert opposite.agreement == 0.0 and opposite.kappa == pytest.approx(-1.0)


def test_kappa_is_undefined_when_both_sides_use_one_label_and_nothing_decided_gives_none() -> None:
    one_label = agreement(items({(True, True): 4}))
    assert one_label.agreement == 1.0 and one_label.kappa is None
    nothing = agreement(items({(True, None): 2}))
    assert (nothing.items, nothing.undetermined, nothing.agreement, nothing.kappa) == (2, 2, None, None)


def test_a_missing_label_is_refused() -> None:
    with pytest.raises(ValueError, match="expected verdict"):
        agreement(pl.DataFrame({"expected": [True, None], "met": [True, True]}))
