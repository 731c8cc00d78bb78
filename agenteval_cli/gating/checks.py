"""The CI gate: thresholds on an experiment's metrics and regressions against a baseline.

``thresholds`` in the spec map a metric (or an evaluator name, meaning its headline key)
to a condition such as ``">= 0.9"``; a mapping under a target's name applies to that target
only and overrides the shared entry. A baseline is a previous experiment (a ``--save-baseline``
file, a ``--json`` export or a stored experiment); a metric fails the gate when it is worse
than the baseline by more than its ``max_regression`` *and* the paired permutation test says
the change is real, so noise alone never breaks a build.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval_cli.metrics import info as metricinfo
from agenteval_cli.metrics.summary import percentile
from agenteval_cli.results.sources import BASELINE_FORMAT, ExperimentData, Run

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_CONDITION = re.compile(r"\s*(>=|<=|==|>|<)?\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*")
# With no threshold, an example fails on these (outcome scores with an obvious pass mark).
DEFAULT_EXAMPLE_CHECKS = {"routing_accuracy": ">= 1", "resolution_coverage": ">= 1"}


@dataclass(frozen=True)
class Threshold:
    key: str
    op: str
    bound: float

    def passes(self, value: float) -> bool:
        return _OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        return f"{self.op} {self.bound:g}"


def metric_key(name: str) -> str:
    """A threshold's metric: the key itself, or an evaluator name's headline key."""
    return metricinfo.ALIASES.get(name, name)


def parse_condition(key: str, text: Any) -> Threshold:
    """``">= 0.9"`` -> Threshold; a bare number means "at least" or, for costs, "at most"."""
    if isinstance(text, bool):
        raise ValueError(f"expected a condition such as '>= 0.9', got {text!r}")
    if isinstance(text, int | float):
        text = str(text)
    match = _CONDITION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"expected a condition such as '>= 0.9' or '<= 0.002', got {text!r}")
    key = metric_key(key)
    op = match.group(1) or (">=" if metricinfo.higher_is_better(key) else "<=")
    return Threshold(key, op, float(match.group(2)))


def thresholds_for(spec_thresholds: Mapping[str, Any], target: str) -> dict[str, Threshold]:
    """The thresholds that apply to ``target``: shared entries, then its own on top."""
    shared = {k: v for k, v in spec_thresholds.items() if not isinstance(v, dict)}
    own = spec_thresholds.get(target)
    merged = {**shared, **(own if isinstance(own, dict) else {})}
    parsed = {}
    for name, condition in merged.items():
        threshold = parse_condition(name, condition)
        parsed[threshold.key] = threshold
    return parsed


def experiment_metrics(side: ExperimentData) -> dict[str, float | None]:
    """Means over the runs that did not error, like the table's, plus error rate and latency."""
    sums: dict[str, list[float]] = {}
    for run in side.runs:
        if run.error is not None:
            continue
        for key, value in run.scores.items():
            if value is not None:
                sums.setdefault(key, []).append(float(value))
    values: dict[str, float | None] = {k: math.fsum(v) / len(v) for k, v in sums.items()}
    if side.runs:
        values["error_rate"] = sum(r.error is not None for r in side.runs) / len(side.runs)
        if side.has_traces:
            latencies = [r.latency_s for r in side.runs]
            values["latency_p50_s"] = percentile(latencies, 50)
            values["latency_p95_s"] = percentile(latencies, 95)
    from agenteval_cli.report.comparison import consistency

    share = consistency(side)
    if share is not None:
        values["consistency"] = share
    return values


@dataclass(frozen=True)
class GateFailure:
    target: str
    key: str
    message: str


def check_thresholds(side: ExperimentData, thresholds: Mapping[str, Threshold]) -> list[str]:
    """One message per failed threshold; a metric the experiment lacks fails too."""
    metrics = experiment_metrics(side)
    failures = []
    for key, threshold in thresholds.items():
        value = metrics.get(key)
        if value is None:
            failures.append(f"{metricinfo.label(key)} has no value (threshold {threshold})")
        elif not threshold.passes(value):
            gap = value - threshold.bound
            failures.append(
                f"{metricinfo.label(key)} = {metricinfo.fmt(key, value)}, threshold {threshold} "
                f"(off by {metricinfo.fmt_diff(key, gap)})"
            )
    return failures


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
    from agenteval_cli.metrics.stats import compare_paired

    allowed = {metric_key(k): float(v) for k, v in max_regression.items()}
    keys = list(allowed) or metricinfo.ordered(side.score_keys() & baseline.score_keys())
    failures = []
    extra = {} if seed is None else {"seed": seed}
    for key in keys:
        old, new = baseline.per_example(key), side.per_example(key)
        shared = [e for e in baseline.example_ids() if e in old and e in new]
        if not shared:
            continue
        paired = compare_paired([old[e] for e in shared], [new[e] for e in shared], **extra)
        diff = paired.diff
        if diff is None:  # only without shared examples, which were skipped above
            continue
        worse = -diff if metricinfo.higher_is_better(key) else diff
        if paired.significant and worse > allowed.get(key, 0.0) + 1e-12:
            failures.append(
                f"{metricinfo.label(key)} regressed: {metricinfo.fmt(key, paired.mean_a)} → "
                f"{metricinfo.fmt(key, paired.mean_b)} ({metricinfo.fmt_diff(key, paired.diff)}, "
                f"95% CI [{metricinfo.fmt_diff(key, paired.ci_low)}, "
                f"{metricinfo.fmt_diff(key, paired.ci_high)}], p = {paired.p_value:.3g}; "
                f"allowed drop {metricinfo.fmt(key, allowed.get(key, 0.0))})"
            )
    return failures


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
        for message in check_thresholds(side, thresholds_for(thresholds, side.target)):
            failures.append(GateFailure(side.target, "threshold", message))
        baseline = (baselines or {}).get(side.target)
        if baseline is not None:
            for message in check_baseline(side, baseline, max_regression or {}):
                failures.append(GateFailure(side.target, "baseline", message))
    return failures


