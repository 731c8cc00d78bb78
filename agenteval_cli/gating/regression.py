"""Regressions against a baseline: the gate is a test with a stated false-alarm rate.

Each (target, metric) checked compares the run with the baseline on the examples both
scored, by the construction compare uses for the metric (:mod:`agenteval_cli.gating.margins`),
against the metric's allowed drop (``max_regression``, 0 when unset). The checks of a gate are
one family (:mod:`agenteval_cli.gating.family`): a check fails when its interval, at the
level Holm's step-down tests it, lies wholly beyond the allowed drop; alone in the family
that is the 95% interval compare shows.

Checked: the metrics ``max_regression`` names (one neither side scored is *untested*) and
those the target's ``thresholds`` name that both sides score, or, when none is named, the
headline ones (those the evaluators declare as headline); and always the error rate, example
by example, so a run whose calls error is not a run with fewer examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agenteval_cli.gating.family import CheckOutcome, decide
from agenteval_cli.gating.margins import BaselineCheck, could_fail, too_few
from agenteval_cli.gating.thresholds import metric_key
from agenteval_cli.gating.wording import outcome_line
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.results.sources import ExperimentData

ERROR_RATE = "error_rate"


def checked_keys(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    named: Sequence[str] = (),
) -> list[str]:
    """What the gate checks for ``side``: the keys ``max_regression`` names, and those the
    spec's thresholds name (``named``) that both sides score, else the headline scores
    both sides have; then the error rate."""
    catalog = side.catalog
    shared = side.score_keys() & baseline.score_keys()
    asked = [metric_key(k) for k in max_regression]
    asked += [k for k in map(metric_key, named) if k == ERROR_RATE or k in shared]
    keys = list(dict.fromkeys(asked))
    if not asked and not named:
        keys = [k for k in catalog.ordered(shared) if catalog.info(k).headline]
        if not keys:  # no headline declared: every outcome score both sides have
            keys = [k for k in catalog.ordered(shared) if not catalog.is_quantity(k)]
    if ERROR_RATE not in keys:
        keys.append(ERROR_RATE)
    return keys


def _values(side: ExperimentData, key: str) -> dict[str, float] | None:
    if key == ERROR_RATE:
        return side.per_example_figure("errors")
    return side.per_example(key)


def baseline_checks(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    named: Sequence[str] = (),
) -> tuple[list[BaselineCheck], list[str]]:
    """Every check of ``side`` against ``baseline``, and the failures that need no test (a
    gate that could pair nothing)."""
    catalog = side.catalog
    allowed = {metric_key(k): float(v) for k, v in max_regression.items()}
    keys = checked_keys(side, baseline, max_regression, named)
    checks = []
    for key in keys:
        before, after = _values(baseline, key), _values(side, key)
        shared = sorted(e for e in before or {} if e in (after or {}))
        margin = allowed.get(key, 0.0)
        if before is None or after is None or not shared:
            why = _unpaired(key, before, after, side, baseline)
            checks.append(BaselineCheck(side.target, key, catalog, {}, {}, margin, why))
            continue
        a = {e: before[e] for e in shared}
        b = {e: after[e] for e in shared}
        check = BaselineCheck(side.target, key, catalog, a, b, margin)
        differing = check.worse + check.better
        kind = paired_kind(catalog.info(key), a.values(), b.values())
        if differing and not could_fail(len(shared), differing, kind):
            check = BaselineCheck(
                side.target, key, catalog, a, b, margin, too_few(len(shared), differing)
            )
        checks.append(check)
    scores = [k for k in keys if k != ERROR_RATE]
    only_errors = {metric_key(k) for k in max_regression} == {ERROR_RATE}
    paired = [c for c in checks if c.before]
    if not paired or (not only_errors and all(c.key == ERROR_RATE for c in paired)):
        # a gate that compared no score would pass whatever the run did
        return [c for c in checks if c.key == ERROR_RATE and c.before], [
            _nothing_compared(side, baseline, scores)
        ]
    return checks, []


def _unpaired(
    key: str,
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    side: ExperimentData,
    baseline: ExperimentData,
) -> str:
    """Why ``key`` has no example both sides scored, for the untested line."""
    if not before and not after:
        return "neither the run nor the baseline scored it"
    if before is None and key == ERROR_RATE:
        return (
            f"the baseline {baseline.name!r} keeps no per-example errors (a file written "
            "before they were kept)"
        )
    if not before:
        return f"the baseline {baseline.name!r} has no value for it"
    if not after:
        return "the run has no value for it"
    return "no example scored on both sides"


def check_baseline(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    *,
    named: Sequence[str] = (),
    allow_untested: bool = False,
) -> list[str]:
    """One target's gate against its baseline, Holm across its own checks: the failure
    lines (empty when it passes)."""
    checks, failures = baseline_checks(side, baseline, max_regression, named)
    return failures + [
        outcome_line(o) for o in decide(checks) if fails(o, allow_untested=allow_untested)
    ]


def fails(outcome: CheckOutcome, *, allow_untested: bool) -> bool:
    """Whether ``outcome`` fails the gate: beyond its margin, or untested unless allowed."""
    return outcome.status == "failed" or (outcome.status == "untested" and not allow_untested)


def _nothing_compared(side: ExperimentData, baseline: ExperimentData, keys: list[str]) -> str:
    """Why no score of ``side`` could be paired with ``baseline``'s, for the gate's line."""
    if not keys:
        shared = sorted(baseline.score_keys())[:5]
        why = f"no score key in common (the baseline has {', '.join(shared) or 'none'})"
    elif not set(side.example_ids()) & set(baseline.example_ids()):
        why = "no example id in common (another dataset, or ids that changed)"
    else:
        why = f"no example scored for {', '.join(keys)} on both sides"
    return (
        f"compared nothing with the baseline {baseline.name!r}: {why}; write it again with "
        "'agenteval run SPEC --save-baseline FILE'"
    )
