"""How often the per-case pass-rate rule gets a case wrong, under the product defaults: each case replayed
``REPEAT`` (10) times, decided by :func:`assay.transforms.series.decide` under ``PassRate(min=0.9)`` and its
default sequential test; while undecided and under the ``BUDGET`` (60 replays), escalation adds
``min(replays_to_decide, budget - replays)`` replays and decides again. A case ends pass, fail or flaky.

- ``voice.false_flaky``: a healthy case (true pass rate 0.97): the share wrongly failed (target: at most
  alpha, 0.05), the share left flaky (reported), and the expected replays per case;
- ``voice.power``: a regressed case (true pass rate 0.80): the share failed (the power to catch the drop),
  the share left flaky, and the expected replays per case and per decision (cases ending pass or fail).

Each figure twice, simulated over seeded series and exactly (:mod:`.series_sim`); both sides call the
product's own ``decide`` and ``replays_to_decide``, and must agree within four standard errors.
"""

from __future__ import annotations

from .common import Result
from .series_sim import Figures, Scheme, measure


def _plan() -> tuple[int, int]:
    from assay.core.bundle_models import RepeatPlan

    plan = RepeatPlan()  # the product's defaults: a suite's `repeat: {}`
    assert plan.budget is not None
    return plan.count, plan.budget


REPEAT, BUDGET = _plan()
HEALTHY_RATE = 0.97
REGRESSED_RATE = 0.80
SERIES = 20_000


def scheme() -> Scheme:
    """The voice suites' repeats: ``REPEAT`` replays, then escalation while flaky, up to ``BUDGET``."""
    from assay.core.criteria import PassRate
    from assay.transforms.series import decide, replays_to_decide

    rule = PassRate(min=0.9)

    def end(path):
        verdict = decide(path, rule).verdict
        return verdict if verdict != "flaky" or len(path) >= BUDGET else None

    return Scheme(name="voice", first=REPEAT, end=end,
                  more=lambda path: min(replays_to_decide(path, rule), BUDGET - len(path)),
                  crossed=lambda path: decide(path, rule).how == "sequential")


def _measure(rate: float, series: int) -> Figures:
    return measure(scheme(), rate, series)


def _describe(figures: Figures) -> str:
    return f"repeat {REPEAT}, budget {BUDGET}, PassRate(min=0.9) with its default sequential test; {figures.describe()}"


def false_flaky(series: int = SERIES) -> Result:
    figures = _measure(HEALTHY_RATE, series)
    fail = figures.exact["fail"]
    return Result(
        name="voice.false_flaky", value=round(fail, 4), unit="share of healthy cases failed",
        baseline=None, ratio=None, met=fail <= 0.05 and figures.agree(),
        target="<= 0.05 (alpha) of cases passing at 0.97 wrongly fail (flaky share reported, no target); "
               "exact and simulated agree",
        note=f"flaky {figures.exact.get('flaky', 0.0):.4f}; {_describe(figures)}",
    )


def power(series: int = SERIES) -> Result:
    figures = _measure(REGRESSED_RATE, series)
    return Result(
        name="voice.power", value=round(figures.exact["fail"], 4), unit="share of regressed cases failed",
        baseline=None, ratio=None, met=figures.agree(),
        target="reported: the power to catch a drop 0.97 -> 0.80 (the sequential test's design: 1 - beta = 0.90); "
               "exact and simulated agree",
        note=f"flaky {figures.exact.get('flaky', 0.0):.4f}; {_describe(figures)}",
    )


def run() -> list[Result]:
    return [false_flaky(), power()]
