"""The statistical comparison of experiments on one dataset: what compare and the reports show.

Every side after the first is compared with the first on the examples both scored: mean per
side, the paired difference with a bootstrap interval and a permutation p-value. Around the
numbers: the examples where the sides disagree most, a routing confusion matrix per side
and the distribution of handoff chain lengths.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from agenteval_cli.core.errors import UserError
from agenteval_cli.metrics import info as metricinfo
from agenteval_cli.metrics.stats import PairedComparison, compare_paired, stdev
from agenteval_cli.report.agents import AgentUsage, aggregate
from agenteval_cli.results.sources import ExperimentData, Run, consistency

NONE = "(none)"
NA = "n/a"  # a mean no result gave (tokens a model did not report): unknown, not zero


def fmt_mean(key: str, value: float | None) -> str:
    """A side's mean as compare and the reports show it; n/a when no result gave one."""
    return NA if value is None else metricinfo.fmt(key, value)


@dataclass
class MetricRow:
    key: str
    means: list[float | None]  # per side, over all the examples it scored
    spreads: list[float | None]  # per side: sd of the per-repetition means
    vs_first: list[PairedComparison | None]  # per side after the first

    @property
    def label(self) -> str:
        return metricinfo.label(self.key)

    # The second side against the first, the common case of two (``vs_first`` has them all).

    @property
    def metric(self) -> str:
        return self.key

    @property
    def delta(self) -> float | None:
        """Mean per-example difference, second side minus first."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else first.diff

    @property
    def ci(self) -> tuple[float | None, float | None] | None:
        """95% bootstrap interval of :attr:`delta`."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else (first.ci_low, first.ci_high)

    @property
    def p_value(self) -> float | None:
        """Paired permutation test of "no difference"."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else first.p_value

    def verdict(self, index: int) -> str | None:
        """'better' or 'worse' when side ``index`` differs significantly from the first."""
        comparison = self.vs_first[index - 1]
        if comparison is None or not comparison.significant or not comparison.diff:
            return None
        up = comparison.diff > 0
        return "better" if up == metricinfo.higher_is_better(self.key) else "worse"


@dataclass
class Disagreement:
    example_id: str
    question: str
    gap: float
    scores: list[dict[str, float]]  # per side: per-example mean of each outcome score
    paths: list[list[str]]  # per side: the first repetition's agent path


@dataclass
class Confusion:
    """Rows: each expected agent; columns: where the request went (the agent itself when
    it was reached, else the unexpected specialists invoked, else ``(none)``)."""

    labels: list[str]
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def get(self, expected: str, routed: str) -> int:
        return self.counts.get((expected, routed), 0)


@dataclass
class Comparison:
    sides: list[ExperimentData]
    rows: list[MetricRow]
    disagreements: list[Disagreement]
    confusion: list[Confusion | None]
    handoff_histograms: list[Counter[int]]
    common_examples: int
    consistency: list[float | None]

    @property
    def names(self) -> list[str]:
        return [s.target for s in self.sides]


def check_same_data(sides: list[ExperimentData], allow_different_data: bool) -> None:
    hashes = {s.dataset_hash for s in sides if s.dataset_hash}
    if len(hashes) > 1 and not allow_different_data:
        detail = ", ".join(f"{s.name}: {(s.dataset_hash or '?')[:12]}" for s in sides)
        raise UserError(
            f"the experiments ran on different dataset versions ({detail})",
            hint="re-run them on one dataset, or pass --allow-different-data to pair "
            "the examples they share",
        )


def outcome_keys(sides: list[ExperimentData]) -> list[str]:
    """Score keys that are outcomes (0–1 or true/false), not quantities such as tokens."""
    keys = set().union(*(s.score_keys() for s in sides))
    outcome = []
    for key in metricinfo.ordered(keys - metricinfo.QUANTITIES):
        values = [v for s in sides for r in s.runs if (v := r.scores.get(key)) is not None]
        if values and all(0 <= float(v) <= 1 for v in values):
            outcome.append(key)
    return outcome


def repetition_spread(side: ExperimentData, key: str) -> float | None:
    """Standard deviation of the experiment mean across repetitions (None for one)."""
    per_rep: dict[int, list[float]] = {}
    for run in side.runs:
        value = run.scores.get(key)
        if run.error is None and value is not None:
            per_rep.setdefault(run.repetition, []).append(float(value))
    return stdev([math.fsum(v) / len(v) for v in per_rep.values() if v])


def confusion_matrix(side: ExperimentData) -> Confusion | None:
    """None when the runs carry no ``expected_agents`` or no agent paths."""
    first: dict[str, Run] = {}
    for run in side.runs:
        first.setdefault(run.example_id, run)
    expected_all = [r.reference.get("expected_agents") for r in first.values()]
    if not side.has_traces or not any(isinstance(e, list) for e in expected_all):
        return None
    universe = sorted({a for e in expected_all if isinstance(e, list) for a in e})
    confusion = Confusion(labels=[*universe, NONE])
    for run in side.runs:
        expected = run.reference.get("expected_agents")
        if not isinstance(expected, list) or run.error is not None:
            continue
        invoked = set(run.agent_path)
        strays = sorted(a for a in invoked & set(universe) if a not in expected)
        rows = expected or [NONE]
        for agent in rows:
            routed = [agent] if agent != NONE and agent in invoked else strays or [NONE]
            for target in routed:
                key = (agent, target)
                confusion.counts[key] = confusion.counts.get(key, 0) + 1
    return confusion


def handoff_histogram(side: ExperimentData) -> Counter[int]:
    return Counter(
        int(v)
        for r in side.runs
        if r.error is None and (v := r.scores.get("handoff_chain_length")) is not None
    )


def _question(runs: list[Run]) -> str:
    inputs = runs[0].inputs
    if "question" in inputs:
        return str(inputs["question"])
    return " ".join(str(v) for v in inputs.values())[:200]


def disagreements(sides: list[ExperimentData], keys: list[str], top: int) -> list[Disagreement]:
    """Examples ranked by the summed spread of their outcome scores across the sides."""
    if len(sides) < 2 or not keys:
        return []
    per_side = [{k: s.per_example(k) for k in keys} for s in sides]
    grouped = [s.by_example() for s in sides]
    common = [e for e in sides[0].example_ids() if all(e in g for g in grouped)]
    found = []
    for eid in common:
        scores = [{k: m[k][eid] for k in keys if eid in m[k]} for m in per_side]
        gap = 0.0
        for key in keys:
            values = [s[key] for s in scores if key in s]
            if len(values) == len(sides):
                gap += max(values) - min(values)
        if gap > 0:
            paths = [g[eid][0].agent_path for g in grouped]
            found.append(Disagreement(eid, _question(grouped[0][eid]), gap, scores, paths))
    found.sort(key=lambda d: (-d.gap, d.example_id))
    return found[:top]


def shared_examples(sides: list[ExperimentData]) -> set[str]:
    """The examples every side ran."""
    if not sides:
        return set()
    common = set(sides[0].example_ids())
    for side in sides[1:]:
        common &= set(side.example_ids())
    return common


def agent_usage(sides: list[ExperimentData]) -> list[AgentUsage | None]:
    """Each side's per-agent figures over its successful runs of the examples every side
    ran; None for a side without traces (a baseline file)."""
    common = shared_examples(sides)
    return [
        aggregate(
            (r.model_calls for r in side.runs if r.error is None and r.example_id in common),
            side.pricing,
        )
        if side.has_traces and side.has_model_calls
        else None
        for side in sides
    ]


def build(
    sides: list[ExperimentData],
    *,
    allow_different_data: bool = False,
    top: int = 10,
    seed: int | None = None,
) -> Comparison:
    """Compare every side with the first on the examples they share."""
    if not sides:
        raise UserError("nothing to compare", hint="name at least one experiment or target")
    check_same_data(sides, allow_different_data)
    keys = metricinfo.ordered(set().union(*(s.score_keys() for s in sides)))
    common = shared_examples(sides)
    extra = {} if seed is None else {"seed": seed}
    rows = []
    for key in keys:
        per_example = [s.per_example(key) for s in sides]
        means = [math.fsum(v.values()) / len(v) if v else None for v in per_example]
        vs_first: list[PairedComparison | None] = []
        for values in per_example[1:]:
            shared = [e for e in sides[0].example_ids() if e in values and e in per_example[0]]
            if not shared:
                vs_first.append(None)
                continue
            vs_first.append(
                compare_paired(
                    [per_example[0][e] for e in shared], [values[e] for e in shared], **extra
                )
            )
        spreads = [repetition_spread(s, key) for s in sides]
        rows.append(MetricRow(key, means, spreads, vs_first))
    outcomes = outcome_keys(sides)
    return Comparison(
        sides=sides,
        rows=rows,
        disagreements=disagreements(sides, outcomes, top),
        confusion=[confusion_matrix(s) for s in sides],
        handoff_histograms=[handoff_histogram(s) for s in sides],
        common_examples=len(common),
        consistency=[consistency(s) for s in sides],
    )
