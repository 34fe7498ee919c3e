"""The shop's pricing rules."""

from decimal import Decimal

import pytest

from pricing import apply_discount, order_total


def test_half_a_cent_rounds_up() -> None:
    assert apply_discount(Decimal("10.05"), 50) == Decimal("5.03")


def test_below_half_a_cent_rounds_down() -> None:
    assert apply_discount(Decimal("19.99"), 15) == Decimal("16.99")


def test_no_discount_keeps_the_price() -> None:
    assert apply_discount(Decimal("42.00"), 0) == Decimal("42.00")


def test_order_total_discounts_each_line() -> None:
    assert order_total([(Decimal("2.50"), 4), (Decimal("1.99"), 1)], percent=10) == Decimal("10.79")


def test_a_discount_over_100_percent_is_refused() -> None:
    with pytest.raises(ValueError):
        apply_discount(Decimal("5.00"), 120)
