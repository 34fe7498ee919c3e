"""A case's decision over its replays: the sequential test first, then the Wilson bounds, else flaky;
errored replays left out; and how many further replays could decide an undecided case."""

from __future__ import annotations

import pytest

from assay.core.criteria import PassRate
from assay.transforms.series import Decision, decide, replays_to_decide
from assay.transforms.stats import wilson_lower

T, F, E = True, False, None
RULE = PassRate(min=0.9)  # the default sequential test: healthy 0.95, regressed 0.80, alpha 0.05, beta 0.10
WILSON = PassRate(min=0.9, sequential=None)


def test_the_sequential_test_accepts_at_the_fourteenth_straight_pass() -> None:
    d = decide([T] * 14, RULE)
    assert (d.verdict, d.how, d.at, d.passes, d.runs, d.errors) == ("pass", "sequential", 14, 14, 14, 0)
    assert d.lower == wilson_lower(14, 14) and d.upper == 1.0
    assert d.reason == ("14 of 14 replays passed (1.00; 95% Wilson 0.83-1.00): pass — "
                        "the sequential test found a healthy pass rate at replay 14")


def test_the_sequential_test_flags_three_early_failures() -> None:
    d = decide([F, F, F], RULE)
    assert (d.verdict, d.how, d.at) == ("fail", "sequential", 3)
    assert d.reason.endswith("fail — the sequential test found a regression at replay 3")


def test_the_first_crossing_decides_and_later_contrary_replays_change_nothing() -> None:
    flagged = decide([F, F, F] + [T] * 60, RULE)  # 60 of 63 passed: Wilson alone would leave it open
    assert (flagged.verdict, flagged.how, flagged.at, flagged.passes, flagged.runs) == ("fail", "sequential", 3, 60, 63)
    assert decide([F, F, F] + [T] * 60, WILSON).verdict == "flaky"
    accepted = decide([T] * 14 + [F] * 6, RULE)  # 14 of 20: Wilson alone would fail it
    assert (accepted.verdict, accepted.how, accepted.at) == ("pass", "sequential", 14)
    assert decide([T] * 14 + [F] * 6, WILSON).verdict == "fail"


def test_errored_replays_are_left_out_of_the_series() -> None:
    d = decide([T, E, T, T, E, T, T, T, T, T, T, T, T, T, T, E, T], RULE)
    assert (d.verdict, d.how, d.at, d.passes, d.runs, d.errors) == ("pass", "sequential", 14, 14, 14, 3)
    assert "; 3 errored, left out)" in d.reason
    assert decide([F, E, F, E, E, F], RULE).at == 3  # counted among the decided replays only


@pytest.mark.parametrize("outcomes", [[], [E], [E, E, E]])
def test_no_replay_that_passed_or_failed_is_an_error(outcomes: list) -> None:
    d = decide(outcomes, RULE)
    assert d == Decision("error", 0, 0, len(outcomes), None, None, "no-replays", None, d.reason)
    assert "no replay passed or failed" in d.reason and "0.90" in d.reason


def test_wilson_decides_when_the_sequential_test_is_off() -> None:
    passed = decide([T] * 35, WILSON)
    assert (passed.verdict, passed.how, passed.at) == ("pass", "wilson", None)
    assert passed.reason.endswith("pass — the lower bound 0.92 reaches 0.90")
    failed = decide([T, F] * 5, WILSON)
    assert (failed.verdict, failed.how) == ("fail", "wilson")
    assert failed.reason.endswith("fail — the upper bound 0.74 is below 0.90")


def test_wilson_decides_what_the_sequential_test_left_open() -> None:
    # 9 passes then one failure, repeated: the walk drifts down slowly and stays inside both bounds for 50
    series = ([T] * 9 + [F]) * 5
    sequential_only = PassRate(min=0.8, sequential={"healthy": 0.95, "regressed": 0.80, "alpha": 0.001, "beta": 0.001})
    d = decide(series, sequential_only)
    assert (d.verdict, d.how) == ("pass", "wilson") and d.lower >= 0.8


def test_a_lower_bound_just_short_of_the_minimum_does_not_pass() -> None:
    d = decide([T] * 34, PassRate(min=0.8985, confidence=0.975, sequential=None))  # the two-sided 95 % bound, 0.89848
    assert d.verdict == "flaky" and d.lower < 0.8985


