"""vendor.evaluation: the runner's own evaluation read as met + value (value normalised to 0–1)."""

from __future__ import annotations

import pytest
from judge_kit import case_run, evaluation, one, result

from assay.transforms.mechanisms.registry import evaluator_versions

UNIT = (0.0, 1.0)
PERCENT = (0.0, 100.0)


@pytest.mark.parametrize("kwargs,params,expected", [
    ({"verdict": "pass"}, {}, result(True, 1.0, None, "hamming:guardrail")),
    ({"verdict": "fail", "rationale": "quoted a price"}, {}, result(
        False, 0.0, "the vendor judged it failed: quoted a price", "hamming:guardrail")),
    ({"verdict": "fail"}, {}, result(False, 0.0, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"verdict": "error", "rationale": "upstream 503"}, {}, result(
        None, None, "the vendor reported an error: upstream 503", "hamming:guardrail")),
    ({"verdict": "unknown"}, {}, result(None, None, "the vendor could not reach a verdict (unknown)", "hamming:guardrail")),
    ({"score": 0.8, "scale": UNIT}, {"pass_score": 0.7}, result(True, 0.8, None, "hamming:guardrail")),
    ({"score": 0.6, "scale": UNIT}, {"pass_score": 0.7}, result(
        False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "scale": UNIT, "verdict": "pass"}, {"pass_score": 0.7}, result(
        False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "scale": UNIT, "verdict": "fail"}, {}, result(
        False, 0.6, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"score": 0.6, "scale": UNIT}, {}, result(
        None, 0.6, "the vendor gave a score but no verdict: set pass_score on the assertion to map the score onto met",
        "hamming:guardrail")),
    ({}, {}, result(None, None, "the vendor reported neither a verdict nor a score", "hamming:guardrail")),
    ({"verdict": "maybe"}, {}, result(None, None, 'the vendor reported an unrecognised verdict "maybe"', "hamming:guardrail")),
])
def test_vendor_evaluation(kwargs: dict, params: dict, expected: dict) -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", **params}, evaluations=[evaluation(**kwargs)])
    assert got == expected


@pytest.mark.parametrize("score,scale,params,met,value", [
    (87.0, PERCENT, {"pass_score": 70}, True, 0.87),  # pass_score is on the vendor's own scale
    (41.0, PERCENT, {"pass_score": 70}, False, 0.41),
    (4.0, (1.0, 5.0), {"pass_score": 3}, True, 0.75),  # a 1-5 scale: 4 is three quarters up
    (1.0, (1.0, 5.0), {"pass_score": 3}, False, 0.0),
    (87.0, (None, None), {"pass_score": 70}, True, None),  # no declared scale: met, but no value on ours
    (87.0, (0.0, None), {"pass_score": 70}, True, None),
    (5.0, (5.0, 5.0), {"pass_score": 5}, True, None),  # an empty scale has no value either
])
def test_the_value_is_the_score_normalised_on_its_declared_scale(
        score: float, scale: tuple, params: dict, met: bool, value: float | None) -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", **params},
              evaluations=[evaluation(score=score, scale=scale)])
    assert (got["met"], got["value"]) == (met, pytest.approx(value) if value is not None else None)


def test_a_verdict_with_an_unscaled_score_values_the_verdict() -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard"}, evaluations=[evaluation(verdict="pass", score=92.0)])
    assert got == result(True, 1.0, None, "hamming:guardrail")


def test_the_fix_bumped_the_evaluator_version() -> None:
    assert evaluator_versions()["vendor.evaluation"] == 3  # results of version 2 (a missing one undetermined) are re-judged


def test_a_vendor_error_is_never_a_failure() -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", "pass_score": 0.5},
              evaluations=[evaluation(verdict="error", score=0.1, scale=UNIT, rationale="")])
    assert got == result(None, 0.1, "the vendor reported an error: no rationale given", "hamming:guardrail")


def test_vendor_evaluation_missing_is_unsupported_and_ambiguous_is_null() -> None:
    other = [evaluation(name="other", verdict="pass"), evaluation("c2", verdict="pass")]
    assert one([case_run(), case_run("c2")], "vendor.evaluation", {"name": "guard"}, evaluations=other) == result(
        False, None, 'runner "r" reported no evaluation named "guard": it does not produce that evaluation',
        "assay:unsupported")
    twice = [evaluation(verdict="pass"), evaluation(verdict="fail")]
    assert one(case_run(), "vendor.evaluation", {"name": "guard"}, evaluations=twice) == result(
        None, None, 'the runner reported 2 evaluations named "guard"; expected one', "assay:vendor")
