"""Paired statistics for comparing two experiments on the same examples.

Both sides are scored on the same examples, so the unit of comparison is the per-example
difference ``b - a`` (each side's repetitions averaged first: resampling repetitions would
treat them as independent examples and overstate confidence). Everything here is stdlib and
seeded, so the same inputs always give the same interval and p-value.

- :func:`bootstrap_ci`: percentile confidence interval of the mean difference, resampling
  examples with replacement.
- :func:`permutation_test`: two-sided paired sign-flip permutation test of "mean difference
  is 0"; exact when few differences are non-zero, Monte Carlo (with the +1 correction that
  keeps it valid) otherwise.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_SEED = 20240611
DEFAULT_RESAMPLES = 2000
DEFAULT_PERMUTATIONS = 10000
EXACT_LIMIT = 14  # up to 2**14 sign patterns are enumerated exactly
_EPS = 1e-12


@dataclass(frozen=True)
class PairedComparison:
    """One metric, side A against side B, over the ``n`` examples both sides scored."""

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None  # mean of (b - a)
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    confidence: float = 0.95

    @property
    def significant(self) -> bool:
        """True when the test rejects "no difference" at ``1 - confidence``."""
        return self.p_value is not None and self.p_value < 1 - self.confidence


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
    n = len(diffs)
    if all(abs(d - diffs[0]) <= _EPS for d in diffs):
        return (float(diffs[0]), float(diffs[0]))  # every resample has the same mean
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    alpha = (1 - confidence) / 2
    low, high = percentile(means, alpha), percentile(means, 1 - alpha)
    assert low is not None and high is not None  # means is never empty here
    return low, high


def permutation_test(
    diffs: Sequence[float], *, permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED
) -> float:
    """Two-sided p-value of "the mean paired difference is 0" by random sign flips.

    Under the null hypothesis each difference is as likely to be ``+d`` as ``-d``. Zero
    differences do not change under a flip, so only the non-zero ones are permuted.
    """
    nonzero = [d for d in diffs if abs(d) > _EPS]
    if not nonzero:
        return 1.0
    observed = abs(math.fsum(nonzero)) - _EPS * len(nonzero)
    if len(nonzero) <= EXACT_LIMIT:
        extreme = total = 0
        for signs in itertools.product((1, -1), repeat=len(nonzero)):
            total += 1
            if abs(math.fsum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed:
                extreme += 1
        return extreme / total
    rng = random.Random(seed)
    extreme = 0
    for _ in range(permutations):
        flipped = math.fsum(d if rng.random() < 0.5 else -d for d in nonzero)
        if abs(flipped) >= observed:
            extreme += 1
    return (extreme + 1) / (permutations + 1)


def compare_paired(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> PairedComparison:
    """Means, the mean difference ``b - a``, its bootstrap interval and the permutation p."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    if not a:
        return PairedComparison(0, None, None, None, None, None, None, confidence)
    diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    low, high = bootstrap_ci(diffs, confidence=confidence, resamples=resamples, seed=seed)
    return PairedComparison(
        n=len(a),
        mean_a=_mean([float(x) for x in a]),
        mean_b=_mean([float(y) for y in b]),
        diff=_mean(diffs),
        ci_low=low,
        ci_high=high,
        p_value=permutation_test(diffs, permutations=permutations, seed=seed),
        confidence=confidence,
    )


def compare_examples(
    a: Mapping[str, float], b: Mapping[str, float], **options: Any
) -> PairedComparison | None:
    """:func:`compare_paired` over the examples both sides scored (example id -> value),
    paired in id order, so the interval and p-value are the same however the results were
    stored; None when no example is shared."""
    shared = sorted(e for e in a if e in b)
    if not shared:
        return None
    return compare_paired([a[e] for e in shared], [b[e] for e in shared], **options)


def stdev(values: Sequence[float]) -> float | None:
    """Sample standard deviation, the same in any order (``math.fsum``); None for fewer than
    two values, NaN when one is infinite or NaN."""
    if len(values) < 2:
        return None
    if not all(math.isfinite(v) for v in values):
        return math.nan
    mean = _mean(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
