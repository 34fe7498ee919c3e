"""An exam's verdict from its series of replays: has the agent's behaviour on this exam changed?

A single failure is not a regression. The rule (:func:`judge_series`), over the replays in order:

1. a replay that errored (our plumbing or the harness failed) is left out of the series; with no replay
   left the verdict is ``error``;
2. the first batch (``policy.replays``) all held: ``pass``, nothing to explain (``how = "held"``);
3. once any replay failed, the series is **escalated**: Wald's SPRT (H0: the exam holds at ``healthy``,
   H1: at ``regressed``) walks the whole series from its first replay, and the first bound it crosses
   decides: accept -> ``pass``, flag -> ``fail`` (``how = "sequential"``, with the replay where it crossed);
4. an escalated series that reaches ``policy.budget`` replays without crossing is ``undecided``
   (``how = "budget"``): drift is suspected, never a failure;
5. otherwise more replays are due: :func:`next_batch` says how many — the fewest that could decide it,
   within the budget.

So FAIL comes only from an escalated series, and the replays an exam spends are reported with the
decision. The same statistics serve the voice suites' repeats (:mod:`.series`); both use :class:`.stats.Sprt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .stats import Sprt, floor_to, wilson_lower

SeriesVerdict = Literal["pass", "fail", "undecided", "error"]
SeriesHow = Literal["held", "sequential", "budget", "pending", "no-replays"]


@dataclass(frozen=True)
class ExamPolicy:
    """How an exam's replays are spent and judged (the defaults are the product's)."""

    replays: int = 5
    """The first batch: replays run before anything is judged."""
    budget: int = 60
    """The most replays an escalated series may reach (errored replays count: they were paid for)."""
    healthy: float = 0.95
    """The reproduction rate the exam is presumed to hold at (H0)."""
    regressed: float = 0.80
    """The reproduction rate that counts as a regression (H1)."""
    alpha: float = 0.05
    """The chance of calling a healthy exam regressed, by design of the sequential test."""
    beta: float = 0.10
    """The chance of missing a regression to ``regressed``, by design."""

    def __post_init__(self) -> None:
        if not 1 <= self.replays <= self.budget:
            raise ValueError(f"an exam policy needs 1 <= replays <= budget; got replays {self.replays}, "
                             f"budget {self.budget}")
        Sprt.of(self.healthy, self.regressed, self.alpha, self.beta)  # validates the rates

    @property
    def sprt(self) -> Sprt:
        return Sprt.of(self.healthy, self.regressed, self.alpha, self.beta)


@dataclass(frozen=True)
class SeriesDecision:
    """An exam's verdict over its replays so far, and why."""

    verdict: SeriesVerdict | None
    """``pass``, ``fail``, ``undecided`` (budget spent), ``error``, or None while more replays are due."""
    how: SeriesHow
    escalated: bool
    """A replay failed, so the sequential test decides."""
    passes: int
    runs: int
    """Replays in the series (the errored ones left out)."""
    errors: int
    replays: int
    """Every replay spent, errored ones included."""
    at: int | None
    """For ``sequential``: the replay of the series (1-based) where the test crossed its bound."""
    lower: float | None
    """The one-sided 95 % Wilson lower bound on the reproduction rate (None without a series)."""
    reason: str


def judge_series(outcomes: Sequence[bool | None], policy: ExamPolicy = ExamPolicy()) -> SeriesDecision:
    """The decision over ``outcomes`` in replay order (True held, False failed, None errored)."""
    series = [o for o in outcomes if o is not None]
    replays, errors = len(outcomes), len(outcomes) - len(series)
    passes, runs = sum(series), len(series)
    escalated = runs > passes
    lower = wilson_lower(passes, runs, 0.95) if runs else None
    errored = f"; {errors} errored, left out" if errors else ""
    head = f"{passes} of {runs} replays held{errored}" + (f" (95% Wilson lower {floor_to(lower):.2f})" if runs else "")

    def decision(verdict: SeriesVerdict | None, how: SeriesHow, reason: str, at: int | None = None) -> SeriesDecision:
        return SeriesDecision(verdict, how, escalated, passes, runs, errors, replays, at, lower, f"{head}: {reason}")

    if not escalated:
        if replays < policy.replays:
            return decision(None, "pending", f"{policy.replays - replays} more replays in the first batch")
        if not runs:
            return decision("error", "no-replays", f"error — all {replays} replays of the first batch errored")
        return decision("pass", "held", f"pass — the first {policy.replays} replays held, nothing to escalate")
    crossing = policy.sprt.walk(series)
    if crossing is not None:
        if crossing.bound == "accept":
            return decision("pass", "sequential", f"pass — escalated, the sequential test accepted the exam as "
                            f"healthy at replay {crossing.at}", crossing.at)
        return decision("fail", "sequential", f"fail — escalated, the sequential test found a regression "
                        f"(to {policy.regressed:g} from {policy.healthy:g}) at replay {crossing.at}", crossing.at)
    if replays >= policy.budget:
        return decision("undecided", "budget", f"undecided — escalated, the budget of {policy.budget} replays was "
                        f"spent before the sequential test reached a bound: drift suspected")
    return decision(None, "pending", "escalated, the sequential test has reached neither bound")


def next_batch(outcomes: Sequence[bool | None], policy: ExamPolicy = ExamPolicy()) -> int:
    """The replays to run next: 0 once decided; the rest of the first batch; else the fewest straight
    passes or failures that could take the sequential test to a bound, within the budget."""
    decided = judge_series(outcomes, policy)
    if decided.verdict is not None:
        return 0
    left = policy.budget - decided.replays
    if not decided.escalated:
        return policy.replays - decided.replays
    failures = decided.runs - decided.passes
    sprt = policy.sprt
    return max(1, min(left, sprt.to_accept(decided.passes, failures), sprt.to_flag(decided.passes, failures)))


__all__ = ["ExamPolicy", "SeriesDecision", "judge_series", "next_batch"]
