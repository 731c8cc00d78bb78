"""How many examples a paired comparison needs, and the smallest difference a given number detects.

Normal approximations, so a plan is a formula and not a simulation; they are slightly
optimistic at small n (the exact McNemar test and the t test need a few more examples) and
are meant for deciding the size of an experiment, not for testing it.

- 0/1 outcomes, one repetition per side: McNemar's test. With discordance ψ = p10 + p01
  (the share of examples where the sides differ) and difference d = p01 − p10, the number of
  examples for a two-sided test at level α with power 1 − β is (Connor 1987, "Sample size for
  testing differences in proportions for the paired-sample design", Biometrics 43:207–211)::

      n = [z_{α/2}·√ψ + z_β·√(ψ − d²)]² / d²

- scores, counts, tokens, cost, rates averaged over repetitions: the paired normal
  approximation ``n = ((z_{α/2} + z_β)·σ_d / d)²``, where σ_d is the sd of the per-example
  difference of the two sides' means. With k repetitions per side, each repetition an
  independent draw around its example's value with the same within-example variance σ_w²
  on both sides, ``σ_d² = σ_between² + σ_w²·2/k``: σ_between² is the variance of the
  examples' true differences, which no number of repetitions reduces.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.8
_STANDARD = NormalDist()
# The formulas run in floats: a count above 2**53 is no longer exact, so none is given.
MAX_EXAMPLES = 2**53
# Below this, 1 - alpha/2 rounds to 1 and the normal quantile is infinite.
MIN_ALPHA = 1e-15


class TooManyExamples(ValueError):
    """The difference is too small for its spread: no count the formula can give."""


def z_values(alpha: float = ALPHA, power: float = POWER) -> tuple[float, float]:
    """z_{α/2} and z_β of a two-sided test at level ``alpha`` with ``power``."""
    if not MIN_ALPHA <= alpha < 1 or not alpha / 2 < power < 1:
        raise ValueError(
            f"alpha must lie in [{MIN_ALPHA:g}, 1) and power in (alpha/2, 1), "
            f"not {alpha:g} and {power:g}"
        )
    return _STANDARD.inv_cdf(1 - alpha / 2), _STANDARD.inv_cdf(power)


def _count(root: float, what: str) -> int:
    """Examples needed, ``root²`` rounded up: at least 1, at most :data:`MAX_EXAMPLES`
    (``root`` is infinite when a tiny difference overflows the ratio)."""
    if not abs(root) <= math.sqrt(MAX_EXAMPLES):  # inf and nan included
        raise TooManyExamples(
            f"{what} needs more than {MAX_EXAMPLES:,} examples, past what the formula counts "
            "exactly"
        )
    return max(1, math.ceil(root * root - 1e-9))


def check_discordance(difference: float, discordance: float) -> None:
    """A McNemar plan needs 0 < |d| ≤ ψ ≤ 1: no difference exceeds the share that differs."""
    if not 0 < discordance <= 1:
        raise ValueError(f"the discordance must lie in (0, 1], not {discordance:g}")
    if not math.isfinite(difference) or difference == 0:
        raise ValueError(f"the difference must be a finite number other than 0, not {difference:g}")
    if abs(difference) > discordance:
        raise ValueError(
            f"a difference of {abs(difference):g} is larger than the discordance "
            f"{discordance:g} (the share of examples where the sides differ)"
        )


def _mcnemar_root(difference: float, discordance: float, z_a: float, z_b: float) -> float:
    """√n of Connor's formula; divided before squaring, so a tiny d gives inf, not 1/0."""
    spread = z_a * math.sqrt(discordance) + z_b * math.sqrt(discordance - difference * difference)
    return spread / abs(difference)


def _mcnemar_n(difference: float, discordance: float, z_a: float, z_b: float) -> float:
    root = _mcnemar_root(difference, discordance, z_a, z_b)
    return root * root


def mcnemar_examples(
    difference: float, discordance: float, *, alpha: float = ALPHA, power: float = POWER
) -> int:
    """Examples for McNemar's test to detect ``difference`` (Connor 1987), rounded up."""
    check_discordance(difference, discordance)
    root = _mcnemar_root(difference, discordance, *z_values(alpha, power))
    return _count(root, f"a difference of {abs(difference):g} at discordance {discordance:g}")


