"""Per-example checks (JUnit, failure filters, add-failures): one example's score against a
threshold in every repetition. With repetitions an example passes a check when every
repetition passes it (shown as ``c/k``, the repetitions that passed of those scored), as
pass^k reads it: a flaky example is a failing one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.records import OK
from agenteval_cli.gating.thresholds import Threshold, parse_condition, thresholds_for
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.results.sources import ExperimentData, Run


def default_checks(catalog: Catalog = BUILT_IN) -> dict[str, str]:
    """With no threshold, an example fails on the metrics declared with a pass mark
    (outcome scores where one is obvious, such as full routing accuracy)."""
    return catalog.pass_marks()


@dataclass(frozen=True)
class Check:
    """One example x evaluator key against a threshold: ``passes`` of its ``repetitions``
    (those scored, and those without an answer, which fail) met it; ``value`` is the mean
    over the answered ones that scored it (None when none did)."""

    key: str
    threshold: Threshold
    value: float | None
    comment: str
    passes: int = 1
    repetitions: int = 1

    @property
    def passed(self) -> bool:
        """Every repetition passed."""
        return self.repetitions > 0 and self.passes == self.repetitions

    def shown(self, catalog: Catalog = BUILT_IN, value: str | None = None) -> str:
        """The value as a failure states it (``value``: already formatted): ``66.7%``, or
        with repetitions ``1/3 repetitions pass (mean 66.7%)``."""
        text = catalog.fmt(self.key, self.value) if value is None else value
        if self.repetitions == 1:
            return text
        mean = f" (mean {text})" if self.value is not None else ""
        return f"{self.passes}/{self.repetitions} repetitions pass{mean}"


def example_thresholds(
    thresholds: Mapping[str, Threshold], catalog: Catalog = BUILT_IN
) -> dict[str, Threshold]:
    """Thresholds to apply to single examples: the spec's, or the default pass marks of
    the experiment's ``catalog``."""
    if thresholds:
        return {k: t for k, t in thresholds.items() if catalog.info(k).scope != "run"}
    return {k: parse_condition(k, c, catalog) for k, c in default_checks(catalog).items()}


def checks_for(side: ExperimentData, spec_thresholds: Mapping[str, Any]) -> dict[str, Threshold]:
    """The per-example thresholds of ``side``: the spec's that apply to its target, or its
    default pass marks, read by its experiment's catalog."""
    catalog = side.catalog
    return example_thresholds(thresholds_for(spec_thresholds, side.target, catalog), catalog)


def example_checks(
    runs: list[Run], thresholds: Mapping[str, Threshold], catalog: Catalog = BUILT_IN
) -> list[Check]:
    """Checks of one example (all its repetitions) for the keys it was scored on, each
    passing when every repetition does; a conversation's own key (``resolved``) only where
    it was scored: a single-turn example that errored has none to fail."""
    checks = []
    for key, threshold in thresholds.items():
        if catalog.info(key).level == "conversation" and not any(key in r.scores for r in runs):
            continue
        # a repetition without an answer (it raised, or stopped at interrupt()) fails the
        # example whatever its trace scored: it is never a success
        values = [float(v) for r in runs if r.status == OK and (v := r.scores.get(key)) is not None]
        errors = [_failure(r) for r in runs if r.status != OK]
        if not values and not errors:
            continue  # not scored on this key at all
        comments = list(dict.fromkeys(c for r in runs if (c := r.comments.get(key))))
        comments += list(dict.fromkeys(errors))
        value = math.fsum(values) / len(values) if values else None
        passes = sum(1 for v in values if threshold.passes(v))
        repetitions = len(values) + len(errors)
        checks.append(Check(key, threshold, value, "; ".join(comments), passes, repetitions))
    return checks


def failed_examples(side: ExperimentData, thresholds: Mapping[str, Threshold]) -> list[str]:
    """Ids of examples that errored, stopped at interrupt() or failed a per-example check,
    in dataset order."""
    applied = example_thresholds(thresholds, side.catalog)
    failed = []
    for example_id, runs in side.by_example().items():
        unanswered = any(r.status != OK for r in runs)
        checks = example_checks(runs, applied, side.catalog)
        if unanswered or any(not c.passed for c in checks):
            failed.append(example_id)
    return failed


def no_answer(run: Run) -> str:
    """Why a run has no answer: its error, or the interrupt() its graph stopped at."""
    if run.error is not None:
        return run.error
    return f"interrupted: stopped at interrupt() waiting for {run.interrupt}"


def _failure(run: Run) -> str:
    """Why a repetition without an answer fails its example's checks."""
    return f"error: {run.error}" if run.error is not None else no_answer(run)
