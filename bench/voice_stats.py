"""How often the per-case pass-rate rule gets a case wrong, under the product defaults: each case replayed
``REPEAT`` (10) times, decided by :func:`assay.transforms.series.decide` under ``PassRate(min=0.9)`` and its
default sequential test; while undecided and under the ``BUDGET`` (60 replays), escalation adds
``min(replays_to_decide, budget - replays)`` replays and decides again. A case ends pass, fail or flaky.

- ``voice.false_flaky``: a healthy case (true pass rate 0.97): the share wrongly failed (target: at most
  alpha, 0.05), the share left flaky (reported), and the expected replays per case;
- ``voice.power``: a regressed case (true pass rate 0.80): the share failed (the power to catch the drop),
  the share left flaky, and the expected replays per case and per decision (cases ending pass or fail).

Each figure twice: simulated over seeded series (``random.Random(seed)``), and exact, from a Markov chain
over (replays, passes): every step of the scheme depends only on them for a series whose sequential test
has not crossed (a crossed one is decided, whatever follows). The chain calls the product's own
``decide`` and ``replays_to_decide`` on one representative series per state, so both sides run the same
rule; they must agree within four standard errors of the simulation.
"""

from __future__ import annotations

import math
import random
from collections import Counter

from .common import Result

def _plan() -> tuple[int, int]:
    from assay.core.bundle_models import RepeatPlan

    plan = RepeatPlan()  # the product's defaults: a suite's `repeat: {}`
    assert plan.budget is not None
    return plan.count, plan.budget


REPEAT, BUDGET = _plan()
HEALTHY_RATE = 0.97
REGRESSED_RATE = 0.80
SERIES = 20_000


def _rule():
    from assay.core.criteria import PassRate

    return PassRate(min=0.9)


def simulate(rate: float, series: int, seed: int = 0) -> tuple[Counter, Counter, float]:
    """Of ``series`` seeded cases passing at ``rate`` under the scheme: the count of each end, the replays
    spent on the cases of each end, and the standard error of the mean replays per case."""
    from assay.transforms.series import decide, replays_to_decide

    rule, ends, spent, squares = _rule(), Counter(), Counter(), 0
    for i in range(series):
        rng = random.Random(seed * 1_000_003 + i)
        outcomes = [rng.random() < rate for _ in range(REPEAT)]
        verdict = decide(outcomes, rule).verdict
        while verdict == "flaky" and len(outcomes) < BUDGET:
            more = min(replays_to_decide(outcomes, rule), BUDGET - len(outcomes))
            outcomes += [rng.random() < rate for _ in range(more)]
            verdict = decide(outcomes, rule).verdict
        ends[verdict] += 1
        spent[verdict] += len(outcomes)
        squares += len(outcomes) ** 2
    mean = sum(spent.values()) / series
    return ends, spent, math.sqrt(max(0.0, squares / series - mean**2) / (series - 1))


