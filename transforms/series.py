"""A case's decision from its series of replays, under a consumer's per-case pass rate (``pass_rate``).

The rule, in order (:func:`decide`):

1. the series is the replays that passed or failed, in replay order; a replay that errored is left out.
   No such replay: the case's verdict is ``error``;
2. with the sequential test on, Wald's SPRT (H0: the case passes at ``healthy``, H1: at ``regressed``)
   walks the series; the first bound it crosses decides: accept -> ``pass``, flag -> ``fail``. Replays
   after the crossing change nothing;
3. otherwise the one-sided Wilson bounds at ``confidence`` over every replay of the series decide: lower
   bound >= ``min`` -> ``pass``, upper bound < ``min`` -> ``fail``;
4. otherwise the case is ``flaky``: more replays may decide it (:func:`replays_to_decide` says how many).

A coding-agent exam's rate (``rule: exam``) is decided by :func:`assay.transforms.exam_series.judge_series`
instead: replays that all held pass; a failure escalates and only the sequential test decides; a series it
leaves undecided is ``flaky`` here — escalation gives it more replays, and at the budget it is drift.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assay.core.criteria import PassRate

from .exam_series import ExamPolicy, judge_series
from .stats import Sprt, ceil_to, floor_to, wilson_lower, wilson_upper


@dataclass(frozen=True)
class Decision:
    """One case's verdict over its replays, and why."""

    verdict: str
    """``pass``, ``fail``, ``flaky`` (undecided) or ``error`` (no replay passed or failed)."""
    passes: int
    """Replays of the series that passed."""
    runs: int
    """Replays of the series (the errored ones left out)."""
    errors: int
    """Replays that errored, left out of the series."""
    lower: float | None
    """The one-sided Wilson lower bound at the rule's confidence over the series (None without one)."""
    upper: float | None
    """The one-sided Wilson upper bound at the rule's confidence over the series (None without one)."""
    how: str
    """``sequential``, ``wilson``, ``undecided`` or ``no-replays``."""
    at: int | None
    """For ``sequential``: the replay of the series (1-based) where the test crossed its bound."""
    reason: str
    """One line a person reads."""


def _rate(value: float) -> str:
    """A rate as a person reads it: ``0.90``, or every digit it has past two (``0.925``)."""
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"


def _sprt(rule: PassRate) -> Sprt | None:
    seq = rule.sequential
    return None if seq is None else Sprt.of(seq.healthy, seq.regressed, seq.alpha, seq.beta)


def _exam_policy(rule: PassRate, replays: int) -> ExamPolicy:
    """The exam policy of ``rule`` over a series of ``replays``: the batch that ran is the first batch, and the
    budget is never reached here (escalation stops at the run's budget; judging reads what arrived), so a series
    the sequential test left open is pending, never decided by a budget this rule does not know."""
    seq = rule.sequential
    assert seq is not None, "PassRate validates that rule 'exam' has a sequential test"
    n = max(replays, 1)
    return ExamPolicy(replays=n, budget=n + 1, healthy=seq.healthy, regressed=seq.regressed, alpha=seq.alpha,
                      beta=seq.beta)


def _decide_exam(outcomes: Sequence[bool | None], rule: PassRate) -> Decision:
    if not outcomes:
        return Decision("error", 0, 0, 0, None, None, "no-replays", None, "no replays: nothing to decide the exam on")
    judged = judge_series(outcomes, _exam_policy(rule, len(outcomes)))
    runs, passes = judged.runs, judged.passes
    upper = wilson_upper(passes, runs, rule.confidence) if runs else None
    if judged.verdict is None:  # escalated, neither bound crossed: more replays, or drift at the budget
        return Decision("flaky", passes, runs, judged.errors, judged.lower, upper, "undecided", None,
                        f"{judged.reason}: undecided, drift suspected if the budget stops it here")
    return Decision(judged.verdict, passes, runs, judged.errors, judged.lower, upper, judged.how, judged.at,
                    judged.reason)


