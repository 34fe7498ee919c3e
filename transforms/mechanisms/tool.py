"""``tool.*``: checks on the tool calls the agent made.

A call counts when its name is ``p.tool`` and, when ``p.arguments`` is given, its JSON arguments hold
each of those top-level keys with an equal scalar (strings equal strings, booleans booleans, numbers
numbers as 64-bit floats, so 1 equals 1.0). Arguments that are not a JSON object never match.
"""

from __future__ import annotations

import json

import polars as pl

from assay.core.mechanisms import ToolCalled

from .evidence import Evidence
from .helpers import decide, words
from .registry import mechanism

EVALUATOR = "assay:tool"
NO_TOOL_CALLS = "the case run recorded no tool calls"


def argument_matches(key: str, expected: str | int | float | bool) -> pl.Expr:
    """A JSON-typed test on one call's arguments: top-level ``key`` holds a value equal to ``expected``.

    JSONPath filters compare typed (``"1"`` is not ``1``; ``1`` is ``1.0``); strings are compared by
    extraction instead, because JSONPath string literals cannot carry every character.
    """
    arguments = pl.col("arguments")
    as_list = pl.concat_str(pl.lit("["), arguments, pl.lit("]"))
    if isinstance(expected, bool):
        return as_list.str.json_path_match(f"$[?(@.{key} == {str(expected).lower()})]").is_not_null()
    if isinstance(expected, int | float):
        return as_list.str.json_path_match(f"$[?(@.{key} == {float(expected)!r})]").is_not_null()
    is_string = as_list.str.json_path_match(f"$[?(@.{key} >= '')]").is_not_null()
    return is_string & (arguments.str.json_path_match(f"$.{key}") == expected)


def _matching_calls(evidence: Evidence, rows: pl.Series, p: ToolCalled) -> pl.Series:
    """Per row: how many calls match ``p`` (null without tool-call evidence)."""
    def matching(calls: pl.DataFrame) -> pl.DataFrame:
        calls = calls.filter(pl.col("name") == p.tool)
        for key, expected in (p.arguments or {}).items():  # eager, one filter at a time: JSON is parsed only
            # for calls that passed the earlier filters (a lazy plan would fuse them into one predicate)
            calls = calls.filter(argument_matches(key, expected).fill_null(False))
        return calls

    return evidence.count_calls(rows, matching)


def _with_arguments(p: ToolCalled) -> str:
    return f" with arguments {json.dumps(p.arguments, sort_keys=True)}" if p.arguments else ""


@mechanism("tool.called", version=1)
def called(evidence: Evidence, rows: pl.Series, p: ToolCalled, judge: str | None) -> pl.DataFrame:
    """At least one matching call; value = how many."""
    n = pl.col("calls")
    return decide(_matching_calls(evidence, rows, p).to_frame("calls"), n > 0, n.cast(pl.Float64), NO_TOOL_CALLS,
                  f'"{p.tool}" was not called{_with_arguments(p)}', EVALUATOR)


@mechanism("tool.not_called", version=1)
def not_called(evidence: Evidence, rows: pl.Series, p: ToolCalled, judge: str | None) -> pl.DataFrame:
    """No matching call; value = how many there were."""
    n = pl.col("calls")
    return decide(_matching_calls(evidence, rows, p).to_frame("calls"), n == 0, n.cast(pl.Float64), NO_TOOL_CALLS,
                  words(f'"{p.tool}" was called{_with_arguments(p)} ', n, " time(s)"), EVALUATOR)


__all__ = ["NO_TOOL_CALLS", "called", "not_called"]
