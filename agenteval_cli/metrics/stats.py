"""Paired statistics for comparing two experiments on the same examples.

Both sides are scored on the same examples, so the unit of comparison is the per-example
difference ``b - a``, each side's repetitions averaged first: an example is a cluster, and
treating its repetitions as independent examples would overstate confidence when the two
sides are different agents.

One construction per kind of metric (:mod:`agenteval_cli.metrics.kinds` decides the kind),
the interval and the test from the same statistic, so "the 95% interval excludes 0" holds
exactly when "p < 0.05":

- ``binary`` (every example 0 or 1 on both sides): McNemar's test with the mid-p, conditional
  on the m examples where the sides differ: B is better on w of them, and under "no
  difference" w ~ Binomial(m, ½). Its interval is the one inverted from the same mid-p test
  (the share π = w/m), put on the scale of the difference d = ψ·(2π − 1), ψ the share of
  examples that differ, with ψ's own Wilson interval taken at whichever end widens the
  bound. ψ > 0 inside its interval whenever an example differs, so the sign of each bound is
  that of 2π − 1, and the interval excludes 0 exactly when the mid-p is below 0.05. The
  mid-p keeps its level (Fagerland, Lydersen & Laake 2013) with more power than the exact
  test; the conditional interval alone would ignore how many examples differ, hence ψ's.
- ``mean`` and ``skewed`` (scores, counts, tokens, cost): Student's t on the per-example
  differences with n − 1 degrees of freedom, the interval mean ± t·s/√n and the test the
  same t. For ``skewed`` quantities (cost) also the median of the per-example ratios b/a,
  which a few expensive examples cannot move, and a flag when a tenth of the examples carry
  more than half of the summed differences. A percentile bootstrap (interval, and the p
  that inverts it) is an option from 30 examples.

A comparison is tested when its examples could show a difference: when the most extreme
outcome on the examples that differ (every one of them worse by the same amount) would
reject "no difference" at its confidence (:func:`could_reject`; for 0/1 outcomes at 95%,
5 differing examples). Fewer are not tested (no p-value, no mark): the interval is still
given, never of zero width. The gate reads the same rule (``gating.margins``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from agenteval_cli.metrics.distributions import (
    mid_p_above,
    mid_p_below,
    mid_p_interval,
    t_quantile,
    t_two_sided,
    wilson,
)
from agenteval_cli.metrics.kinds import PairedKind
from agenteval_cli.metrics.planning import mcnemar_detectable, paired_detectable

DEFAULT_SEED = 20240611
DEFAULT_RESAMPLES = 2000
BOOTSTRAP_MIN = 30  # the bootstrap is offered from this many examples
TOO_FEW = "too few differing examples to test"
SAME_SHIFT = "sign test: every example differs by the same amount"
_EPS = 1e-12

Method = Literal["t", "bootstrap"]


@dataclass(frozen=True)
class PairedComparison:
    """One metric, side A against side B, over the ``n`` examples both sides scored."""

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None  # mean of (b - a)
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # None when not tested: ``reason`` says why
    confidence: float = 0.95
    kind: PairedKind = "mean"
    method: str = ""  # how the interval and p were computed, for the reader
    differing: int = 0  # examples where b != a
    better: int = 0  # examples where b > a
    worse: int = 0  # examples where b < a
    reason: str | None = None  # why there is no p-value
    detectable: float | None = None  # the smallest |Δ| this many examples detect (80% power)
    ratio_median: float | None = None  # skewed: median of b/a over examples with a > 0
    concentrated: bool = False  # skewed: a tenth of the examples carry half of Σ|b − a|

    @property
    def significant(self) -> bool:
        """True when the test rejects "no difference" at ``1 - confidence``."""
        return self.p_value is not None and self.p_value < 1 - self.confidence

    @property
    def ties(self) -> int:
        return self.n - self.differing


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of ``values``, ``q`` in [0, 1];
    None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stdev(values: Sequence[float]) -> float | None:
    """Sample standard deviation, the same in any order (``math.fsum``); None for fewer than
    two values, NaN when one is infinite or NaN."""
    if len(values) < 2:
        return None
    if not all(math.isfinite(v) for v in values):
        return math.nan
    mean = _mean(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


# -- 0/1 outcomes -------------------------------------------------------------------------


def mcnemar_mid_p(better: int, worse: int) -> float:
    """Two-sided mid-p of McNemar's test: twice the smaller mid-p tail of
    Binomial(better + worse, ½) at ``better``."""
    m = better + worse
    if m == 0:
        return 1.0
    tail = min(mid_p_below(better, m, 0.5), mid_p_above(better, m, 0.5))
    return min(1.0, 2.0 * tail)


def mcnemar_interval(
    better: int, worse: int, n: int, confidence: float = 0.95
) -> tuple[float, float]:
    """The interval of d = (better − worse)/n inverted from the mid-p test (module doc)."""
    m = better + worse
    alpha = 1.0 - confidence
    if m == 0:
        low_share, high_share = 0.0, 1.0
    else:
        low_share, high_share = mid_p_interval(better, m, alpha)
    theta_low, theta_high = 2 * low_share - 1, 2 * high_share - 1
    psi_low, psi_high = wilson(m, n, confidence)
    low = theta_low * (psi_high if theta_low < 0 else psi_low)
    high = theta_high * (psi_high if theta_high > 0 else psi_low)
    return low, high


def _binary(diffs: Sequence[float], confidence: float) -> PairedComparison:
    n = len(diffs)
    better = sum(1 for d in diffs if d > 0.5)
    worse = sum(1 for d in diffs if d < -0.5)
    low, high = mcnemar_interval(better, worse, n, confidence)
    m = better + worse
    tested = m > 0 and could_reject(n, m, "binary", confidence)
    p = mcnemar_mid_p(better, worse) if tested else None
    detectable = mcnemar_detectable(n, m / n, alpha=1 - confidence) if m else None
    return PairedComparison(
        n=n,
        mean_a=None,
        mean_b=None,
        diff=(better - worse) / n,
        ci_low=low,
        ci_high=high,
        p_value=p,
        confidence=confidence,
        kind="binary",
        method="mid-p McNemar",
        differing=m,
        better=better,
        worse=worse,
        reason=None if tested else TOO_FEW,
        detectable=detectable,
    )


# -- means: scores, counts, tokens, cost --------------------------------------------------


def t_test(diffs: Sequence[float]) -> tuple[float, float] | None:
    """(mean, standard error) of ``diffs``; None for fewer than two."""
    if len(diffs) < 2:
        return None
    sd = stdev(diffs)
    assert sd is not None
    return _mean(diffs), sd / math.sqrt(len(diffs))


def bootstrap_means(
    diffs: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> list[float]:
    """Sorted means of ``resamples`` resamples of ``diffs`` (examples drawn with replacement)."""
    rng = random.Random(seed)
    n = len(diffs)
    return sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))


def bootstrap_ci(
    diffs: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``diffs`` (one per example)."""
    if not diffs:
        raise ValueError("no paired values")
    means = bootstrap_means(diffs, resamples=resamples, seed=seed)
    alpha = (1 - confidence) / 2
    low, high = percentile(means, alpha), percentile(means, 1 - alpha)
    assert low is not None and high is not None
    return low, high


