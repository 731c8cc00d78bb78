"""Thresholds: conditions on an experiment's metrics, from the spec's ``thresholds:``.

``thresholds`` map a metric (or an evaluator name, meaning its headline key) to a condition
such as ``">= 0.9"``; a mapping under a target's name applies to that target only and
overrides the shared entry. A bare number means "at least", or "at most" for a metric where
lower is better.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import did_you_mean
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.registry import ALIASES
from agenteval_cli.results.sources import ExperimentData
from agenteval_cli.spec.conditions import OPS, parse_condition_text

if TYPE_CHECKING:
    from agenteval_cli.spec.model import Spec


@dataclass(frozen=True)
class Threshold:
    key: str
    op: str
    bound: float

    def passes(self, value: float) -> bool:
        return OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        shown = f"{self.bound:g}"
        if "e" in shown and math.isfinite(self.bound):  # never 5e-05 for a dollar bound
            shown = format(Decimal(repr(self.bound)), "f")
        return f"{self.op} {shown}"


def metric_key(name: str) -> str:
    """A threshold's metric: the key itself, or an evaluator name's headline key."""
    return ALIASES.get(name, name)


def parse_condition(key: str, text: Any, catalog: Catalog = BUILT_IN) -> Threshold:
    """``">= 0.9"`` -> Threshold; a bare number means "at least" or, for a metric the
    experiment's ``catalog`` says is lower-is-better (costs), "at most"."""
    op, bound = parse_condition_text(text)
    key = metric_key(key)
    return Threshold(key, op or (">=" if catalog.higher_is_better(key) else "<="), bound)


def thresholds_for(
    spec_thresholds: Mapping[str, Any], target: str, catalog: Catalog = BUILT_IN
) -> dict[str, Threshold]:
    """The thresholds that apply to ``target``: shared entries, then its own on top, read
    by the ``catalog`` of its experiment."""
    shared = {k: v for k, v in spec_thresholds.items() if not isinstance(v, dict)}
    own = spec_thresholds.get(target)
    merged = {**shared, **(own if isinstance(own, dict) else {})}
    parsed = {}
    for name, condition in merged.items():
        threshold = parse_condition(name, condition, catalog)
        parsed[threshold.key] = threshold
    return parsed


def experiment_metrics(side: ExperimentData) -> dict[str, float | None]:
    """The experiment's metrics as the run table and ``--json`` compute them: its summary."""
    return side.summary().metrics()


def check_thresholds(side: ExperimentData, thresholds: Mapping[str, Threshold]) -> list[str]:
    """One message per failed threshold; a metric the experiment lacks fails too."""
    metrics = experiment_metrics(side)
    catalog = side.catalog
    failures = []
    for key, threshold in thresholds.items():
        value = metrics.get(key)
        if value is None:
            failures.append(f"{catalog.label(key)} has no value (threshold {threshold})")
        elif not threshold.passes(value):
            gap = value - threshold.bound
            failures.append(
                f"{catalog.label(key)} = {catalog.fmt(key, value)}, threshold {threshold} "
                f"(off by {catalog.fmt_diff(key, gap)})"
            )
    return failures


def known_metric_keys(evaluators: Iterable[Any]) -> list[str]:
    """Metric keys a threshold may name for a spec with these evaluator items (names or
    spec entries): each one's name and keys, the run's own figures and the conversation
    metrics (scored on every conversation row, whether the spec names them or not)."""
    from agenteval_cli.evaluators.registry import entry_parts, spec_catalog

    items = list(evaluators)
    keys = [*BUILT_IN.run_metrics(), *BUILT_IN.conversation_metrics()]
    for item in items:
        keys += [entry_parts(item)[0], *spec_catalog([item]).keys]
    return list(dict.fromkeys(keys))


def check_spec_metrics(spec: Spec) -> None:
    """A UserError at its line for a threshold or ``max_regression`` entry naming a metric
    that no evaluator of the spec produces (the spec itself checks the conditions' form)."""
    targets = [t.name for t in spec.targets]
    known = known_metric_keys(spec.evaluators)

    def check(key: str, at: tuple[str, ...]) -> None:
        if metric_key(key) not in known and key not in known:
            hint = did_you_mean(key, known + targets) or "metrics: " + ", ".join(known)
            raise spec.error_at(at, f"unknown metric {key!r}", hint=hint, about_key=True)

    for key, value in spec.thresholds.items():
        if isinstance(value, dict):
            for name in value:
                check(str(name), ("thresholds", key, name))
        else:
            check(str(key), ("thresholds", key))
    for key in spec.max_regression:
        check(str(key), ("max_regression", key))
        declared = BUILT_IN.info(metric_key(str(key)))
        if declared.scope == "run" and declared.paired != "errors":
            raise spec.error_at(
                ("max_regression", key),
                f"{key!r} is a figure of the whole run, not of each example: the baseline "
                "gate cannot pair it",
                hint="gate it with 'thresholds:' instead",
                about_key=True,
            )
    for key in spec.min_kappa:
        check(str(key), ("min_kappa", key))
