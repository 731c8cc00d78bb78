"""Metric aggregation: means over scored results, error rate, latency percentiles."""

from __future__ import annotations

import pytest

import agenteval_cli.evaluators  # noqa: F401  (declares the evaluators' keys and totals)
from agenteval_cli.core.records import Result, Score, Trace
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.stats import percentile, stdev
from agenteval_cli.results.figures import from_results


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
    assert percentile(values, 0.50) == pytest.approx(0.3)
    assert percentile(values, 0.95) == pytest.approx(0.88)  # 0.4 + 0.8 * 0.6
    assert percentile([], 0.5) is None


def test_means_skip_errors_and_null_scores():
    summary = from_results(
        [
            result(0.1, {"routing_accuracy": 1.0, "ping_pong": True, "cost_usd": None}),
            result(0.3, {"routing_accuracy": 0.5, "ping_pong": False, "custom": 2.0}),
            result(0.2, error="TimeoutError: slow"),
        ],
        catalog=Catalog(keys=("routing_accuracy", "ping_pong", "cost_usd", "resolution_coverage")),
    )
    metrics = summary.metrics()
    assert list(metrics) == [  # the experiment's keys, in its order; then the others
        "routing_accuracy", "ping_pong", "cost_usd", "resolution_coverage", "custom",
        "error_rate", "interrupt_rate", "latency_p50_s", "latency_p95_s",
        "cost_usd_total",
    ]  # fmt: skip
    assert metrics["resolution_coverage"] is None  # configured, never scored
    assert metrics["cost_usd_total"] is None  # one request's cost unknown: so is the spend
    assert metrics["routing_accuracy"] == 0.75
    assert metrics["ping_pong"] == 0.5
    assert metrics["cost_usd"] is None
    assert metrics["error_rate"] == pytest.approx(1 / 3)
    assert metrics["interrupt_rate"] == 0.0
    assert metrics["latency_p50_s"] == pytest.approx(0.2)
    assert metrics["custom"] == 2.0


def test_an_errored_or_interrupted_result_counts_in_the_trace_figures_and_its_rate():
    """Their scores are their trace's (those needing an answer are null): the means hold
    them, each status has its rate, and neither is an answered result."""
    errored = result(0.1, {"ping_pong": True, "cost_usd": 0.5, "resolution_coverage": None})
    errored.error = "GraphRecursionError: Recursion limit of 12 reached"
    stopped = result(0.1, {"ping_pong": False, "cost_usd": 0.25, "resolution_coverage": None})
    stopped.interrupt = '{"question": "approve?"}'
    answered = result(0.1, {"ping_pong": False, "cost_usd": 0.75, "resolution_coverage": 1.0})
    summary = from_results([errored, stopped, answered])
    metrics = summary.metrics()
    assert metrics["ping_pong"] == pytest.approx(1 / 3)
    assert metrics["cost_usd"] == pytest.approx(0.5)
    assert metrics["resolution_coverage"] == 1.0  # over the one answered result
    assert metrics["error_rate"] == pytest.approx(1 / 3)
    assert metrics["interrupt_rate"] == pytest.approx(1 / 3)
    assert (summary.errors, summary.interrupts) == (1, 1)


def scored(example: str, repetition: int, scores: dict) -> Result:
    return Result(example, repetition, {}, Trace(), [Score(k, v) for k, v in scores.items()])


def test_a_metric_is_the_same_to_the_last_bit_whatever_order_its_results_came_in():
    """Results are stored as they finish, in no fixed order (and differently in-process, on
    Ray workers and in merged shards): the sums behind a metric are exact, rounded once."""
    import random
    from fractions import Fraction

    import agenteval_cli.evaluators.judge_model  # noqa: F401  # declares judge_cost_usd_total

    rng = random.Random(7)
    rows = [
        (f"e{i}", rep, rng.uniform(1e-6, 1e-2), rng.choice([0.1, 0.2, 0.3, 0.7]))
        for i in range(150)
        for rep in range(2)
    ]
    orders = [rows, rows[::-1], rng.sample(rows, len(rows)), rng.sample(rows, len(rows))]
    plain = {sum(r[2] for r in order) for order in orders}
    assert len(plain) > 1  # a float sum left to right depends on the order
    metrics = [
        from_results(
            [scored(e, r, {"cost_usd": c, "q": q, "judge_cost_usd": c}) for e, r, c, q in order],
            catalog=Catalog(keys=("cost_usd", "q", "judge_cost_usd_total")),
        )
        for order in orders
    ]
    exact = sum(Fraction(r[2]) for r in rows)  # the sum without rounding, by fractions
    for summary in metrics:
        values = summary.metrics()
        assert values["cost_usd"] == float(exact) / 300
        assert values["judge_cost_usd_total"] == float(exact)
        assert values["q"] == float(sum(Fraction(r[3]) for r in rows)) / 300
        per_repetition = [
            float(sum(Fraction(r[3]) for r in rows if r[1] == rep)) / 150 for rep in (0, 1)
        ]
        spread = abs(per_repetition[0] - per_repetition[1]) / 2**0.5  # of two means
        assert summary.spread("q") == pytest.approx(spread, rel=1e-12)
        assert summary.spread("q") == metrics[0].spread("q")
        assert values == metrics[0].metrics()


def test_exact_sums_keep_infinities_and_nan_as_float_sums_do():
    import math

    from agenteval_cli.metrics.exact_sum import ExactSum

    def exact(values):
        total = ExactSum()
        for value in values:
            total.add(value)
        return total.total()

    assert exact([1.0, math.inf, 2.0]) == math.inf
    assert exact([-1e308, -1e308, 5.0]) == -math.inf  # beyond the largest float
    assert math.isnan(exact([math.inf, -math.inf]))
    assert math.isnan(exact([math.nan, 1.0]))
    assert exact([1e16, 1.0, -1e16]) == 1.0  # float addition left to right gives 0.0
    assert exact([]) == 0.0


def test_the_standard_deviation_is_the_samples_and_unknown_with_a_non_finite_value():
    import math
    import statistics

    values = [0.1, 0.7, 0.25, 0.9]
    assert stdev(values) == pytest.approx(statistics.stdev(values), rel=1e-15)
    assert stdev([0.1]) is None
    assert math.isnan(stdev([1.0, math.inf]))