def test_undecided_is_flaky_and_says_why() -> None:
    d = decide([T, T, T, F, T, T, F, T, T, T], RULE)
    assert (d.verdict, d.how, d.at, d.passes, d.runs) == ("flaky", "undecided", None, 8, 10)
    assert d.reason == ("8 of 10 replays passed (0.80; 95% Wilson 0.54-0.94): undecided against 0.90 — "
                        "the sequential test reached neither bound")
    assert decide([T] * 10, WILSON).reason.endswith("undecided against 0.90 — the Wilson bounds straddle it")


def test_the_shown_bounds_are_rounded_outwards() -> None:
    d = decide([T] * 7 + [F] * 3, WILSON)  # lower 0.4417, upper 0.8731 (one-sided 95 %)
    assert "(0.70; 95% Wilson 0.44-0.88)" in d.reason
    assert "90% Wilson" in decide([T] * 7 + [F] * 3, PassRate(min=0.9, confidence=0.9, sequential=None)).reason


@pytest.mark.parametrize(("outcomes", "rule", "more"), [
    ([T] * 14, RULE, 0),  # decided
    ([F, F, F], RULE, 0),
    ([T] * 10, RULE, 4),  # 4 more passes reach the accept bound (14 straight)
    ([], RULE, 1),  # one failure takes Wilson's upper bound below 0.90 (0 of 1: 0.73)
    ([E, E], RULE, 1),
    ([T] * 10, WILSON, 4),  # 10 of 14: upper bound 0.865 < 0.90 (the lower bound needs 15 more passes)
    ([T] * 24, WILSON, 1),  # 24 of 24: lower 0.8987; 25 of 25: 0.9023
    ([T] * 30, WILSON, 0),  # 30 of 30: lower 0.9173, decided
])
def test_replays_to_decide(outcomes: list, rule: PassRate, more: int) -> None:
    assert replays_to_decide(outcomes, rule) == more


def test_replays_to_decide_is_the_fewest_that_could_decide() -> None:
    """Brute force: no shorter run of straight passes or straight failures decides the case, and one of
    that length does."""
    for rule in (RULE, WILSON, PassRate(min=0.75, confidence=0.9)):
        for passes in range(0, 25):
            for failures in range(0, 6):
                outcomes = [F] * failures + [T] * passes
                if decide(outcomes, rule).verdict != "flaky":
                    continue
                k = replays_to_decide(outcomes, rule)
                def decided(j: int) -> bool:
                    return any(decide(outcomes + [extra] * j, rule).verdict != "flaky" for extra in (T, F))

                assert k >= 1 and decided(k) and not any(decided(j) for j in range(1, k)), (rule, passes, failures, k)


EXAM = PassRate(min=0.8, rule="exam")


def test_an_exam_whose_replays_all_held_passes_without_the_fourteen_replays_a_rate_needs() -> None:
    decision = decide([True] * 5, EXAM)
    assert (decision.verdict, decision.how) == ("pass", "held")
    assert replays_to_decide([True] * 5, EXAM) == 0
    assert decide([True] * 5, PassRate(min=0.8)).verdict == "flaky"  # the rate rule cannot accept 5 of 5


def test_an_exam_with_a_failure_escalates_and_only_the_sequential_test_decides() -> None:
    one_failure = [True, True, False, True, True]
    decision = decide(one_failure, EXAM)
    assert (decision.verdict, decision.how) == ("flaky", "undecided") and "drift" in decision.reason
    assert replays_to_decide(one_failure, EXAM) >= 1
    healed = list(one_failure)
    while decide(healed, EXAM).verdict == "flaky" and len(healed) < 60:
        healed += [True] * replays_to_decide(healed, EXAM)
    assert (decide(healed, EXAM).verdict, decide(healed, EXAM).how) == ("pass", "sequential")
    assert decide(healed, PassRate(min=0.8, rule="exam")).at == len(healed)
    broken = [False, False, False]
    assert (decide(broken, EXAM).verdict, decide(broken, EXAM).how) == ("fail", "sequential")


def test_an_exam_whose_every_replay_errored_has_no_verdict() -> None:
    assert decide([None, None], EXAM).verdict == "error"
    assert decide([], EXAM).verdict == "error"


def test_rule_exam_needs_the_sequential_test_and_the_default_rule_keeps_old_hashes() -> None:
    with pytest.raises(ValueError, match="sequential test alone"):
        PassRate(min=0.8, rule="exam", sequential=None)
    assert "rule" not in PassRate(min=0.8).model_dump() and PassRate(min=0.8, rule="exam").model_dump()["rule"] == "exam"
