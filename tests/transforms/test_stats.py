"""The statistics against published sanity values: quantiles, Wilson and Clopper-Pearson bounds, Fisher's
exact test, Newcombe's interval, pass@k and pass^k, and Wald's SPRT -- its truncated error rates and
expected replays computed by exact enumeration of the binomial paths, not by simulation."""

from __future__ import annotations

import math

import pytest

from assay.transforms.stats import (
    Crossing,
    Sprt,
    binomial_tail,
    ceil_to,
    clopper_pearson,
    fisher_worse,
    floor_to,
    inverse_normal,
    newcombe,
    pass_at_k,
    pass_hat_k,
    wilson,
    wilson_lower,
    wilson_upper,
    z_score,
)

TABLE = [  # x, n, Wilson 95 % two-sided, Wilson lower one-sided, Clopper-Pearson 95 % two-sided
    (35, 35, (0.9011, 1), 0.9282, (0.9000, 1)),
    (30, 31, (0.8381, 0.9943), 0.8676, (0.8330, 0.9992)),
    (20, 20, (0.8389, 1), 0.8808, (0.8316, 1)),
    (10, 10, (0.7225, 1), 0.7871, (0.6915, 1)),
    (9, 10, (0.5958, 0.9821), 0.6523, (0.5550, 0.9975)),
    (28, 35, (0.6411, 0.8996), 0.6692, (0.6306, 0.9156)),
]
FOUR = 5e-5  # the published figures have four decimals


@pytest.mark.parametrize(("confidence", "sided", "z"), [(0.95, 2, 1.959964), (0.95, 1, 1.644854), (0.99, 2, 2.575829),
                                                        (0.90, 1, 1.281552), (0.999, 2, 3.290527)])
def test_z_from_the_confidence(confidence: float, sided: int, z: float) -> None:
    assert z_score(confidence, sided) == pytest.approx(z, abs=5e-7)


@pytest.mark.parametrize("p", [1e-12, 1e-6, 0.001, 0.02, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97575, 0.99, 1 - 1e-9])
def test_the_inverse_normal_inverts_the_normal_cdf_to_1e_9(p: float) -> None:
    x = inverse_normal(p)
    assert 0.5 * math.erfc(-x / math.sqrt(2)) == pytest.approx(p, rel=1e-9, abs=1e-15)
    assert inverse_normal(1 - (1 - p)) == pytest.approx(-inverse_normal(1 - p), abs=1e-12)


@pytest.mark.parametrize("p", [0, 1, -0.1, 1.5])
def test_the_inverse_normal_refuses_a_probability_outside_0_1(p: float) -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        inverse_normal(p)


@pytest.mark.parametrize(("x", "n", "two", "one", "exact"), TABLE)
def test_wilson_bounds_match_the_table(x: int, n: int, two: tuple, one: float, exact: tuple) -> None:
    low, high = wilson(x, n)
    assert (low, high) == (pytest.approx(two[0], abs=FOUR), pytest.approx(two[1], abs=FOUR))
    assert wilson_lower(x, n) == pytest.approx(one, abs=FOUR)
    assert low < wilson_lower(x, n) and wilson_upper(x, n) <= high  # one-sided bounds are the tighter ones


@pytest.mark.parametrize(("x", "n", "two", "one", "exact"), TABLE)
def test_clopper_pearson_matches_the_table(x: int, n: int, two: tuple, one: float, exact: tuple) -> None:
    low, high = clopper_pearson(x, n)
    assert (low, high) == (pytest.approx(exact[0], abs=FOUR), pytest.approx(exact[1], abs=FOUR))
    if x == n:
        assert low == pytest.approx(0.025 ** (1 / n), abs=1e-12)  # all passes: (a/2)^(1/n)
    else:  # the bound is where the binomial tail equals a/2
        assert binomial_tail(x + 1, n, high) == pytest.approx(0.975, abs=1e-9)
    assert binomial_tail(x, n, low) == pytest.approx(0.025, abs=1e-9)


def test_all_passes_have_the_closed_form_lower_bound() -> None:
    for n in (1, 5, 34, 35, 200):
        assert wilson_lower(n, n) == n / (n + z_score(0.95, 1) ** 2)
        assert wilson(n, n)[0] == n / (n + z_score(0.95) ** 2)


def test_a_lower_bound_is_never_rounded_up() -> None:
    low = wilson(34, 34)[0]
    assert round(low, 4) == 0.8985 and low < 0.90
    assert floor_to(low) == 0.89 and f"{floor_to(low):.2f}" != "0.90"
    assert ceil_to(wilson(28, 35)[1]) == 0.90 and ceil_to(0.9) == 0.9 and floor_to(0.9) == 0.9


def test_no_passes_and_no_runs_have_the_natural_bounds() -> None:
    z2 = z_score(0.95, 1) ** 2
    assert wilson(0, 10)[0] == 0 and wilson_upper(0, 10) == pytest.approx(z2 / (10 + z2))
    assert wilson(0, 0) == (0.0, 1.0) and clopper_pearson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="between 0 and the number of runs"):
        wilson(11, 10)


