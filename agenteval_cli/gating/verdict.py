"""The gate's verdict: every threshold and baseline failure of a set of experiments, and
what it decided about each baseline check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.gating.family import CheckOutcome, decide
from agenteval_cli.gating.margins import BaselineCheck
from agenteval_cli.gating.regression import baseline_checks, fails
from agenteval_cli.gating.thresholds import check_thresholds, thresholds_for
from agenteval_cli.gating.wording import outcome_line
from agenteval_cli.results.sources import ExperimentData


@dataclass(frozen=True)
class GateFailure:
    target: str
    key: str  # "threshold", "baseline" (a check beyond its margin) or "untested"
    message: str


@dataclass(frozen=True)
class Verdict:
    """The failures (none: the build passes) and every baseline check's outcome."""

    failures: list[GateFailure] = field(default_factory=list)
    checks: list[CheckOutcome] = field(default_factory=list)


def evaluate(
    sides: Iterable[ExperimentData],
    *,
    thresholds: Mapping[str, Any],
    baselines: Mapping[str, ExperimentData] | None = None,
    max_regression: Mapping[str, float] | None = None,
    allow_untested: bool = False,
) -> list[GateFailure]:
    """Every gate failure of every experiment; an empty list means the build passes."""
    return judge(
        sides,
        thresholds=thresholds,
        baselines=baselines,
        max_regression=max_regression,
        allow_untested=allow_untested,
    ).failures


def judge(
    sides: Iterable[ExperimentData],
    *,
    thresholds: Mapping[str, Any],
    baselines: Mapping[str, ExperimentData] | None = None,
    max_regression: Mapping[str, float] | None = None,
    allow_untested: bool = False,
) -> Verdict:
    """The gate's verdict. The baseline checks of every target are one family, decided
    together (:mod:`agenteval_cli.gating.family`), so the gate's false-alarm rate on a
    change that changed nothing is at most 2.5% however many targets and metrics it
    checks; a check no result could fail fails the gate unless ``allow_untested``."""
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
    outcomes = decide(checks)
    for outcome in outcomes:
        if fails(outcome, allow_untested=allow_untested):
            key = "untested" if outcome.status == "untested" else "baseline"
            failures.append(GateFailure(outcome.check.target, key, outcome_line(outcome)))
    return Verdict(failures, outcomes)
