"""The gate's verdict: every threshold and baseline failure of a set of experiments."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agenteval_cli.gating.regression import check_baseline
from agenteval_cli.gating.thresholds import check_thresholds, thresholds_for
from agenteval_cli.results.sources import ExperimentData


@dataclass(frozen=True)
class GateFailure:
    target: str
    key: str
    message: str


def evaluate(
    sides: Iterable[ExperimentData],
    *,
    thresholds: Mapping[str, Any],
    baselines: Mapping[str, ExperimentData] | None = None,
    max_regression: Mapping[str, float] | None = None,
) -> list[GateFailure]:
    """Every gate failure of every experiment; an empty list means the build passes."""
    failures = []
    for side in sides:
        for message in check_thresholds(
            side, thresholds_for(thresholds, side.target, side.catalog)
        ):
            failures.append(GateFailure(side.target, "threshold", message))
        baseline = (baselines or {}).get(side.target)
        if baseline is not None:
            for message in check_baseline(side, baseline, max_regression or {}):
                failures.append(GateFailure(side.target, "baseline", message))
    return failures
