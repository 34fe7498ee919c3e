"""rubric: left for the judge, or impossible without one."""

from __future__ import annotations

from judge_kit import case_run, one, result

from assay.transforms.mechanisms.rubric import AWAITING_JUDGE, NO_JUDGE


def test_rubric_without_a_judge_is_null_with_the_fix() -> None:
    assert one(case_run(), "rubric", {"rubric": "polite"}) == result(None, None, NO_JUDGE, "assay:judge")
    assert NO_JUDGE == "no judge configured: set ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL"


def test_rubric_with_a_judge_is_left_for_the_judge() -> None:
    assert one(case_run(), "rubric", {"rubric": "polite"}, judge="qwen-72b") == result(
        None, None, AWAITING_JUDGE, "assay:judge:qwen-72b")
