"""Regressions against a baseline: a metric fails the gate when it is worse than the
baseline by more than its ``max_regression`` *and* the paired permutation test says the
change is real, so noise alone never breaks a build."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.gating.thresholds import metric_key
from agenteval_cli.results.sources import ExperimentData


def check_baseline(
    side: ExperimentData,
    baseline: ExperimentData,
    max_regression: Mapping[str, float],
    *,
    seed: int | None = None,
) -> list[str]:
    """Metrics significantly worse than the baseline by more than their allowed drop.

    Checked: the keys of ``max_regression``, or, when it is empty, every score both sides
    have (with no drop allowed).
    """
    from agenteval_cli.metrics.stats import compare_examples

    catalog = side.catalog  # the run's declarations: what its metrics mean now
    allowed = {metric_key(k): float(v) for k, v in max_regression.items()}
    keys = list(allowed) or catalog.ordered(side.score_keys() & baseline.score_keys())
    failures = []
    extra: dict[str, Any] = {} if seed is None else {"seed": seed}
    compared = 0
    for key in keys:
        paired = compare_examples(baseline.per_example(key), side.per_example(key), **extra)
        if paired is None or paired.diff is None:  # no example shared
            continue
        compared += 1
        diff = paired.diff
        worse = -diff if catalog.higher_is_better(key) else diff
        if paired.significant and worse > allowed.get(key, 0.0) + 1e-12:
            failures.append(
                f"{catalog.label(key)} regressed: {catalog.fmt(key, paired.mean_a)} → "
                f"{catalog.fmt(key, paired.mean_b)} ({catalog.fmt_diff(key, paired.diff)}, "
                f"95% CI [{catalog.fmt_diff(key, paired.ci_low)}, "
                f"{catalog.fmt_diff(key, paired.ci_high)}], p = {paired.p_value:.3g}; "
                f"allowed drop {catalog.fmt(key, allowed.get(key, 0.0))})"
            )
    if not compared:  # a gate that compared nothing would pass whatever the run did
        failures.append(_nothing_compared(side, baseline, keys))
    return failures


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