def mcnemar_detectable(
    examples: int, discordance: float, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest |d| McNemar's test detects on ``examples`` at this discordance (the
    formula solved for d by bisection: n(d) falls as d grows); None when even d = ψ, every
    differing example going one way, needs more examples."""
    if not 0 < discordance <= 1:
        raise ValueError(f"the discordance must lie in (0, 1], not {discordance:g}")
    z_a, z_b = z_values(alpha, power)
    if _mcnemar_n(discordance, discordance, z_a, z_b) > examples:
        return None
    low, high = 0.0, discordance
    for _ in range(100):
        middle = (low + high) / 2
        if middle == 0 or _mcnemar_n(middle, discordance, z_a, z_b) > examples:
            low = middle
        else:
            high = middle
    return high


def paired_examples(
    difference: float, sd: float, *, alpha: float = ALPHA, power: float = POWER
) -> int:
    """Examples for a paired test to detect ``difference`` when the per-example
    differences have sd ``sd``, rounded up."""
    if not math.isfinite(difference) or difference == 0:
        raise ValueError(f"the difference must be a finite number other than 0, not {difference:g}")
    if not 0 < sd < math.inf:
        raise ValueError(f"the sd of the per-example differences must be above 0, not {sd:g}")
    z_a, z_b = z_values(alpha, power)
    return _count(
        (z_a + z_b) * sd / abs(difference), f"a difference of {abs(difference):g} at sd {sd:g}"
    )


def paired_detectable(
    examples: int, sd: float, *, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The smallest |d| a paired test detects on ``examples`` with this sd."""
    z_a, z_b = z_values(alpha, power)
    return (z_a + z_b) * sd / math.sqrt(examples)


def difference_sd(between_sd: float, within_sd: float, repetitions: int) -> float:
    """σ_d with ``repetitions`` per side: √(σ_between² + σ_w²·2/k)."""
    return math.sqrt(between_sd**2 + within_sd**2 * 2 / repetitions)


@dataclass(frozen=True)
class PilotSpread:
    """What a pilot says about the per-example difference of two sides."""

    examples: int  # examples both sides scored
    repetitions: float  # mean repetitions per example and side
    sd: float  # sd of the per-example mean differences, at the pilot's repetitions
    within_sd: float | None  # σ_w, pooled over examples and sides; None with 1 repetition
    between_sd: float | None  # σ_between, from sd² − σ_w²·mean(1/k_a + 1/k_b), floored at 0

    def sd_at(self, repetitions: int) -> float | None:
        """σ_d with ``repetitions`` per side; None when the pilot cannot tell (it has one
        repetition, so no within-example part, and a different k is asked)."""
        if self.within_sd is None or self.between_sd is None:
            return self.sd if repetitions == self.repetitions else None
        return difference_sd(self.between_sd, self.within_sd, repetitions)


def _variance(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


def pilot_spread(
    side_a: Mapping[str, Sequence[float]], side_b: Mapping[str, Sequence[float]]
) -> PilotSpread:
    """The spread of a pilot: per example id, each side's repetition values. Only examples
    both sides scored count; at least two are needed."""
    shared = sorted(set(side_a) & set(side_b))
    shared = [e for e in shared if side_a[e] and side_b[e]]
    if len(shared) < 2:
        raise ValueError(f"the pilot has {len(shared)} example(s) both sides scored, not 2+")
    means = {e: (_avg(side_a[e]), _avg(side_b[e])) for e in shared}
    sd = math.sqrt(_variance([b - a for a, b in means.values()]))
    counts = [len(side[e]) for e in shared for side in (side_a, side_b)]
    repetitions = sum(counts) / len(counts)
    within_df = sum(c - 1 for c in counts)
    if within_df == 0:
        return PilotSpread(len(shared), repetitions, sd, None, None)
    squares = math.fsum(
        (v - _avg(side[e])) ** 2 for e in shared for side in (side_a, side_b) for v in side[e]
    )
    within = squares / within_df
    shrink = math.fsum(1 / len(side_a[e]) + 1 / len(side_b[e]) for e in shared) / len(shared)
    between = max(0.0, sd**2 - within * shrink)
    return PilotSpread(len(shared), repetitions, sd, math.sqrt(within), math.sqrt(between))


def _avg(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def pilot_discordance(side_a: Mapping[str, float], side_b: Mapping[str, float]) -> tuple[int, int]:
    """(examples that differ, examples both sides scored) of two 0/1 sides."""
    shared = set(side_a) & set(side_b)
    return sum(side_a[e] != side_b[e] for e in shared), len(shared)