def exact(rate: float) -> tuple[dict[str, float], dict[str, float]]:
    """For a case passing at ``rate``, exactly: the probability of each end, and the expected replays spent
    on the cases of each end (their sum: the expected replays per case).

    Checkpoints are the states where the scheme decides: (replays, passes) of the series whose
    sequential test has not crossed, each with its probability and one series that reaches it. From a
    checkpoint, a batch is walked replay by replay; a series crossing mid-batch is decided by that
    crossing, having run the whole batch."""
    from assay.transforms.series import decide, replays_to_decide

    rule = _rule()
    ends = {"pass": 0.0, "fail": 0.0, "flaky": 0.0}
    spent = dict.fromkeys(ends, 0.0)
    # replays -> passes -> (probability, a representative uncrossed series), and the batch due from there
    checkpoints: dict[int, dict[int, tuple[float, list[bool]]]] = {}

    def walk(start: list[bool], mass: float, batch: int) -> None:
        states = {sum(start): (mass, start)}
        for _ in range(batch):
            after: dict[int, tuple[float, list[bool]]] = {}
            for passes, (m, path) in states.items():
                for passed, chance in ((True, rate), (False, 1 - rate)):
                    grown = path + [passed]
                    decision = decide(grown, rule)
                    if decision.how == "sequential":
                        ends[decision.verdict] += m * chance
                        spent[decision.verdict] += m * chance * (len(start) + batch)
                        continue
                    key = passes + passed
                    held = after.get(key)
                    after[key] = (m * chance + (held[0] if held else 0.0), held[1] if held else grown)
            states = after
        at = checkpoints.setdefault(len(start) + batch, {})
        for passes, (m, path) in states.items():
            held = at.get(passes)
            at[passes] = (m + (held[0] if held else 0.0), held[1] if held else path)

    walk([], 1.0, REPEAT)
    while checkpoints:
        n = min(checkpoints)
        for m, path in checkpoints.pop(n).values():
            verdict = decide(path, rule).verdict
            if verdict != "flaky" or n >= BUDGET:
                ends[verdict] += m
                spent[verdict] += m * n
            else:
                walk(path, m, min(replays_to_decide(path, rule), BUDGET - n))
    assert math.isclose(sum(ends.values()), 1.0, abs_tol=1e-12), ends
    return ends, spent


def _agree(share: float, simulated: int, series: int) -> tuple[bool, float]:
    """Whether a simulated count agrees with an exact share: within four standard errors (and a count of 1)."""
    se = math.sqrt(share * (1 - share) / series)
    return abs(simulated / series - share) <= 4 * se + 1 / series, se


def _measure(rate: float, series: int) -> tuple[dict[str, float], bool, str]:
    probs, spent = exact(rate)
    ends, used, mean_se = simulate(rate, series)
    replays, mean = sum(spent.values()), sum(used.values()) / series
    decided = (spent["pass"] + spent["fail"]) / (probs["pass"] + probs["fail"])
    decided_sim = (used["pass"] + used["fail"]) / max(1, ends["pass"] + ends["fail"])
    checks = [_agree(probs[v], ends[v], series) for v in ("pass", "fail", "flaky")]
    agree = all(ok for ok, _ in checks) and abs(mean - replays) <= 4 * mean_se
    figures = "; ".join(f"{v} {probs[v]:.4f} exact vs {ends[v] / series:.4f} simulated (se {se:.4f})"
                        for v, (_, se) in zip(("pass", "fail", "flaky"), checks))
    text = (f"true pass rate {rate}, repeat {REPEAT}, budget {BUDGET}, PassRate(min=0.9) with its default sequential "
            f"test; {series:,} seeded series: {figures}; expected replays per case {replays:.2f} exact vs "
            f"{mean:.2f} simulated (se {mean_se:.2f}), per decided case {decided:.2f} exact vs {decided_sim:.2f} "
            f"simulated; exact and simulated {'agree' if agree else 'DISAGREE'} "
            f"within 4 se")
    return probs, agree, text


def false_flaky(series: int = SERIES) -> Result:
    probs, agree, text = _measure(HEALTHY_RATE, series)
    return Result(
        name="voice.false_flaky", value=round(probs["fail"], 4), unit="share of healthy cases failed",
        baseline=None, ratio=None, met=probs["fail"] <= 0.05 and agree,
        target="<= 0.05 (alpha) of cases passing at 0.97 wrongly fail (flaky share reported, no target); "
               "exact and simulated agree",
        note=f"flaky {probs['flaky']:.4f}; {text}",
    )


def power(series: int = SERIES) -> Result:
    probs, agree, text = _measure(REGRESSED_RATE, series)
    return Result(
        name="voice.power", value=round(probs["fail"], 4), unit="share of regressed cases failed",
        baseline=None, ratio=None, met=agree,
        target="reported: the power to catch a drop 0.97 -> 0.80 (the sequential test's design: 1 - beta = 0.90); "
               "exact and simulated agree",
        note=f"flaky {probs['flaky']:.4f}; {text}",
    )


def run() -> list[Result]:
    return [false_flaky(), power()]
