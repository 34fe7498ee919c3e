"""The carry-forward policy, as a pure function: which pairs a judging pass evaluates, carries or leaves out."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from assay.transforms.carry import STORED, new_outcomes, pass_results, plan_pass
from assay.transforms.mechanisms.rubric import AWAITING_JUDGE, judge_evaluator

VERSIONS = {"transcript.contains": 1, "tool.called": 2, "rubric": 1}
ASSIGNMENT = {
    "case_run_id": pl.String, "assertion_id": pl.String, "assertion_key": pl.String,
    "assertion_version": pl.Int32, "mechanism": pl.String, "params": pl.String,
}
PREVIOUS = {
    "case_run_id": pl.String, "assertion_id": pl.String, "met": pl.Boolean, "value": pl.Float64,
    "reason": pl.String, "evaluator": pl.String, "evaluator_version": pl.Int32,
    "judge_tokens_in": pl.Int32, "judge_tokens_out": pl.Int32, "judge_cost_usd": pl.Float64,
}


def assignments(*pairs: tuple[str, str, str]) -> pl.DataFrame:
    """(case run, assertion id, mechanism) triples; the key is the assertion id upper-cased."""
    return pl.DataFrame(
        [{"case_run_id": c, "assertion_id": a, "assertion_key": a.upper(), "assertion_version": 1,
          "mechanism": m, "params": "{}"} for c, a, m in pairs],
        schema=ASSIGNMENT,
    )


def stored(*rows: dict[str, Any]) -> pl.DataFrame:
    base = {"met": True, "value": None, "reason": None, "evaluator": "assay:transcript", "evaluator_version": 1}
    return pl.DataFrame([{**base, **r} for r in rows], schema=PREVIOUS)


def piles(plan) -> tuple[list[str], list[str], int]:
    return sorted(plan.fresh["assertion_id"]), sorted(plan.carried["assertion_id"]), plan.left_out


def test_a_pair_without_a_stored_result_is_evaluated_and_one_with_is_carried() -> None:
    todo = assignments(("c1", "a", "transcript.contains"), ("c1", "b", "transcript.contains"))
    plan = plan_pass(todo, stored({"case_run_id": "c1", "assertion_id": "a"}), versions=VERSIONS, judge=None)
    assert piles(plan) == (["b"], ["a"], 0)
    assert plan.fresh.columns == todo.columns
    assert plan.carried.select(STORED).row(0) == (True, None, None, "assay:transcript", 1, None, None, None)


def test_a_fixed_evaluator_re_evaluates_what_it_judged_without_force() -> None:
    todo = assignments(("c1", "a", "tool.called"), ("c1", "b", "transcript.contains"))
    previous = stored({"case_run_id": "c1", "assertion_id": "a", "evaluator": "assay:tool", "evaluator_version": 1},
                      {"case_run_id": "c1", "assertion_id": "b"})
    # tool.called is at version 2 now: its version-1 result is stale; transcript.contains is unchanged.
    assert piles(plan_pass(todo, previous, versions=VERSIONS, judge=None)) == (["a"], ["b"], 0)


@pytest.mark.parametrize(
    ("evaluator", "reason", "judge", "fresh"),
    [
        ("assay:judge", "no judge configured", None, False),  # still no judge: nothing to gain
        ("assay:judge", "no judge configured", "m1", True),  # a judge is configured now
        ("assay:judge:m1", AWAITING_JUDGE, "m1", True),  # it was waiting for this judge
        ("assay:judge:m1", "polite throughout", "m1", False),  # judged by the same judge
        ("assay:judge:m1", "polite throughout", "m2", True),  # another judge now
        ("assay:judge:m1", "no verdict: judge: HTTP 503: busy", "m1", True),  # this judge gave no verdict: ask again
    ],
)
def test_a_rubric_result_is_as_good_as_the_judge_that_gave_it(evaluator, reason, judge, fresh) -> None:
    todo = assignments(("c1", "r", "rubric"))
    met = True if reason == "polite throughout" else None  # a verdict, else no answer yet
    previous = stored({"case_run_id": "c1", "assertion_id": "r", "met": met, "evaluator": evaluator, "reason": reason})
    plan = plan_pass(todo, previous, versions=VERSIONS, judge=judge)
    assert piles(plan) == ((["r"], [], 0) if fresh else ([], ["r"], 0))


def test_keys_new_versions_only_and_force() -> None:
    todo = assignments(("c1", "a", "transcript.contains"), ("c1", "b", "transcript.contains"),
                       ("c2", "a", "transcript.contains"))
    previous = stored({"case_run_id": "c1", "assertion_id": "a"})
    kw = {"versions": VERSIONS, "judge": None}
    # keys: only B is evaluated; A is carried where stored and left out where not.
    plan = plan_pass(todo, previous, keys=["B"], **kw)
    assert (plan.fresh["case_run_id"].to_list(), plan.carried["case_run_id"].to_list(), plan.left_out) == (["c1"], ["c1"], 1)
    assert piles(plan_pass(todo, previous, new_versions_only=True, **kw)) == (["a", "b"], ["a"], 0)
    assert piles(plan_pass(todo, previous, force=True, **kw)) == (["a", "a", "b"], [], 0)
    assert piles(plan_pass(todo, previous, force=True, keys=["A"], **kw)) == (["a", "a"], [], 1)


def test_an_unknown_mechanism_or_a_result_without_a_version_is_stale() -> None:
    todo = assignments(("c1", "a", "transcript.contains"), ("c1", "b", "no.such"))
    previous = stored({"case_run_id": "c1", "assertion_id": "a", "evaluator_version": None},
                      {"case_run_id": "c1", "assertion_id": "b"})
    assert piles(plan_pass(todo, previous, versions=VERSIONS, judge=None)) == (["a", "b"], [], 0)


def test_pass_results_stamp_the_evaluators_version_on_fresh_results_only() -> None:
    todo = assignments(("c1", "a", "tool.called"), ("c1", "b", "transcript.contains"))
    plan = plan_pass(todo, stored({"case_run_id": "c1", "assertion_id": "b", "evaluator_version": 1}),
                     versions=VERSIONS, judge=None)
    evaluated = plan.fresh.with_columns(met=pl.lit(False), value=pl.lit(None, pl.Float64),
                                        reason=pl.lit("x"), evaluator=pl.lit("assay:tool"))
    results = pass_results(evaluated, plan.carried, VERSIONS).sort("assertion_id")
    assert results.select("assertion_id", "evaluator_version", "fresh").rows() == [("a", 2, True), ("b", 1, False)]


def test_a_case_run_gets_an_outcome_only_when_the_pass_says_something_new() -> None:
    case_runs = pl.DataFrame({"case_run_id": ["same", "fresh", "fewer", "first", "none"], "run_id": "r"})
    results = pl.DataFrame({
        "case_run_id": ["same", "same", "fresh", "fresh", "fewer", "first"],
        "assertion_id": ["a", "b", "a", "b", "a", "a"],
        "fresh": [False, False, True, False, False, False],
    })
    previous = pl.DataFrame({"case_run_id": ["same", "same", "fresh", "fresh", "fewer", "fewer", "none"],
                             "assertion_id": ["b", "a", "a", "b", "a", "b", "a"]})
    got = new_outcomes(case_runs, results, previous).sort("case_run_id")
    # "same": all carried over the same assertions -> nothing new; "fewer": one assertion no longer
    # applies; "first": never judged before; "none": no result in this pass -> no (empty) outcome.
    assert got.select("case_run_id", "evaluated", "carried").rows() == [
        ("fewer", 0, 1), ("first", 0, 1), ("fresh", 1, 1)]
    assert got.columns == ["case_run_id", "run_id", "evaluated", "carried"]


def test_judge_evaluator_names_the_model() -> None:
    assert (judge_evaluator(None), judge_evaluator("m1")) == ("assay:judge", "assay:judge:m1")
