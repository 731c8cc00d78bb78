"""Metric aggregation: means over scored results, error rate, latency percentiles."""

from __future__ import annotations

import pytest

from agenteval_cli.core.records import Result, Score, Trace
from agenteval_cli.metrics.summary import percentile, summarize


def result(latency: float, scores: dict | None = None, error: str | None = None) -> Result:
    return Result(
        example_id="x",
        repetition=0,
        outputs={},
        trace=Trace(),
        scores=[Score(k, v) for k, v in (scores or {}).items()],
        error=error,
        latency_s=latency,
    )


def test_percentile_matches_linear_interpolation():
    values = [0.1, 0.2, 0.3, 0.4, 1.0]
    assert percentile(values, 50) == pytest.approx(0.3)
    assert percentile(values, 95) == pytest.approx(0.88)  # 0.4 + 0.8 * 0.6
    assert percentile([], 50) is None


def test_means_skip_errors_and_null_scores():
    summary = summarize(
        [
            result(0.1, {"routing_accuracy": 1.0, "ping_pong": True, "cost_usd": None}),
            result(0.3, {"routing_accuracy": 0.5, "ping_pong": False, "custom": 2.0}),
            result(0.2, error="TimeoutError: slow"),
        ],
        keys=("routing_accuracy", "ping_pong", "cost_usd", "resolution_coverage"),
    )
    metrics = summary.metrics()
    assert list(metrics) == [  # the experiment's keys, in its order; then the others
        "routing_accuracy", "ping_pong", "cost_usd", "resolution_coverage", "custom",
        "error_rate", "latency_p50_s", "latency_p95_s", "consistency",
    ]  # fmt: skip
    assert metrics["resolution_coverage"] is None  # configured, never scored
    assert metrics["routing_accuracy"] == 0.75
    assert metrics["ping_pong"] == 0.5
    assert metrics["cost_usd"] is None
    assert metrics["error_rate"] == pytest.approx(1 / 3)
    assert metrics["latency_p50_s"] == pytest.approx(0.2)
    assert metrics["custom"] == 2.0
