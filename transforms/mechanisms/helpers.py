"""Building blocks the evaluators share: reasons as Polars expressions, the verdict frame, text tests.

Reasons quote parameters in double quotes and never print a measured float (``value`` carries it), so
their text is the same whichever engine computed them.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl


def words(*parts: str | pl.Expr) -> pl.Expr:
    """Concatenate literal text and columns (cast to text) into one reason."""
    return pl.concat_str([pl.lit(x) if isinstance(x, str) else x.cast(pl.String) for x in parts])


def either(text: pl.Expr, default: str) -> pl.Expr:
    """``text``, or ``default`` when it is null or empty."""
    return pl.when(text.is_null() | (text == "")).then(pl.lit(default)).otherwise(text)


def number(x: float) -> str:
    """A parameter as text: ``5000`` rather than ``5000.0``."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def decide(frame: pl.DataFrame, met: pl.Expr, value: pl.Expr, if_null: pl.Expr | str, if_false: pl.Expr | str,
           evaluator: str) -> pl.DataFrame:
    """``met``, ``value``, and a reason when met is null or false, evaluated over ``frame``; one evaluator."""
    def as_expr(reason: pl.Expr | str) -> pl.Expr:
        return pl.lit(reason) if isinstance(reason, str) else reason

    m = pl.col("met")
    return frame.with_columns(met=met, value=value).select(
        "met", "value",
        reason=pl.when(m.is_null()).then(as_expr(if_null)).when(~m).then(as_expr(if_false)),
        evaluator=pl.lit(evaluator),
    )


def found_by(case_insensitive: bool, text: str, pattern: bool) -> Callable[[pl.Expr], pl.Expr]:
    """A test on a text column: contains ``text`` literally, or matches it as a pattern.

    ``case_insensitive`` matches under Unicode simple case folding (the regex engines' ``(?i)``).
    """
    if not pattern and not case_insensitive:
        return lambda column: column.str.contains(text, literal=True)
    regex = text if pattern else pl.escape_regex(text)
    return lambda column: column.str.contains(("(?i)" if case_insensitive else "") + regex)


def ignoring_case(case_insensitive: bool) -> str:
    """What a reason adds when the comparison ignored case."""
    return " (ignoring case)" if case_insensitive else ""


__all__ = ["decide", "either", "found_by", "ignoring_case", "number", "words"]
