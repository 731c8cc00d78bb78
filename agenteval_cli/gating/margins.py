"""One baseline check's test: is the run worse than the baseline by more than the allowed
drop?

The check reads the comparison compare shows (:func:`agenteval_cli.metrics.paired.
paired_comparison`, the same construction on the same examples) at the confidence of a
one-sided level: the two-sided ``1 − 2·level`` interval, whose worse end is the one-sided
bound. The check fails at that level exactly when the interval lies wholly beyond the margin;
its p-value is the smallest level at which it would, so p and interval never disagree.

A check no result could fail is *untested*: one that changed on too few examples for even
all of them worse, by the same amount, to put the interval beyond a drop of 0 at one-sided
2.5% (for a 0/1 outcome, 4 or fewer differing examples), or one the two sides do not both
score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.distributions import mid_p_above, t_upper
from agenteval_cli.metrics.kinds import PairedKind, paired_kind
from agenteval_cli.metrics.paired import paired_comparison
from agenteval_cli.metrics.stats import (
    SAME_SHIFT,
    PairedComparison,
    could_reject,
    t_test,
)

ALPHA = 0.025  # one-sided: the side of a two-sided 95% interval
_EPS = 1e-12


@dataclass(frozen=True)
class BaselineCheck:
    """One (target, metric) of the gate against its baseline, on the examples both scored."""

    target: str
    key: str
    catalog: Catalog  # how the key reads: label, direction, format
    before: Mapping[str, float] = field(repr=False)  # the baseline, per example
    after: Mapping[str, float] = field(repr=False)  # the run, per example
    margin: float = 0.0  # the allowed drop (max_regression; 0 when unset)
    untested: str | None = None  # why no result could fail it; None when it is tested

    @property
    def label(self) -> str:
        return self.catalog.label(self.key)

    @property
    def higher_is_better(self) -> bool:
        return self.catalog.higher_is_better(self.key)

    @property
    def kind(self) -> PairedKind:
        return paired_kind(self.catalog.info(self.key), self.before.values(), self.after.values())

    @property
    def n(self) -> int:
        return len(self.before)

    def drops(self) -> list[float]:
        """Per example, how much worse the run is (negative where it is better)."""
        sign = -1.0 if self.higher_is_better else 1.0
        return [sign * (self.after[e] - self.before[e]) for e in sorted(self.before)]

    @property
    def worse(self) -> int:
        return sum(1 for d in self.drops() if d > _EPS)

    @property
    def better(self) -> int:
        return sum(1 for d in self.drops() if d < -_EPS)

    def at(self, level: float) -> PairedComparison:
        """The run against the baseline with the two-sided ``1 − 2·level`` interval."""
        found = paired_comparison(
            self.catalog.info(self.key),
            self.before,
            self.after,
            kind=self.kind,
            confidence=1 - 2 * level,
        )
        assert found is not None  # a tested check pairs at least one example
        return found

    def beyond(self, level: float) -> bool:
        """Whether the interval at ``level`` lies wholly beyond the allowed drop."""
        return beyond_margin(self.at(level), self.higher_is_better, self.margin)

    def p_value(self) -> float:
        """The smallest one-sided level at which the check fails: the test of "the drop is
        at most the margin" whose rejection is the interval lying beyond it."""
        if self.kind == "binary" and self.margin == 0:
            return mid_p_above(self.worse, self.worse + self.better, 0.5)
        estimate = t_test(self.drops())
        shift = self.at(ALPHA).method == SAME_SHIFT
        if not shift and estimate is not None and estimate[1] > 0:
            mean, error = estimate
            return t_upper((mean - self.margin) / error, self.n - 1)
        return self._inverted()

    def _inverted(self) -> float:
        """The level where the interval's worse end meets the margin, by bisection (the
        constructions without a closed-form p: a 0/1 outcome with a margin, a constant
        shift)."""
        low, high = 1e-12, 0.5
        if not self.beyond(high):
            return 1.0
        if self.beyond(low):
            return low
        for _ in range(50):
            middle = (low * high) ** 0.5 if high / low > 4 else (low + high) / 2
            if self.beyond(middle):
                high = middle
            else:
                low = middle
        return high


def beyond_margin(found: PairedComparison, higher_is_better: bool, margin: float) -> bool:
    """Whether ``found``'s interval lies wholly on the worse side of ``−margin``."""
    if found.ci_low is None or found.ci_high is None:
        return False
    if higher_is_better:
        return found.ci_high < -margin
    return found.ci_low > margin


def could_fail(n: int, differing: int, kind: PairedKind) -> bool:
    """Whether ``differing`` of ``n`` examples, all worse by the same amount (the outcome
    that puts the interval furthest from 0), would fail a check with no margin at
    one-sided 2.5%: compare's own rule for a tested comparison (the two-sided 95%)."""
    return could_reject(n, differing, kind, 1 - 2 * ALPHA)


def too_few(n: int, differing: int) -> str:
    return (
        f"{differing} of {n} examples differ: too few for any result to fail the check "
        "(even all of them worse would not)"
    )