# per-example checks (JUnit, failure filters, add-failures) ---------------------------------


@dataclass(frozen=True)
class Check:
    """One example x evaluator key against a threshold, averaged over its repetitions."""

    key: str
    threshold: Threshold
    value: float | None
    comment: str

    @property
    def passed(self) -> bool:
        return self.value is not None and self.threshold.passes(self.value)


def example_thresholds(thresholds: Mapping[str, Threshold]) -> dict[str, Threshold]:
    """Thresholds to apply to single examples: the spec's, or the default pass marks."""
    if thresholds:
        return {
            k: t
            for k, t in thresholds.items()
            if k not in ("error_rate", "consistency") and not k.startswith("latency")
        }
    defaults = {k: parse_condition(k, c) for k, c in DEFAULT_EXAMPLE_CHECKS.items()}
    defaults["ping_pong"] = Threshold("ping_pong", "<=", 0)
    return defaults


def example_checks(runs: list[Run], thresholds: Mapping[str, Threshold]) -> list[Check]:
    """Checks of one example (all its repetitions) for the keys it was scored on."""
    checks = []
    for key, threshold in thresholds.items():
        values = [
            float(v) for r in runs if r.error is None and (v := r.scores.get(key)) is not None
        ]
        errors = [r.error for r in runs if r.error is not None]
        if not values and not errors:
            continue  # not scored on this key at all
        comments = list(dict.fromkeys(c for r in runs if (c := r.comments.get(key))))
        comments += [f"error: {e}" for e in dict.fromkeys(errors)]
        value = math.fsum(values) / len(values) if values and not errors else None
        checks.append(Check(key, threshold, value, "; ".join(comments)))
    return checks


def failed_examples(side: ExperimentData, thresholds: Mapping[str, Threshold]) -> list[str]:
    """Ids of examples that errored or failed a per-example check, in dataset order."""
    applied = example_thresholds(thresholds)
    failed = []
    for example_id, runs in side.by_example().items():
        if any(r.error for r in runs) or any(not c.passed for c in example_checks(runs, applied)):
            failed.append(example_id)
    return failed


# baselines -----------------------------------------------------------------------------------


def baseline_data(sides: Iterable[ExperimentData], *, git_commit: str | None = None) -> dict:
    """A small JSON a repository can commit: metrics and per-example scores per target."""
    experiments = []
    for side in sides:
        keys = metricinfo.ordered(side.score_keys())
        per_key = {k: side.per_example(k) for k in keys}
        scores = {
            eid: {k: round(per_key[k][eid], 9) for k in keys if eid in per_key[k]}
            for eid in side.example_ids()
        }
        metrics = {k: v for k, v in experiment_metrics(side).items() if not k.startswith("lat")}
        experiments.append(
            {
                "name": side.name,
                "target": side.target,
                "dataset_hash": side.dataset_hash,
                "repetitions": side.repetitions,
                "metrics": metrics,
                "scores": scores,
            }
        )
    return {
        "format": BASELINE_FORMAT,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit,
        "experiments": experiments,
    }


def save_baseline(path: Path, sides: Iterable[ExperimentData], *, git_commit: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    data = baseline_data(sides, git_commit=git_commit)
    from agenteval_cli.report.json_report import strict_json  # null for NaN, as --json

    tmp.write_text(strict_json(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


# spec validation -----------------------------------------------------------------------------


def known_metric_keys(evaluator_names: Iterable[str]) -> list[str]:
    """Metric keys a threshold may name for a spec with these evaluators."""
    from agenteval_cli.evaluators import REGISTRY
    from agenteval_cli.metrics.summary import METRIC_KEYS

    keys = [*METRIC_KEYS, "consistency"]
    for name in evaluator_names:
        info = REGISTRY.get(name)
        if info is not None:
            keys += [name, *info.keys]
    return list(dict.fromkeys(keys))


def validate_spec_thresholds(
    thresholds: Mapping[str, Any],
    max_regression: Mapping[str, Any],
    *,
    targets: list[str],
    evaluators: list[str],
) -> None:
    """Raise SpecValueError (with the key path) for an unknown metric or a bad condition."""
    from agenteval_cli.core.errors import did_you_mean
    from agenteval_cli.spec.errors import SpecValueError

    known = known_metric_keys(evaluators)

    def check_key(key: str, at: tuple[str, ...]) -> None:
        if metric_key(key) not in known and key not in known:
            hint = did_you_mean(key, known + targets) or "metrics: " + ", ".join(known)
            raise SpecValueError(f"unknown metric {key!r}", hint=hint, at=at, about_key=True)

    for key, value in thresholds.items():
        entries: list[tuple[Any, Any, tuple[str, ...]]]
        if isinstance(value, dict):
            if key not in targets:
                raise SpecValueError(
                    f"{key!r} is not a target, so it cannot hold thresholds",
                    hint=did_you_mean(key, targets) or f"targets: {', '.join(targets)}",
                    at=("thresholds", key),
                    about_key=True,
                )
            entries = [(k, v, ("thresholds", key, k)) for k, v in value.items()]
        else:
            entries = [(key, value, ("thresholds", key))]
        for name, condition, at in entries:
            check_key(str(name), at)
            try:
                parse_condition(str(name), condition)
            except ValueError as exc:
                raise SpecValueError(str(exc), at=at) from None
    for key in max_regression:
        check_key(str(key), ("max_regression", key))
