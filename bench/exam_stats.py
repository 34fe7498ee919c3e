"""How often an exam's verdict is wrong, under the product's default policy
(:class:`assay.transforms.exam_series.ExamPolicy`: a first batch of 5 replays; any failure escalates to
Wald's SPRT of 0.95 against 0.80 at alpha 0.05, beta 0.10, up to 60 replays; a budget-stopped series is
undecided — drift suspected, never a failure).

- ``exams.false_regression``: an exam that truly reproduces at 0.95: the share wrongly failed (target: at
  most alpha), the share left undecided, and the expected replays;
- ``exams.power``: an exam whose agent regressed to 0.80: the share failed, the share undecided, the
  share passed (a clean first batch ends an exam without escalation: the price of not escalating on
  nothing), and the expected replays per case and per decision.

Each figure twice, simulated over seeded series and exactly (:mod:`.series_sim`); both sides call the
product's own ``judge_series`` and ``next_batch``, and must agree within four standard errors.
"""

from __future__ import annotations

from .common import Result
from .series_sim import Figures, Scheme, exact, measure

HEALTHY_RATE = 0.95
REGRESSED_RATE = 0.80
SERIES = 20_000


def scheme(replays: int | None = None) -> Scheme:
    """The exam policy's defaults, or with a first batch of ``replays``."""
    from assay.transforms.exam_series import ExamPolicy, judge_series, next_batch

    policy = ExamPolicy() if replays is None else ExamPolicy(replays=replays)
    return Scheme(name="exam", first=policy.replays, end=lambda path: judge_series(path, policy).verdict,
                  more=lambda path: next_batch(path, policy),
                  crossed=lambda path: policy.sprt.walk(path) is not None)


def _describe(figures: Figures) -> str:
    from assay.transforms.exam_series import ExamPolicy

    p = ExamPolicy()
    return (f"first batch {p.replays}, budget {p.budget}, SPRT {p.healthy} vs {p.regressed} at alpha {p.alpha}, "
            f"beta {p.beta} once a replay fails; {figures.describe()}")


def false_regression(series: int = SERIES) -> Result:
    figures = measure(scheme(), HEALTHY_RATE, series)
    fail = figures.exact.get("fail", 0.0)
    return Result(
        name="exams.false_regression", value=round(fail, 4), unit="share of healthy exams failed",
        baseline=None, ratio=None, met=fail <= 0.05 and figures.agree(),
        target="<= 0.05 (alpha) of exams reproducing at 0.95 wrongly fail (undecided share reported); "
               "exact and simulated agree",
        note=f"undecided {figures.exact.get('undecided', 0.0):.4f}; expected replays per exam "
             f"{figures.replays:.2f}; {_describe(figures)}",
    )


def _first_batch_tradeoff() -> str:
    """Power against cost for other first batches, exactly (14 replays is the plain truncated SPRT)."""
    parts = []
    for replays in (10, 14):
        caught, _ = exact(scheme(replays), REGRESSED_RATE)
        false, spent = exact(scheme(replays), HEALTHY_RATE)
        parts.append(f"first batch {replays}: power {caught.get('fail', 0.0):.3f}, false regressions "
                     f"{false.get('fail', 0.0):.4f}, {sum(spent.values()):.1f} replays per healthy exam")
    return "; ".join(parts)


def power(series: int = SERIES) -> Result:
    figures = measure(scheme(), REGRESSED_RATE, series)
    return Result(
        name="exams.power", value=round(figures.exact.get("fail", 0.0), 4), unit="share of regressed exams failed",
        baseline=None, ratio=None, met=figures.agree(),
        target="reported with its expected replays per decision: the power to catch a drop 0.95 -> 0.80; exact "
               "and simulated agree",
        note=f"passed {figures.exact.get('pass', 0.0):.4f}, undecided {figures.exact.get('undecided', 0.0):.4f}; "
             f"expected replays per exam {figures.replays:.2f}, per decision {figures.per_decision:.2f}; "
             f"{_describe(figures)}. The first batch trades cost for power: {_first_batch_tradeoff()}",
    )


def run() -> list[Result]:
    return [false_regression(), power()]
