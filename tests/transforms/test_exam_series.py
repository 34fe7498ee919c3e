"""An exam's verdict from its replays: a single failure escalates, FAIL only from an escalated series, a
spent budget is undecided, errors are left out; the sequential test reproduces statistics.md's figures."""

from __future__ import annotations

import random

import pytest

from assay.transforms.exam_series import ExamPolicy, judge_series, next_batch
from bench.series_sim import Scheme, exact

P, F, E = True, False, None


def test_a_clean_first_batch_holds_without_escalating() -> None:
    assert next_batch([]) == 5 and next_batch([P, P]) == 3
    assert judge_series([P, P]).verdict is None
    held = judge_series([P] * 5)
    assert (held.verdict, held.how, held.escalated) == ("pass", "held", False)
    assert next_batch([P] * 5) == 0
    assert "0.64" in held.reason  # 5/5: one-sided 95% Wilson lower 0.6494, floored


def test_one_failure_is_not_a_regression_it_escalates() -> None:
    one = judge_series([P, F, P, P, P])
    assert (one.verdict, one.how, one.escalated) == (None, "pending", True)
    # the fewest replays that could decide: straight passes to accept are many, straight failures to flag two
    assert next_batch([P, F, P, P, P]) == 2
    # 4 passes and 1 failure: the walk needs 18 more straight passes to accept (-2.251 from 0.699)
    assert judge_series([P, F, P, P, P] + [P] * 17).verdict is None
    accepted = judge_series([P, F, P, P, P] + [P] * 18)
    assert (accepted.verdict, accepted.how, accepted.at) == ("pass", "sequential", 23)


def test_three_early_failures_flag_a_regression() -> None:
    failed = judge_series([F, F, F, P, P])
    assert (failed.verdict, failed.how, failed.at, failed.escalated) == ("fail", "sequential", 3, True)
    assert "regression" in failed.reason


def test_a_spent_budget_is_undecided_never_a_failure() -> None:
    policy = ExamPolicy(replays=5, budget=12)
    series = [P, F, P, P, P, P, P, P, P, P, P, P]  # 11 passes, 1 failure: neither bound by 12
    decided = judge_series(series, policy)
    assert (decided.verdict, decided.how) == ("undecided", "budget")
    assert next_batch(series[:-1], policy) == 1  # capped by what the budget leaves
    assert "drift suspected" in decided.reason


def test_errors_are_left_out_and_a_batch_of_errors_is_an_error() -> None:
    assert judge_series([E] * 5).verdict == "error"
    mixed = judge_series([P, E, P, P, P])
    assert (mixed.verdict, mixed.runs, mixed.errors, mixed.replays) == ("pass", 4, 1, 5)


def test_fail_only_ever_comes_from_an_escalated_series() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        series: list[bool | None] = []
        while (more := next_batch(series)) > 0:
            series += [rng.random() < 0.75 for _ in range(more)]
        decided = judge_series(series)
        assert decided.replays <= 60
        if decided.verdict == "fail":
            assert decided.escalated and decided.runs - decided.passes >= 3


@pytest.mark.parametrize("rate,flag", [(0.95, 0.030), (0.80, 0.884)])
def test_a_first_batch_of_14_is_the_truncated_sprt_of_statistics_md(rate: float, flag: float) -> None:
    """statistics.md: SPRT 0.95 vs 0.80, alpha 0.05, beta 0.10, truncated at 60 replays flags 0.030 at a true
    rate of 0.95 and 0.884 at 0.80. A first batch of 14 cannot decide before the walk could (14 straight
    passes are its fastest acceptance), so the policy's probabilities are the plain test's."""
    policy = ExamPolicy(replays=14)
    scheme = Scheme("exam", 14, lambda s: judge_series(s, policy).verdict, lambda s: next_batch(s, policy),
                    lambda s: policy.sprt.walk(s) is not None)
    ends, _ = exact(scheme, rate)
    assert ends["fail"] == pytest.approx(flag, abs=0.0015)


def test_a_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="replays <= budget"):
        ExamPolicy(replays=10, budget=5)
    with pytest.raises(ValueError, match="regressed < healthy"):
        ExamPolicy(healthy=0.8, regressed=0.9)
