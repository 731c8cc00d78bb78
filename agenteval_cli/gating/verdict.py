"""The gate's verdict: every threshold and baseline failure of a set of experiments."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agenteval_cli.gating.regression import BaselineCheck, baseline_checks, failed_checks
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
    """Every gate failure of every experiment; an empty list means the build passes. The
    baseline checks of every target are one family, adjusted together (Holm), so the gate's
    false-alarm rate on a change that changed nothing is at most 5% however many targets
    and metrics it checks."""
    failures = []
    checks: list[BaselineCheck] = []
    for side in sides:
        own = thresholds_for(thresholds, side.target, side.catalog)
        for message in check_thresholds(side, own):
            failures.append(GateFailure(side.target, "threshold", message))
        baseline = (baselines or {}).get(side.target)
        if baseline is not None:
            found, problems = baseline_checks(side, baseline, max_regression or {}, list(own))
            checks += found
            failures += [GateFailure(side.target, "baseline", m) for m in problems]
    for check, message in failed_checks(checks):
        failures.append(GateFailure(check.target, "baseline", message))
    return failures
