"""The statistics behind verdicts from few repeats, written once: pure Python (``math`` only).

- the inverse normal (:func:`z_score`), Wilson score bounds (:func:`wilson`, :func:`wilson_lower`,
  :func:`wilson_upper`) and the exact Clopper-Pearson interval (:func:`clopper_pearson`) for one pass rate;
- Fisher's exact test, one-sided for "the candidate is worse" (:func:`fisher_worse`), and Newcombe's
  interval for a difference of two pass rates (:func:`newcombe`);
- Wald's sequential probability ratio test (:class:`Sprt`) for deciding when to stop repeating;
- pass@k and pass^k (:func:`pass_at_k`, :func:`pass_hat_k`).

A lower bound is never rounded up for display (:func:`floor_to`): 34 passes of 34 have a two-sided 95 %
Wilson lower bound of 0.8985, which must not read as 0.90.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

# Acklam's rational approximation of the inverse normal CDF (relative error < 1.15e-9), then one Halley step.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
      -3.066479806614716e01, 2.506628277459239e00)
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
      -1.328068155288572e01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
      4.374664141464968e00, 2.938163982698783e00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
_LOW = 0.02425


def _poly(coefs: tuple[float, ...], x: float) -> float:
    out = 0.0
    for c in coefs:
        out = out * x + c
    return out


def inverse_normal(p: float) -> float:
    """The standard normal quantile: the ``x`` with P(Z <= x) = ``p``, for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"inverse_normal takes a probability strictly between 0 and 1; got {p!r}")
    if p > 0.5:  # by symmetry, from the lower tail, where the refinement below keeps its precision
        return -inverse_normal(1.0 - p)
    if p < _LOW:
        q = math.sqrt(-2 * math.log(p))
        x = _poly(_C, q) / (_poly(_D, q) * q + 1)
    else:
        q = p - 0.5
        r = q * q
        x = _poly(_A, r) * q / (_poly(_B, r) * r + 1)
    e = 0.5 * math.erfc(-x / math.sqrt(2)) - p  # one Halley step: full double precision
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - u / (1 + x * u / 2)


def z_score(confidence: float, sided: Literal[1, 2] = 2) -> float:
    """The normal quantile of a ``confidence`` interval: 1.959964 for 0.95 two-sided, 1.644854 one-sided."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1; got {confidence!r}")
    return inverse_normal(1 - (1 - confidence) / sided)


def _check(x: int, n: int) -> None:
    if not 0 <= x <= n:
        raise ValueError(f"passes must be between 0 and the number of runs; got {x} of {n}")


# --- one pass rate ---------------------------------------------------------------------------------


def _wilson(x: int, n: int, z: float) -> tuple[float, float]:
    _check(x, n)
    if n == 0:
        return 0.0, 1.0
    p, z2 = x / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = n / (n + z2) if x == n else max(0.0, centre - half)  # all passes: the closed form, exactly
    high = 1.0 if x == n else (z2 / (n + z2) if x == 0 else min(1.0, centre + half))
    return (0.0 if x == 0 else low), high


def wilson(x: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of ``x`` passes in ``n`` runs (0..1 when ``n`` is 0)."""
    return _wilson(x, n, z_score(confidence, 2))


def wilson_lower(x: int, n: int, confidence: float = 0.95) -> float:
    """The one-sided Wilson lower bound: the pass rate is at least this, with ``confidence``."""
    return _wilson(x, n, z_score(confidence, 1))[0]


def wilson_upper(x: int, n: int, confidence: float = 0.95) -> float:
    """The one-sided Wilson upper bound: the pass rate is at most this, with ``confidence``."""
    return _wilson(x, n, z_score(confidence, 1))[1]


def binomial_tail(x: int, n: int, p: float) -> float:
    """P(X >= x) for X ~ Binomial(n, p), summed exactly in log space (lgamma), so large ``n`` is safe."""
    if x <= 0:
        return 1.0
    if x > n:
        return 0.0
    if p <= 0.0 or p >= 1.0:
        return 1.0 if p >= 1.0 else 0.0
    lp, lq, lc = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return min(1.0, math.fsum(math.exp(lc - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
                              for k in range(x, n + 1)))


def _bisect(f, target: float) -> float:
    """The p in [0, 1] with f(p) = target, for f increasing in p (to double precision)."""
    low, high = 0.0, 1.0
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if f(mid) < target else (low, mid)
    return (low + high) / 2


def clopper_pearson(x: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of ``x`` passes in ``n`` runs, by bisection on the
    binomial tail: the lower bound is the p with P(X >= x) = a/2, the upper the p with P(X <= x) = a/2."""
    _check(x, n)
    tail = (1 - confidence) / 2
    low = 0.0 if x == 0 else _bisect(lambda p: binomial_tail(x, n, p), tail)
    high = 1.0 if x == n else _bisect(lambda p: binomial_tail(x + 1, n, p), 1 - tail)
    return low, high


def floor_to(value: float, digits: int = 2) -> float:
    """``value`` rounded down at ``digits``: how a lower bound is shown (never up, past a threshold)."""
    scale = 10**digits
    return math.floor(round(value * scale, 9)) / scale


def ceil_to(value: float, digits: int = 2) -> float:
    """``value`` rounded up at ``digits``: how an upper bound is shown."""
    scale = 10**digits
    return math.ceil(round(value * scale, 9)) / scale


# --- two pass rates --------------------------------------------------------------------------------


def fisher_worse(x1: int, n1: int, x2: int, n2: int) -> float:
    """Fisher's exact test, one-sided p-value that the candidate (``x2`` of ``n2``) passes less often than
    the baseline (``x1`` of ``n1``): P(baseline passes >= x1) given the table's margins (hypergeometric)."""
    _check(x1, n1)
    _check(x2, n2)
    passes, total = x1 + x2, n1 + n2
    whole = math.comb(total, passes)
    top = min(n1, passes)
    return min(1.0, sum(math.comb(n1, k) * math.comb(n2, passes - k) for k in range(x1, top + 1)) / whole)


class Difference(NamedTuple):
    d: float
    """The baseline's pass rate less the candidate's."""
    low: float
    high: float


def newcombe(x1: int, n1: int, x2: int, n2: int, confidence: float = 0.95) -> Difference:
    """Newcombe's hybrid score interval for p1 - p2 (method 10), from the two two-sided Wilson intervals."""
    if n1 == 0 or n2 == 0:
        raise ValueError(f"newcombe needs runs on both sides; got {n1} and {n2}")
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, confidence)
    l2, u2 = wilson(x2, n2, confidence)
    d = p1 - p2
    return Difference(d, d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2))


