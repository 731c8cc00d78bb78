"""One metric's paired comparison of two sides: the one computation compare shows and the
gate decides from.

The construction is the metric kind's (:mod:`agenteval_cli.metrics.kinds`), over the
examples both sides scored, and a difference of two rates is cut to ±100 pp. The gate asks
it at the confidence of its own level (:mod:`agenteval_cli.gating.family`); compare at 95%.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.metrics.kinds import PairedKind, is_rate
from agenteval_cli.metrics.registry import MetricInfo
from agenteval_cli.metrics.stats import PairedComparison, compare_examples, within


def paired_comparison(
    info: MetricInfo,
    before: Mapping[str, float],
    after: Mapping[str, float],
    *,
    kind: PairedKind,
    confidence: float = 0.95,
    **extra: Any,
) -> PairedComparison | None:
    """``after`` against ``before`` (example id -> value) by ``kind``'s construction; None
    when no example is shared."""
    found = compare_examples(before, after, kind=kind, confidence=confidence, **extra)
    if found is not None and is_rate(info):  # within ±100 pp, whatever t says
        found = within(found, -1.0, 1.0)
    return found
