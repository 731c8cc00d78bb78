"""The few distributions the paired statistics need, in the standard library.

Student's t through the regularised incomplete beta function (its continued fraction, as in
Press et al., *Numerical Recipes*, §6.4), so a t quantile needs no scipy; the binomial by
summing its terms in log space; Wilson's score interval for a proportion.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_TINY = 1e-300
_STANDARD = NormalDist()


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def t_upper(t: float, df: float) -> float:
    """P(T ≥ t), one-sided."""
    half = t_two_sided(t, df) / 2.0
    return half if t >= 0 else 1.0 - half


@lru_cache(maxsize=4096)
def t_quantile(probability: float, df: float) -> float:
    """The ``probability`` quantile of Student's t (bisection on :func:`t_upper`). Kept per
    (probability, df): a report asks the same few, and each costs some fifty beta fractions."""
    if not 0.0 < probability < 1.0:
        raise ValueError("probability must lie strictly between 0 and 1")
    if probability < 0.5:
        return -t_quantile(1.0 - probability, df)
    low, high = 0.0, 1.0
    while t_upper(high, df) > 1.0 - probability:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_upper(middle, df) > 1.0 - probability:
            low = middle
        else:
            high = middle
        if high - low < 1e-13 * max(1.0, high):
            break
    return (low + high) / 2.0


def z_quantile(probability: float) -> float:
    return _STANDARD.inv_cdf(probability)


def binomial_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 1.0 if k == 0 else 0.0
    if p >= 1.0:
        return 1.0 if k == n else 0.0
    log = (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )
    return math.exp(log)


def mid_p_below(k: int, n: int, p: float) -> float:
    """P(X < k) + ½·P(X = k) for X ~ Binomial(n, p): the lower mid-p tail."""
    return math.fsum(binomial_pmf(i, n, p) for i in range(k)) + binomial_pmf(k, n, p) / 2.0


def mid_p_above(k: int, n: int, p: float) -> float:
    """P(X > k) + ½·P(X = k): the upper mid-p tail."""
    return math.fsum(binomial_pmf(i, n, p) for i in range(k + 1, n + 1)) + (
        binomial_pmf(k, n, p) / 2.0
    )


@lru_cache(maxsize=4096)
def mid_p_interval(k: int, n: int, alpha: float) -> tuple[float, float]:
    """The binomial proportion's interval inverted from the two one-sided mid-p tests at
    ``alpha / 2`` each: p lies inside exactly when neither tail at p is below ``alpha / 2``.
    Kept per (k, n, alpha): each is two bisections of a hundred binomial sums."""
    half = alpha / 2.0

    def solve(tail_below_half_at_zero: bool) -> float:
        # the lower bound: where the upper tail (increasing in p) reaches half;
        # the upper bound: where the lower tail (decreasing in p) falls to half.
        low, high = 0.0, 1.0
        for _ in range(100):
            middle = (low + high) / 2.0
            if tail_below_half_at_zero:
                below = mid_p_above(k, n, middle) < half
            else:
                below = mid_p_below(k, n, middle) >= half
            if (below and middle == low) or (not below and middle == high):
                break  # low and high are neighbouring floats: no step changes them again
            if below:
                low = middle
            else:
                high = middle
        return (low + high) / 2.0

    lower = 0.0 if mid_p_above(k, n, 0.0) >= half else solve(True)
    upper = 1.0 if mid_p_below(k, n, 1.0) >= half else solve(False)
    return lower, upper


def wilson(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion: never zero width, never outside [0, 1]."""
    if n <= 0:
        raise ValueError("a proportion needs at least one observation")
    z = z_quantile(1.0 - (1.0 - confidence) / 2.0)
    share = successes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
