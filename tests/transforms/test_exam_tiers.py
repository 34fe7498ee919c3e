"""Cheapest first: the judge is asked about an exam's replay only when its outcome and trajectory held."""

from __future__ import annotations

import polars as pl

from assay.transforms.exam_tiers import SHORT_CIRCUIT, short_circuit
from assay.transforms.mechanisms.rubric import AWAITING_JUDGE


def _rows(*rows: tuple[str, str, str, bool | None]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"case_run_id": c, "assertion_key": k, "mechanism": m, "met": met, "value": None,
          "reason": AWAITING_JUDGE if m == "rubric" else "checked"} for c, k, m, met in rows],
        schema={"case_run_id": pl.String, "assertion_key": pl.String, "mechanism": pl.String, "met": pl.Boolean,
                "value": pl.Float64, "reason": pl.String})


def test_a_replay_whose_cheaper_tier_failed_is_not_shown_to_the_judge() -> None:
    evaluated = _rows(
        ("held", "tests_pass", "exam.command_passes", True), ("held", "tidy", "rubric", None),
        ("broke", "tests_pass", "exam.command_passes", False), ("broke", "in_scope", "exam.files_within", False),
        ("broke", "tidy", "rubric", None),
        ("slow", "tests_pass", "exam.command_passes", True), ("slow", "read_first", "exam.profile", False),
        ("slow", "tidy", "rubric", None),
    )
    ask, answered = short_circuit(evaluated.filter(pl.col("mechanism") == "rubric"), evaluated)
    assert sorted(ask["case_run_id"]) == ["held", "slow"]  # a profile never flips anything, so it never skips
    assert answered["case_run_id"].to_list() == ["broke"] and answered["met"].to_list() == [None]
    assert answered["reason"][0] == f"{SHORT_CIRCUIT} (in_scope, tests_pass)"


def test_other_suites_rubrics_are_always_asked() -> None:
    evaluated = _rows(("call", "greets", "tool.called", False), ("call", "polite", "rubric", None))
    ask, answered = short_circuit(evaluated.filter(pl.col("mechanism") == "rubric"), evaluated)
    assert ask.height == 1 and answered.is_empty()