@pytest.mark.parametrize(("x1", "n1", "x2", "n2", "p"), [
    (30, 31, 24, 31, 0.0264), (10, 10, 7, 10, 0.1053), (10, 10, 6, 10, 0.0433), (20, 20, 15, 20, 0.0236),
    (35, 35, 28, 35, 0.0056),
])
def test_fisher_one_sided_candidate_worse(x1: int, n1: int, x2: int, n2: int, p: float) -> None:
    assert fisher_worse(x1, n1, x2, n2) == pytest.approx(p, abs=FOUR)
    assert fisher_worse(x2, n2, x1, n1) > 0.5  # the other direction is not significant


def test_fisher_of_equal_rates_is_not_significant() -> None:
    assert fisher_worse(7, 10, 7, 10) > 0.5 and fisher_worse(0, 10, 0, 10) == 1.0


def test_newcombe_interval_for_a_difference() -> None:
    diff = newcombe(30, 31, 24, 31)
    assert (diff.d, diff.low, diff.high) == (pytest.approx(0.194, abs=5e-4), pytest.approx(0.022, abs=5e-4),
                                             pytest.approx(0.368, abs=5e-4))
    flipped = newcombe(24, 31, 30, 31)
    assert (flipped.low, flipped.high) == (pytest.approx(-diff.high), pytest.approx(-diff.low))


@pytest.mark.parametrize(("k", "at", "hat"), [(2, 0.9333, 0.4667), (3, None, 0.2917)])
def test_pass_at_k_and_pass_hat_k(k: int, at: float | None, hat: float) -> None:
    if at is not None:
        assert pass_at_k(10, 7, k) == pytest.approx(at, abs=FOUR)
    assert pass_hat_k(10, 7, k) == pytest.approx(hat, abs=FOUR)
    assert pass_at_k(10, 10, k) == 1 and pass_hat_k(10, 0, k) == 0
    with pytest.raises(ValueError, match="k must be between 1"):
        pass_at_k(10, 7, 11)


# --- Wald's SPRT -----------------------------------------------------------------------------------

SPRT = Sprt.of(healthy=0.95, regressed=0.80, alpha=0.05, beta=0.10)


def test_sprt_bounds_and_steps() -> None:
    assert (SPRT.flag, SPRT.accept) == (pytest.approx(2.890, abs=5e-4), pytest.approx(-2.251, abs=5e-4))
    assert (SPRT.on_pass, SPRT.on_fail) == (pytest.approx(-0.1719, abs=5e-5), pytest.approx(1.3863, abs=5e-5))


def test_fourteen_straight_passes_accept_and_three_early_failures_flag() -> None:
    assert SPRT.walk([True] * 13) is None
    assert SPRT.walk([True] * 30) == Crossing(14, "accept")
    assert SPRT.walk([False, False]) is None
    assert SPRT.walk([False] * 3 + [True] * 30) == Crossing(3, "flag")
    assert SPRT.walk([True, False, True, False, False]) == Crossing(5, "flag")
    assert (SPRT.to_accept(0, 0), SPRT.to_flag(0, 0)) == (14, 3)
    assert (SPRT.to_accept(10, 0), SPRT.to_flag(10, 0)) == (4, 4)  # from -1.72: 1.72 + 3 x 1.386 = 2.44 < 2.89


def test_sprt_refuses_rates_in_the_wrong_order() -> None:
    with pytest.raises(ValueError, match="0 < regressed < healthy < 1"):
        Sprt.of(0.8, 0.95, 0.05, 0.1)


def truncated(sprt: Sprt, p: float, limit: int) -> tuple[float, float, float]:
    """P(flag), P(accept) and the expected replays of the cases decided, for the SPRT stopped at ``limit``
    replays, by exact enumeration: the walk's position depends only on (replays, passes), so the uncrossed
    paths' probability is carried forward state by state; a crossed path stops there."""
    alive = {0: 1.0}  # passes -> probability of the uncrossed paths after n replays
    flag = accept = replays = 0.0
    for n in range(1, limit + 1):
        step: dict[int, float] = {}
        for x, mass in alive.items():
            for passed, chance in ((1, p), (0, 1 - p)):
                bound = sprt.bound_at(sprt.statistic(x + passed, n - x - passed))
                if bound is None:
                    step[x + passed] = step.get(x + passed, 0.0) + mass * chance
                    continue
                flag, accept = (flag + mass * chance, accept) if bound == "flag" else (flag, accept + mass * chance)
                replays += n * mass * chance
        alive = step
    assert flag + accept + sum(alive.values()) == pytest.approx(1.0, abs=1e-12)
    return flag, accept, replays / (flag + accept)


@pytest.mark.parametrize(("rate", "flag", "replays"), [(0.95, 0.030, 22), (0.80, 0.884, 19), (0.90, 0.275, None)])
def test_the_sprt_truncated_at_60_replays(rate: float, flag: float, replays: int | None) -> None:
    """The published expected replays are those of a decision (the walk crossed a bound within 60):
    22.25 at 0.95 and 19.31 at 0.80; counting the undecided cases' 60 replays too gives 23.2 and 20.5."""
    p_flag, p_accept, to_decide = truncated(SPRT, rate, 60)
    assert p_flag == pytest.approx(flag, abs=5e-4)
    if rate == 0.95:
        assert p_flag <= 0.05  # Wald's bounds hold: a false flag at most alpha
    if rate == 0.80:
        assert p_accept <= 0.10  # and a missed regression at most beta
    if replays is not None:
        assert round(to_decide) == replays