def bootstrap_p(means: Sequence[float]) -> float:
    """The two-sided p that inverts the percentile interval: twice the smaller share of
    resampled means on either side of 0."""
    below = sum(1 for m in means if m <= 0) / len(means)
    above = sum(1 for m in means if m >= 0) / len(means)
    return min(1.0, 2 * min(below, above))


def _ratio_median(a: Sequence[float], b: Sequence[float]) -> float | None:
    ratios = [y / x for x, y in zip(a, b, strict=True) if x > 0 and y >= 0]
    return percentile(ratios, 0.5)


def concentrated(diffs: Sequence[float]) -> bool:
    """Whether the largest tenth of |differences| (at least one) carry over half their sum."""
    sizes = sorted((abs(d) for d in diffs), reverse=True)
    total = math.fsum(sizes)
    if total <= 0 or len(sizes) < 2:
        return False
    top = max(1, len(sizes) // 10)
    return math.fsum(sizes[:top]) > total / 2


def _means(
    a: Sequence[float],
    b: Sequence[float],
    diffs: Sequence[float],
    kind: PairedKind,
    confidence: float,
    method: Method,
    resamples: int,
    seed: int,
) -> PairedComparison:
    n = len(diffs)
    better = sum(1 for d in diffs if d > _EPS)
    worse = sum(1 for d in diffs if d < -_EPS)
    m = better + worse
    mean = _mean(diffs)
    low = high = p = detectable = None
    tested = m > 0 and could_reject(n, m, kind, confidence)
    reason: str | None = None if tested else TOO_FEW
    estimate = t_test(diffs)
    shown_method = "paired t"
    if estimate is not None and m and estimate[1] <= 1e-12 * abs(mean):
        return _same_shift(diffs, mean, kind, confidence, reason)
    if estimate is not None and estimate[1] > 0:
        _, error = estimate
        sd = error * math.sqrt(n)
        detectable = paired_detectable(n, sd, alpha=1 - confidence)
        if method == "bootstrap":
            if n < BOOTSTRAP_MIN:
                raise ValueError(f"the bootstrap needs {BOOTSTRAP_MIN}+ examples, not {n}")
            means = bootstrap_means(diffs, resamples=resamples, seed=seed)
            alpha = (1 - confidence) / 2
            low, high = percentile(means, alpha), percentile(means, 1 - alpha)
            tested_p = bootstrap_p(means)
            shown_method = "paired bootstrap"
        else:
            quantile = t_quantile(1 - (1 - confidence) / 2, n - 1)
            low, high = mean - quantile * error, mean + quantile * error
            tested_p = t_two_sided(mean / error, n - 1)
        p = None if reason else tested_p
    return PairedComparison(
        n=n,
        mean_a=None,
        mean_b=None,
        diff=mean,
        ci_low=low,
        ci_high=high,
        p_value=p,
        confidence=confidence,
        kind=kind,
        method=shown_method,
        differing=m,
        better=better,
        worse=worse,
        reason=reason,
        detectable=detectable,
        ratio_median=_ratio_median(a, b) if kind == "skewed" else None,
        concentrated=kind == "skewed" and concentrated(diffs),
    )


def _same_shift(
    diffs: Sequence[float], mean: float, kind: PairedKind, confidence: float, reason: str | None
) -> PairedComparison:
    """Every example differs by the same amount d: no spread for a t, so the examples are
    read as signs (McNemar's construction, every differing example one way) and the
    interval put on d's scale: never of zero width, and excluding 0 exactly when the mid-p
    is below 1 − confidence."""
    n = len(diffs)
    up = mean > 0
    better, worse = (n, 0) if up else (0, n)
    low, high = mcnemar_interval(better, worse, n, confidence)
    size = abs(mean)
    return PairedComparison(
        n=n,
        mean_a=None,
        mean_b=None,
        diff=mean,
        ci_low=low * size,
        ci_high=high * size,
        p_value=None if reason else mcnemar_mid_p(better, worse),
        confidence=confidence,
        kind=kind,
        method=SAME_SHIFT,
        differing=n,
        better=better,
        worse=worse,
        reason=reason,
    )


def compare_paired(
    a: Sequence[float],
    b: Sequence[float],
    *,
    kind: PairedKind = "mean",
    confidence: float = 0.95,
    method: Method = "t",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedComparison:
    """Means, the mean difference ``b - a``, its interval and p-value, by ``kind``."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    if not a:
        return PairedComparison(0, None, None, None, None, None, None, confidence, kind)
    xs, ys = [float(x) for x in a], [float(y) for y in b]
    diffs = [y - x for x, y in zip(xs, ys, strict=True)]
    if kind == "binary":
        found = _binary(diffs, confidence)
    else:
        found = _means(xs, ys, diffs, kind, confidence, method, resamples, seed)
    return replace(found, mean_a=_mean(xs), mean_b=_mean(ys))


@lru_cache(maxsize=4096)
def could_reject(n: int, differing: int, kind: PairedKind, confidence: float = 0.95) -> bool:
    """Whether ``differing`` of ``n`` examples could show a difference at ``confidence``:
    whether the outcome that puts the interval furthest from 0 (all of them worse by the
    same amount) gives an interval that excludes 0. Below that, no test is reported."""
    if differing <= 0:
        return False
    diffs = [-1.0] * differing + [0.0] * (n - differing)
    if kind == "binary":
        return mcnemar_interval(0, differing, n, confidence)[1] < 0
    if differing == n:  # every example the same shift: read as signs
        return mcnemar_mid_p(0, n) < 1 - confidence
    estimate = t_test(diffs)
    if estimate is None or estimate[1] <= 0:
        return False
    mean, error = _mean(diffs), estimate[1]
    return mean + t_quantile(1 - (1 - confidence) / 2, n - 1) * error < 0


def within(found: PairedComparison, low: float, high: float) -> PairedComparison:
    """``found`` with its interval cut to what the difference can be: ``[low, high]``."""
    if found.ci_low is None or found.ci_high is None:
        return found
    return replace(found, ci_low=max(found.ci_low, low), ci_high=min(found.ci_high, high))


def compare_examples(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    kind: PairedKind = "mean",
    confidence: float = 0.95,
    method: Method = "t",
    seed: int = DEFAULT_SEED,
) -> PairedComparison | None:
    """:func:`compare_paired` over the examples both sides scored (example id -> value),
    paired in id order, so the figures are the same however the results were stored; None
    when no example is shared."""
    shared = sorted(e for e in a if e in b)
    if not shared:
        return None
    return compare_paired(
        [a[e] for e in shared],
        [b[e] for e in shared],
        kind=kind,
        confidence=confidence,
        method=method,
        seed=seed,
    )


# -- many tests at once -----------------------------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (in the given order): reject where below α and
    the family-wise error rate stays at most α."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg q-values (in the given order): the false discovery rate at which
    each row would just be called a difference."""
    count = len(p_values)
    order = sorted(range(count), key=lambda i: p_values[i], reverse=True)
    adjusted = [1.0] * count
    running = 1.0
    for position, index in enumerate(order):
        rank = count - position
        running = min(running, p_values[index] * count / rank)
        adjusted[index] = min(1.0, running)
    return adjusted


def side_interval(
    values: Sequence[float], kind: PairedKind, confidence: float = 0.95
) -> tuple[float, float] | None:
    """One side's interval of its mean over examples: Wilson for 0/1 outcomes, t otherwise;
    None for fewer than two examples (or no spread) of a non-0/1 metric."""
    if kind == "binary" and values:
        return wilson(math.fsum(values), len(values), confidence)
    estimate = t_test(values)
    if estimate is None or estimate[1] <= 0:
        return None
    mean, error = estimate
    quantile = t_quantile(1 - (1 - confidence) / 2, len(values) - 1)
    return mean - quantile * error, mean + quantile * error
