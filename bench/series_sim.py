"""How often a replay-and-escalate scheme ends each way for a case (or exam) that passes at a true rate:
by seeded simulation, and exactly, from a Markov chain over (replays, passes).

A scheme is the product's own rule, seen through two calls (:class:`Scheme`): ``end(path)`` — the final
verdict of the series so far, or None while more replays are due (the scheme itself says when the
budget is spent) — and ``more(path)``, the next batch. A verdict reached by a sequential test's crossing
(``crossed(path)``) is absorbing: whatever replays follow in the same batch change nothing.

The exact side rests on one fact of both schemes: for a series whose sequential test has not crossed,
every step depends only on (replays, passes). Checkpoints are the states where the scheme decides, each
with its probability and one series that reaches it. From a checkpoint a batch is walked replay by
replay; a series crossing mid-batch is decided by that crossing, having run the whole batch. Simulation
and the exact figures must agree within four standard errors of the simulation.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Path = list[bool]


@dataclass(frozen=True)
class Scheme:
    """A replay-and-escalate rule, as the benchmark drives it."""

    name: str
    first: int
    """Replays before the first decision."""
    end: Callable[[Sequence[bool]], str | None]
    more: Callable[[Sequence[bool]], int]
    crossed: Callable[[Sequence[bool]], bool]


@dataclass(frozen=True)
class Figures:
    """What a scheme does to a case passing at ``rate``."""

    rate: float
    series: int
    exact: dict[str, float]
    """The probability of each end."""
    simulated: dict[str, int]
    """How many seeded series ended each way."""
    replays: float
    """Expected replays per case, exactly."""
    replays_simulated: float
    replays_se: float
    per_decision: float
    """Expected replays per case that ended pass or fail, exactly."""
    per_decision_simulated: float

    def agree(self) -> bool:
        return all(self._agrees(end) for end in self.exact) and \
            abs(self.replays_simulated - self.replays) <= 4 * self.replays_se

    def _agrees(self, end: str) -> bool:
        share = self.exact[end]
        return abs(self.simulated.get(end, 0) / self.series - share) <= 4 * self.se(end) + 1 / self.series

    def se(self, end: str) -> float:
        share = self.exact[end]
        return math.sqrt(share * (1 - share) / self.series)

    def describe(self) -> str:
        ends = "; ".join(f"{end} {self.exact[end]:.4f} exact vs {self.simulated.get(end, 0) / self.series:.4f} "
                         f"simulated (se {self.se(end):.4f})" for end in sorted(self.exact))
        return (f"true pass rate {self.rate}; {self.series:,} seeded series: {ends}; expected replays per case "
                f"{self.replays:.2f} exact vs {self.replays_simulated:.2f} simulated (se {self.replays_se:.2f}), per "
                f"decided case {self.per_decision:.2f} exact vs {self.per_decision_simulated:.2f} simulated; exact "
                f"and simulated {'agree' if self.agree() else 'DISAGREE'} within 4 se")


def simulate(scheme: Scheme, rate: float, series: int, seed: int = 0) -> tuple[Counter, Counter, float]:
    """Of ``series`` seeded cases passing at ``rate``: the count of each end, the replays spent on the cases
    of each end, and the standard error of the mean replays per case."""
    ends, spent, squares = Counter(), Counter(), 0
    for i in range(series):
        rng = random.Random(seed * 1_000_003 + i)
        outcomes = [rng.random() < rate for _ in range(scheme.first)]
        while (end := scheme.end(outcomes)) is None:
            outcomes += [rng.random() < rate for _ in range(scheme.more(outcomes))]
        ends[end] += 1
        spent[end] += len(outcomes)
        squares += len(outcomes) ** 2
    mean = sum(spent.values()) / series
    return ends, spent, math.sqrt(max(0.0, squares / series - mean**2) / (series - 1))


def exact(scheme: Scheme, rate: float) -> tuple[dict[str, float], dict[str, float]]:
    """For a case passing at ``rate``, exactly: the probability of each end, and the expected replays spent
    on the cases of each end (their sum: the expected replays per case)."""
    ends: dict[str, float] = Counter()
    spent: dict[str, float] = Counter()
    # replays -> passes -> (probability, a representative uncrossed series)
    checkpoints: dict[int, dict[int, tuple[float, Path]]] = {}

    def walk(start: Path, mass: float, batch: int) -> None:
        states = {sum(start): (mass, start)}
        for _ in range(batch):
            after: dict[int, tuple[float, Path]] = {}
            for passes, (m, path) in states.items():
                for passed, chance in ((True, rate), (False, 1 - rate)):
                    grown = path + [passed]
                    if scheme.crossed(grown):
                        end = scheme.end(grown + [True] * (batch - len(grown) + len(start)))
                        assert end is not None, grown
                        ends[end] += m * chance
                        spent[end] += m * chance * (len(start) + batch)
                        continue
                    key = passes + passed
                    held = after.get(key)
                    after[key] = (m * chance + (held[0] if held else 0.0), held[1] if held else grown)
            states = after
        at = checkpoints.setdefault(len(start) + batch, {})
        for passes, (m, path) in states.items():
            held = at.get(passes)
            at[passes] = (m + (held[0] if held else 0.0), held[1] if held else path)

    walk([], 1.0, scheme.first)
    while checkpoints:
        n = min(checkpoints)
        for m, path in checkpoints.pop(n).values():
            end = scheme.end(path)
            if end is not None:
                ends[end] += m
                spent[end] += m * n
            else:
                walk(path, m, scheme.more(path))
    assert math.isclose(sum(ends.values()), 1.0, abs_tol=1e-12), ends
    return dict(ends), dict(spent)


def measure(scheme: Scheme, rate: float, series: int, decided: tuple[str, ...] = ("pass", "fail")) -> Figures:
    """Both sides for a case passing at ``rate``; ``decided`` names the ends that count as decisions."""
    probs, spent = exact(scheme, rate)
    ends, used, mean_se = simulate(scheme, rate, series)
    for end in ends:
        probs.setdefault(end, 0.0)
    decided_mass = sum(probs.get(e, 0.0) for e in decided)
    return Figures(
        rate=rate, series=series, exact=probs, simulated=dict(ends), replays=sum(spent.values()),
        replays_simulated=sum(used.values()) / series, replays_se=mean_se,
        per_decision=sum(spent.get(e, 0.0) for e in decided) / decided_mass if decided_mass else math.nan,
        per_decision_simulated=sum(used[e] for e in decided) / max(1, sum(ends[e] for e in decided)),
    )
