"""Regressions against a baseline: the gate is a test with a stated false-alarm rate.

Each (target, metric) checked is a one-sided test of "the run is worse than the baseline by
more than the metric's allowed drop" (``max_regression``, 0 when unset), on the examples both
scored, with the paired construction of the metric's kind
(:func:`agenteval_cli.metrics.stats.worse_beyond_margin`): a check fails when the bound of
the drop lies beyond the allowed drop. The bound is the one-sided 97.5% one, the low end of
the drop's two-sided 95% interval, so the gate fails a metric only when the interval
compare shows lies wholly beyond the margin (the convention for non-inferiority margins,
ICH E9: one-sided 2.5%). Holm's step-down adjustment runs across every check of the gate
(every target, every metric), so a run that changed nothing fails at most 2.5% of the time,
within the 5% the docs promise, whatever the number of checks.

Checked: the metrics the spec names (``max_regression`` and the target's ``thresholds``), or,
when it names none, the headline ones (those the evaluators declare as headline); and
always the error rate, example by example, so a run whose calls error is not a run with
fewer examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agenteval_cli.gating.thresholds import metric_key
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.metrics.stats import holm, worse_beyond_margin
from agenteval_cli.results.sources import ExperimentData

ALPHA = 0.025  # one-sided: the side of a two-sided 95% interval
CONFIDENCE = 1 - ALPHA
ERROR_RATE = "error_rate"


@dataclass(frozen=True)
class BaselineCheck:
    """One (target, metric) test against the baseline, before the family is adjusted."""

    target: str
    key: str
    label: str
    p_value: float | None  # one-sided; None when there was nothing to test
    before: str  # the baseline's mean, formatted
    after: str  # the run's mean, formatted
    change: str  # the mean paired difference, formatted
    bound: str  # the one-sided 97.5% bound of the drop (its 95% interval's end), formatted
    allowed: str  # the allowed drop, formatted
    n: int  # examples paired

    def message(self, adjusted: float, checks: int) -> str:
        return (
            f"{self.label} regressed: {self.before} → {self.after} ({self.change} over "
            f"{self.n} examples; its 95% interval puts it at least {self.bound} worse, "
            f"{self.allowed}; p = {self.p_value:.3g}, Holm-adjusted {adjusted:.3g} "
            f"over {checks} check(s))"
        )


def checked_keys(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    named: Sequence[str] = (),
) -> list[str]:
    """What the gate checks for ``side``: the keys ``max_regression`` and the spec's
    thresholds name (``named``; those no result of either side scored left out), else the
    headline scores both sides have; then the error rate."""
    catalog = side.catalog
    shared = side.score_keys() & baseline.score_keys()
    asked = [metric_key(k) for k in [*max_regression, *named]]
    keys = [k for k in dict.fromkeys(asked) if k == ERROR_RATE or k in shared]
    if not asked:
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
    """Every check of ``side`` against ``baseline`` (unadjusted), and the failures that
    need no test (a gate that could pair nothing)."""
    catalog = side.catalog
    allowed = {metric_key(k): float(v) for k, v in max_regression.items()}
    keys = checked_keys(side, baseline, max_regression, named)
    checks = []
    for key in keys:
        before, after = _values(baseline, key), _values(side, key)
        if before is None or after is None:  # a baseline file written without errors
            continue
        shared = sorted(e for e in before if e in after)
        if not shared:
            continue
        a, b = [before[e] for e in shared], [after[e] for e in shared]
        info = catalog.info(key)
        margin = allowed.get(key, 0.0)
        p, bound = worse_beyond_margin(
            a,
            b,
            kind=paired_kind(info, a, b),
            higher_is_better=info.higher_is_better,
            margin=margin,
            confidence=CONFIDENCE,
        )
        checks.append(_check(side.target, key, catalog, a, b, p, bound, margin))
    scores = [k for k in keys if k != ERROR_RATE]
    only_errors = {metric_key(k) for k in max_regression} == {ERROR_RATE}
    if not checks or (not only_errors and all(c.key == ERROR_RATE for c in checks)):
        # a gate that compared no score would pass whatever the run did
        return checks, [_nothing_compared(side, baseline, scores)]
    return checks, []


def _check(
    target: str,
    key: str,
    catalog: Catalog,
    a: Sequence[float],
    b: Sequence[float],
    p: float | None,
    bound: float | None,
    margin: float,
) -> BaselineCheck:
    n = len(a)
    mean_a, mean_b = sum(a) / n, sum(b) / n
    return BaselineCheck(
        target=target,
        key=key,
        label=catalog.label(key),
        p_value=p,
        before=catalog.fmt(key, mean_a),
        after=catalog.fmt(key, mean_b),
        change=catalog.fmt_diff(key, mean_b - mean_a),
        bound=_size(catalog, key, bound),
        allowed=f"allowed {_size(catalog, key, margin)}" if margin else "no drop allowed",
        n=n,
    )


def _size(catalog: Catalog, key: str, value: float | None) -> str:
    """An unsigned amount in the metric's unit (percentage points for a rate)."""
    return catalog.fmt_diff(key, value).lstrip("+−±")


def failed_checks(checks: Sequence[BaselineCheck]) -> list[tuple[BaselineCheck, str]]:
    """The checks Holm's step-down rejects at one-sided 2.5% across the whole family, with
    their failure lines."""
    tested = [c for c in checks if c.p_value is not None]
    adjusted = holm([c.p_value for c in tested if c.p_value is not None])
    return [
        (check, check.message(q, len(tested)))
        for check, q in zip(tested, adjusted, strict=True)
        if q < ALPHA
    ]


def check_baseline(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    *,
    named: Sequence[str] = (),
) -> list[str]:
    """One target's gate against its baseline, Holm across its own checks: the failure
    lines (empty when it passes)."""
    checks, failures = baseline_checks(side, baseline, max_regression, named)
    return failures + [message for _, message in failed_checks(checks)]


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
