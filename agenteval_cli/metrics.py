"""Per-experiment metrics: the mean of each score over the results, plus error rate and
latency percentiles. The metric keys are a stable interface for users' scripts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agenteval_cli.records import Result

METRIC_KEYS = (
    "routing_accuracy",
    "resolution_coverage",
    "handoff_chain_length",
    "ping_pong",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "error_rate",
    "latency_p50_s",
    "latency_p95_s",
)


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), ``q`` in [0, 100]."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class Summary:
    """Aggregates of one experiment, built by streaming over its results."""

    count: int = 0
    errors: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    models: set[str] = field(default_factory=set)

    def add(self, result: Result) -> None:
        self.count += 1
        self.latencies.append(result.latency_s)
        self.models.update(call.model for call in result.trace.model_calls)
        if result.error is not None:
            self.errors += 1
            return
        for score in result.scores:
            if score.score is None:
                continue
            self.sums[score.key] = self.sums.get(score.key, 0.0) + float(score.score)
            self.counts[score.key] = self.counts.get(score.key, 0) + 1

    def mean(self, key: str) -> float | None:
        n = self.counts.get(key, 0)
        return self.sums[key] / n if n else None

    def metrics(self) -> dict[str, float | None]:
        """The stable metric keys first, then any other evaluator's mean."""
        values: dict[str, float | None] = {key: self.mean(key) for key in METRIC_KEYS}
        values["error_rate"] = self.errors / self.count if self.count else None
        values["latency_p50_s"] = percentile(self.latencies, 50)
        values["latency_p95_s"] = percentile(self.latencies, 95)
        for key in sorted(self.sums):
            values.setdefault(key, self.mean(key))
        return values


def summarize(results: Iterable[Result]) -> Summary:
    summary = Summary()
    for result in results:
        summary.add(result)
    return summary
