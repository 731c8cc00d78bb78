"""What the gate says about each baseline check: failed, cleared by Holm's adjustment,
passed, unchanged or untested, with the interval it decided from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agenteval_cli.gating.family import CheckOutcome
from agenteval_cli.gating.margins import ALPHA, BaselineCheck
from agenteval_cli.metrics.stats import PairedComparison
from agenteval_cli.metrics.summary import example_mean


def outcome_line(outcome: CheckOutcome) -> str:
    """One line for ``outcome``, opening with the metric's label."""
    check = outcome.check
    if outcome.status == "untested":
        return f"{check.label} untested: {check.untested}"
    if outcome.status == "unchanged":
        return f"{check.label} unchanged on all {check.n} examples"
    assert outcome.comparison is not None and outcome.confidence is not None
    shown = f"its {_percent(outcome.confidence)} interval {interval(check, outcome.comparison)}"
    tested = (
        f"p = {outcome.p_value:.3g}, Holm-adjusted {outcome.adjusted:.3g} over "
        f"{outcome.family} check(s)"
    )
    if outcome.status == "failed":
        return (
            f"{check.label} regressed: {_change(check)}; {shown} lies wholly beyond the "
            f"allowed drop ({_allowed(check)}); {tested}"
        )
    if outcome.status == "cleared":
        alone = interval(check, check.at(ALPHA))
        return (
            f"{check.label} cleared by Holm's adjustment: {_change(check)}; its 95% interval "
            f"{alone} lies beyond the allowed drop ({_allowed(check)}), but {shown}, at "
            f"Holm's level, does not; {tested}"
        )
    return (
        f"{check.label} passed: {_change(check)}; {shown} does not lie wholly beyond the "
        f"allowed drop ({_allowed(check)}); {tested}"
    )


def interval(check: BaselineCheck, found: PairedComparison) -> str:
    """``[low, high]`` of the run minus the baseline, in the metric's unit."""
    catalog, key = check.catalog, check.key
    low, high = catalog.fmt_diff(key, found.ci_low), catalog.fmt_diff(key, found.ci_high)
    if catalog.is_percent(key):
        return f"[{low.removesuffix(' pp')}, {high.removesuffix(' pp')}] pp"
    return f"[{low}, {high}]"


def _change(check: BaselineCheck) -> str:
    catalog, key, n = check.catalog, check.key, check.n
    before, after = example_mean(check.before), example_mean(check.after)
    diff = None if before is None or after is None else after - before
    return (
        f"{catalog.fmt(key, before)} → {catalog.fmt(key, after)} "
        f"({catalog.fmt_diff(key, diff)} over {n} examples, {check.worse} worse, "
        f"{check.better} better)"
    )


def _allowed(check: BaselineCheck) -> str:
    if not check.margin:
        return "no drop allowed"
    return f"allowed {check.catalog.fmt_diff(check.key, check.margin).lstrip('+−±')}"


def _percent(confidence: float) -> str:
    return f"{confidence * 100:.3g}%"


def gate_summary(outcomes: Sequence[CheckOutcome], *, allow_untested: bool) -> str:
    """What a gate that passed checked: the thresholds, and its baseline checks by outcome."""
    if not outcomes:
        return "thresholds met"
    counts = Counter(o.status for o in outcomes)
    parts = [f"{counts['passed'] + counts['cleared']} tested, none beyond its allowed drop"]
    if counts["cleared"]:
        parts[0] += f" after Holm's adjustment ({counts['cleared']} cleared by it)"
    if counts["unchanged"]:
        parts.append(f"{counts['unchanged']} unchanged on every example")
    if counts["untested"]:
        parts.append(f"{counts['untested']} untested" + (" (allowed)" if allow_untested else ""))
    return f"thresholds met; baseline checks: {', '.join(parts)}"
