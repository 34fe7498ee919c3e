"""vendor.evaluation: the runner's own evaluation read as met + value."""

from __future__ import annotations

import pytest
from judge_kit import case_run, evaluation, one, result


@pytest.mark.parametrize("kwargs,params,expected", [
    ({"verdict": "pass"}, {}, result(True, 1.0, None, "hamming:guardrail")),
    ({"verdict": "fail", "rationale": "quoted a price"}, {}, result(
        False, 0.0, "the vendor judged it failed: quoted a price", "hamming:guardrail")),
    ({"verdict": "fail"}, {}, result(False, 0.0, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"verdict": "error", "rationale": "upstream 503"}, {}, result(
        None, None, "the vendor reported an error: upstream 503", "hamming:guardrail")),
    ({"verdict": "unknown"}, {}, result(None, None, "the vendor could not reach a verdict (unknown)", "hamming:guardrail")),
    ({"score": 0.8}, {"pass_score": 0.7}, result(True, 0.8, None, "hamming:guardrail")),
    ({"score": 0.6}, {"pass_score": 0.7}, result(False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "verdict": "pass"}, {"pass_score": 0.7}, result(
        False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "verdict": "fail"}, {}, result(False, 0.6, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"score": 0.6}, {}, result(None, 0.6, "the vendor gave a score but no verdict: set pass_score on the assertion to map "
                                          "the score onto met", "hamming:guardrail")),
    ({}, {}, result(None, None, "the vendor reported neither a verdict nor a score", "hamming:guardrail")),
    ({"verdict": "maybe"}, {}, result(None, None, 'the vendor reported an unrecognised verdict "maybe"', "hamming:guardrail")),
])
def test_vendor_evaluation(kwargs: dict, params: dict, expected: dict) -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", **params}, evaluations=[evaluation(**kwargs)])
    assert got == expected


def test_a_vendor_error_is_never_a_failure() -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", "pass_score": 0.5},
              evaluations=[evaluation(verdict="error", score=0.1, rationale="")])
    assert got["met"] is None and got["reason"] == "the vendor reported an error: no rationale given"


def test_vendor_evaluation_missing_or_ambiguous_is_null() -> None:
    other = [evaluation(name="other", verdict="pass"), evaluation("c2", verdict="pass")]
    assert one([case_run(), case_run("c2")], "vendor.evaluation", {"name": "guard"}, evaluations=other) == result(
        None, None, 'the runner reported no evaluation named "guard"', "assay:vendor")
    twice = [evaluation(verdict="pass"), evaluation(verdict="fail")]
    assert one(case_run(), "vendor.evaluation", {"name": "guard"}, evaluations=twice) == result(
        None, None, 'the runner reported 2 evaluations named "guard"; expected one', "assay:vendor")
