"""The evidence every evaluator reads: one batch of case runs and the runners' own evaluations.

What judging derives from the case runs is computed once, on first use, and cached. Per-turn and
per-call tests run over the turns / calls flattened once per batch (one row each, ``_pos`` = the case
run's position), so every turn is tested on its own and nothing is matched across turns. When an
assertion covers most case runs, the whole batch is tested once and the answers picked; otherwise only
its case runs are flattened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import polars as pl

T = TypeVar("T")


class Evidence:
    """The case runs (one row each) and their evaluations, with derived tables cached per batch."""

    def __init__(self, case_runs: pl.DataFrame, evaluations: pl.DataFrame):
        ids = case_runs["case_run_id"]
        if ids.is_duplicated().any():
            dupes = ids.filter(ids.is_duplicated()).unique().sort().head(5).to_list()
            raise ValueError(f"case_runs has duplicate case_run_id values, e.g. {dupes}: one row per case run")
        self.case_runs = case_runs
        self.height = case_runs.height
        self.ids = case_runs.select("case_run_id", _row=pl.int_range(pl.len(), dtype=pl.UInt32))
        """Each case run's id and its row (``_row``) in ``case_runs``: evaluators receive rows."""
        self.failed = (case_runs["status"] == "error").fill_null(False)
        """Per case run: it did not execute (an ERROR, decided before any mechanism runs)."""
        self.evaluations = evaluations.join(self.ids, on="case_run_id")
        """The runners' own evaluations, each with its case run's ``_row``."""
        self._memo: dict[Any, Any] = {}

    def memo(self, key: Any, build: Callable[[], T]) -> T:
        """``build()`` the first time ``key`` is asked for in this batch, the same value after."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def column(self, name: str) -> pl.Series:
        """A column of ``case_runs``."""
        return self.case_runs[name]

    def turn_counts(self) -> pl.Series:
        """Per case run: how many turns its transcript has (null without a transcript)."""
        return self.memo("turn_counts", lambda: self.case_runs["transcript"].list.len())

    def supports(self, mechanism: str, supported: Mapping[str, frozenset[str]]) -> pl.Series:
        """Per case run: does its runner support ``mechanism``?"""
        def build() -> pl.Series:
            runners = [runner for runner, mechanisms in supported.items() if mechanism in mechanisms]
            return self.case_runs["runner"].is_in(runners).fill_null(False)
        return self.memo(("supports", mechanism), build)

    def _covers(self, rows: pl.Series) -> bool:
        return rows.len() * 2 >= self.height

    def any_turn(self, rows: pl.Series, role: str | None, test: Callable[[pl.Expr], pl.Expr]) -> pl.Series:
        """Per row: does any turn (said by ``role``) pass ``test`` on its text? Null without a transcript."""
        transcript = self.case_runs["transcript"]
        if self._covers(rows):
            turns = self.memo(("turns", role), lambda: _flat_turns(transcript, role))
            return _any(turns, test, transcript).gather(rows)
        transcript = transcript.gather(rows)
        return _any(_flat_turns(transcript, role), test, transcript)

    def count_calls(self, rows: pl.Series, matching: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.Series:
        """Per row: how many tool calls ``matching`` keeps. Null without tool-call evidence."""
        tool_calls = self.case_runs["tool_calls"]
        if self._covers(rows):
            calls = self.memo("calls", lambda: _flat_calls(tool_calls))
            return _count(matching(calls), tool_calls).gather(rows)
        tool_calls = tool_calls.gather(rows)
        return _count(matching(_flat_calls(tool_calls)), tool_calls)


def _flat_turns(transcript: pl.Series, role: str | None) -> pl.DataFrame:
    turns = transcript.to_frame("turn").with_row_index("_pos").explode("turn", keep_nulls=False)
    turns = turns.filter(pl.col("turn").is_not_null()).unnest("turn")
    if role is not None:
        turns = turns.filter(pl.col("role") == role)
    return turns.select("_pos", pl.col("text").fill_null(""))


def _flat_calls(tool_calls: pl.Series) -> pl.DataFrame:
    calls = tool_calls.to_frame("call").with_row_index("_pos").explode("call", keep_nulls=False)
    return calls.filter(pl.col("call").is_not_null()).unnest("call").select("_pos", "name", "arguments")


def _any(turns: pl.DataFrame, test: Callable[[pl.Expr], pl.Expr], lists: pl.Series) -> pl.Series:
    hits = turns.lazy().filter(test(pl.col("text"))).select("_pos").collect()["_pos"]  # lazy: runs on every core
    found = pl.repeat(False, lists.len(), dtype=pl.Boolean, eager=True).scatter(hits, True)
    return _null_where_missing(found, lists)


def _count(calls: pl.DataFrame, lists: pl.Series) -> pl.Series:
    per_row = calls.group_by("_pos").len()  # calls: already narrowed to the matching ones
    counts = pl.repeat(0, lists.len(), dtype=pl.UInt32, eager=True).scatter(per_row["_pos"], per_row["len"])
    return _null_where_missing(counts, lists)


def _null_where_missing(values: pl.Series, lists: pl.Series) -> pl.Series:
    frame = pl.DataFrame({"v": values, "recorded": lists.is_not_null()})
    return frame.select(pl.when("recorded").then("v")).to_series()


__all__ = ["Evidence"]
