"""Which paired construction a metric gets: the one place that decides it.

- ``binary``: an outcome whose every per-example value, on both sides, is 0 or 1 (one
  repetition, or repetitions that all agreed): McNemar's test and its interval.
- ``skewed``: a spend (a metric declared in money), whose few expensive examples can carry
  the mean: the paired t, with the median ratio and the concentration flag beside it.
- ``mean``: everything else (scores, rates over repetitions, counts, tokens): the paired t.

The declaration says what a metric *is* (an outcome or a quantity, its format); the data say
whether an outcome came out 0/1 on every example.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from agenteval_cli.metrics.registry import MetricInfo

PairedKind = Literal["binary", "mean", "skewed"]


def paired_kind(info: MetricInfo, *values: Iterable[float]) -> PairedKind:
    """The construction for ``info``'s key, given each side's per-example values."""
    if info.format == "money":
        return "skewed"
    if info.kind == "outcome" and info.format == "percent":
        seen = False
        for side in values:
            for value in side:
                seen = True
                if value not in (0.0, 1.0):
                    return "mean"
        return "binary" if seen else "mean"
    return "mean"


def is_rate(info: MetricInfo) -> bool:
    """A 0–1 rate (an outcome in percent): its mean lies in [0, 1], a difference of two in
    [-1, 1], so an interval past those bounds is cut to them (no coverage is lost)."""
    return info.kind == "outcome" and info.format == "percent"
