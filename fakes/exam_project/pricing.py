"""Prices for the shop: discounts and order totals, in exact cents."""

import decimal
from decimal import Decimal

CENT = Decimal("0.01")


def apply_discount(price: Decimal, percent: int) -> Decimal:
    """The price after a ``percent`` discount, rounded to the cent, half a cent rounding up."""
    if not 0 <= percent <= 100:
        raise ValueError(f"a discount is between 0 and 100 percent, not {percent}")
    discounted = price * (100 - percent) / 100
    return discounted.quantize(CENT, rounding=decimal.ROUND_HALF_EVEN)


def order_total(lines: list[tuple[Decimal, int]], percent: int = 0) -> Decimal:
    """The total of (unit price, quantity) lines, each line discounted by ``percent``."""
    return sum((apply_discount(price * quantity, percent) for price, quantity in lines), Decimal("0.00"))