# --- when to stop repeating ------------------------------------------------------------------------


class Crossing(NamedTuple):
    at: int
    """How many outcomes the walk took to cross (1-based: the crossing outcome's position)."""
    bound: Literal["accept", "flag"]
    """``accept``: the healthy rate holds; ``flag``: a regression."""


@dataclass(frozen=True)
class Sprt:
    """Wald's SPRT of H0 p = healthy against H1 p = regressed < healthy, on the log-likelihood ratio of H1.

    Each pass adds ``on_pass`` (< 0), each failure ``on_fail`` (> 0); the walk flags a regression at
    ``flag`` or above and accepts the healthy rate at ``accept`` or below."""

    accept: float
    flag: float
    on_pass: float
    on_fail: float

    @classmethod
    def of(cls, healthy: float, regressed: float, alpha: float, beta: float) -> "Sprt":
        if not 0 < regressed < healthy < 1 or not (0 < alpha < 0.5 and 0 < beta < 0.5):
            raise ValueError(f"the SPRT needs 0 < regressed < healthy < 1 and 0 < alpha, beta < 0.5; got healthy "
                             f"{healthy}, regressed {regressed}, alpha {alpha}, beta {beta}")
        return cls(accept=math.log(beta / (1 - alpha)), flag=math.log((1 - beta) / alpha),
                   on_pass=math.log(regressed / healthy), on_fail=math.log((1 - regressed) / (1 - healthy)))

    def statistic(self, passes: int, failures: int) -> float:
        """The walk's position after ``passes`` and ``failures`` in any order."""
        return passes * self.on_pass + failures * self.on_fail

    def bound_at(self, statistic: float) -> Literal["accept", "flag"] | None:
        if statistic >= self.flag:
            return "flag"
        return "accept" if statistic <= self.accept else None

    def walk(self, outcomes: Iterable[bool]) -> Crossing | None:
        """Where the walk over ``outcomes`` (True pass, False failure) first crosses a bound, or None."""
        passes = failures = 0
        for at, passed in enumerate(outcomes, start=1):
            passes, failures = passes + passed, failures + (not passed)
            bound = self.bound_at(self.statistic(passes, failures))
            if bound is not None:
                return Crossing(at, bound)
        return None

    def to_accept(self, passes: int, failures: int) -> int:
        """The fewest straight passes that take the walk at (``passes``, ``failures``) to the accept bound."""
        guess = max(0, math.ceil((self.accept - self.statistic(passes, failures)) / self.on_pass))
        return self._fewest(guess, lambda k: self.bound_at(self.statistic(passes + k, failures)) == "accept")

    def to_flag(self, passes: int, failures: int) -> int:
        """The fewest straight failures that take the walk at (``passes``, ``failures``) to the flag bound."""
        guess = max(0, math.ceil((self.flag - self.statistic(passes, failures)) / self.on_fail))
        return self._fewest(guess, lambda k: self.bound_at(self.statistic(passes, failures + k)) == "flag")

    @staticmethod
    def _fewest(guess: int, crosses) -> int:
        """The least k >= 0 with ``crosses(k)``, from a closed-form ``guess`` off by rounding at most."""
        while guess > 0 and crosses(guess - 1):
            guess -= 1
        while not crosses(guess):
            guess += 1
        return guess


# --- repeats in other tools ------------------------------------------------------------------------


def _check_k(n: int, c: int, k: int) -> None:
    _check(c, n)
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of runs ({n}); got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k: the chance that at least one of ``k`` runs drawn from ``n`` (``c`` passing) passes."""
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all ``k`` runs drawn from ``n`` (``c`` passing) pass."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


__all__ = [
    "Crossing", "Difference", "Sprt", "binomial_tail", "ceil_to", "clopper_pearson", "fisher_worse", "floor_to",
    "inverse_normal", "newcombe", "pass_at_k", "pass_hat_k", "wilson", "wilson_lower", "wilson_upper", "z_score",
]  # fmt: skip