def decide(outcomes: Sequence[bool | None], rule: PassRate) -> Decision:
    """The decision over ``outcomes`` in replay order (True passed, False failed, None errored)."""
    if rule.rule == "exam":
        return _decide_exam(outcomes, rule)
    series = [o for o in outcomes if o is not None]
    errors = len(outcomes) - len(series)
    errored = f"; {errors} errored, left out" if errors else ""
    if not series:
        what = f"all {errors} replays errored" if errors else "no replays"
        return Decision("error", 0, 0, errors, None, None, "no-replays", None,
                        f"{what}: no replay passed or failed, so no pass rate against {_rate(rule.min)}")
    passes, runs = sum(series), len(series)
    lower, upper = wilson_lower(passes, runs, rule.confidence), wilson_upper(passes, runs, rule.confidence)
    level = f"{rule.confidence * 100:g}%"
    head = (f"{passes} of {runs} replays passed ({passes / runs:.2f}; {level} Wilson "
            f"{floor_to(lower):.2f}-{ceil_to(upper):.2f}{errored})")
    sprt = _sprt(rule)
    crossing = sprt.walk(series) if sprt else None
    if crossing is not None:
        verdict = "pass" if crossing.bound == "accept" else "fail"
        what = "a healthy pass rate" if verdict == "pass" else "a regression"
        return Decision(verdict, passes, runs, errors, lower, upper, "sequential", crossing.at,
                        f"{head}: {verdict} — the sequential test found {what} at replay {crossing.at}")
    if lower >= rule.min:
        return Decision("pass", passes, runs, errors, lower, upper, "wilson", None,
                        f"{head}: pass — the lower bound {floor_to(lower):.2f} reaches {_rate(rule.min)}")
    if upper < rule.min:
        return Decision("fail", passes, runs, errors, lower, upper, "wilson", None,
                        f"{head}: fail — the upper bound {ceil_to(upper):.2f} is below {_rate(rule.min)}")
    why = "the sequential test reached neither bound" if sprt else "the Wilson bounds straddle it"
    return Decision("flaky", passes, runs, errors, lower, upper, "undecided", None,
                    f"{head}: undecided against {_rate(rule.min)} — {why}")


def replays_to_decide(outcomes: Sequence[bool | None], rule: PassRate) -> int:
    """The fewest further replays that could decide the case (0 when it is decided, else at least 1).

    The least of: straight passes to the sequential test's accept bound, straight failures to its flag
    bound, straight passes for the Wilson lower bound to reach ``min``, and straight failures for the
    Wilson upper bound to fall below it. A case with no replay yet (or only errored ones) counts from zero.
    """
    decision = decide(outcomes, rule)
    if decision.verdict in ("pass", "fail"):
        return 0
    if rule.rule == "exam":  # only the sequential test decides an escalated exam
        sprt = _sprt(rule)
        assert sprt is not None
        failures = decision.runs - decision.passes
        return max(1, min(sprt.to_accept(decision.passes, failures), sprt.to_flag(decision.passes, failures)))
    passes, runs = decision.passes, decision.runs
    candidates = [
        _fewest(lambda k: wilson_lower(passes + k, runs + k, rule.confidence) >= rule.min),
        _fewest(lambda k: wilson_upper(passes, runs + k, rule.confidence) < rule.min),
    ]
    sprt = _sprt(rule)
    if sprt is not None:
        candidates += [sprt.to_accept(passes, runs - passes), sprt.to_flag(passes, runs - passes)]
    return max(1, min(candidates))


def _fewest(decides) -> int:
    """The least k >= 1 with ``decides(k)``, for a condition that, once true, stays true as k grows."""
    high = 1
    while not decides(high):
        high *= 2
    low = high // 2  # decides(low) is false, or low is 0
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if decides(mid) else (mid, high)
    return high


__all__ = ["Decision", "decide", "replays_to_decide"]
