"""The run table: best values marked by each metric's direction, dataset-level rows."""

from __future__ import annotations

import io

from rich.console import Console

from agenteval_cli.core.records import Result, Score, Trace
from agenteval_cli.report.table import comparison_table
from agenteval_cli.results.figures import from_results


def summary(**scores: float):
    return from_results([Result("e", 0, {}, Trace(), [Score(k, v) for k, v in scores.items()])])


def render(table) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=120, force_terminal=False).print(table)
    return out.getvalue().splitlines()


def row(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.startswith(f"│ {name} "))


def test_best_values_follow_each_metrics_direction_and_dataset_rows_are_marked():
    columns = [
        ("sup", summary(routing_accuracy=1.0, total_tokens=2000.0, unnecessary_steps=2.0)),
        ("swarm", summary(routing_accuracy=0.5, total_tokens=1500.0, unnecessary_steps=0.0)),
    ]
    lines = render(
        comparison_table(
            columns, dataset_scores=[{"routing_confusion": 0.976}, {"routing_confusion": 0.833}]
        )
    )
    assert "★ 100.0%" in row(lines, "routing accuracy").split("│")[2]  # higher is better
    assert "★ 1,500" in row(lines, "tokens / request").split("│")[3]  # lower is better
    assert "★ 0" in row(lines, "unnecessary steps").split("│")[3]  # lower is better
    confusion = row(lines, "routing confusion (dataset)").split("│")
    assert confusion[2].strip() == "★ 97.6%" and confusion[3].strip() == "83.3%"


def test_a_figure_no_result_gave_shows_na_not_zero():
    """Tokens a model did not report are None in every result: n/a, never 0 or blank."""
    unknown = {"input_tokens": None, "output_tokens": None, "total_tokens": None}
    known = {"input_tokens": 1000.0, "output_tokens": 500.0, "total_tokens": 1500.0}
    columns = [
        ("local", summary(routing_accuracy=1.0, **unknown, cost_usd=None)),
        ("hosted", summary(routing_accuracy=1.0, **known, cost_usd=0.002)),
    ]
    lines = render(comparison_table(columns))
    tokens = [c.strip() for c in row(lines, "tokens / request").split("│")[2:4]]
    assert tokens == ["n/a", "1,500"]  # one known value: nothing to mark best
    assert [c.strip() for c in row(lines, "  input / output").split("│")[2:4]] == [
        "n/a",
        "1,000 / 500",
    ]
    assert [c.strip() for c in row(lines, "cost / request").split("│")[2:4]] == [
        "n/a",
        "$0.002",
    ]


def test_true_false_and_rate_evaluators_show_percentages():
    """routing_exact true on 2 of 3 examples: 2/3 = 66.7%; precision@3 of 0.5 and 1.0: 75.0%."""
    from agenteval_cli.evaluators.registry import function_metrics, lookup
    from agenteval_cli.metrics.catalog import Catalog

    # the keys k makes, as the function declares them (its experiment keeps them)
    catalog = Catalog.of(function_metrics(lookup("retrieval").factory(k=3)))

    def scored(example: str, **scores: float | bool) -> Result:
        return Result(example, 0, {}, Trace(), [Score(k, v) for k, v in scores.items()])

    results = [
        scored("a", routing_exact=True, forbidden_agents=True, trajectory_match=True),
        scored("b", routing_exact=True, forbidden_agents=True, trajectory_match=False),
        scored("c", routing_exact=False, forbidden_agents=False, trajectory_match=False),
    ]
    results[0].scores += [Score("precision@3", 0.5), Score("required_tools", True)]
    results[1].scores += [Score("precision@3", 1.0), Score("required_tools", True)]
    lines = render(comparison_table([("t", from_results(results, catalog=catalog))]))
    assert row(lines, "exact routing").split("│")[2].strip() == "66.7%"
    assert row(lines, "no forbidden agent").split("│")[2].strip() == "66.7%"
    assert row(lines, "trajectory match").split("│")[2].strip() == "33.3%"
    assert row(lines, "required tools used").split("│")[2].strip() == "100.0% (n=2)"
    assert row(lines, "precision@3").split("│")[2].strip() == "75.0% (n=2)"


def test_soundness_keys_are_percentages_and_unnecessary_steps_a_count():
    from agenteval_cli.metrics.catalog import BUILT_IN

    fmt, higher_is_better, label = BUILT_IN.fmt, BUILT_IN.higher_is_better, BUILT_IN.label

    assert fmt("outcome_correct", 0.5) == "50.0%" and label("outcome_correct") == "outcome correct"
    assert fmt("trajectory_sound", 1.0) == "100.0%"
    assert fmt("correct_but_unsound", 0.25) == "25.0%"
    assert not higher_is_better("correct_but_unsound")
    assert fmt("unnecessary_steps", 1.5) == "1.5" and fmt("unnecessary_steps", 0.0) == "0"


def test_zero_tokens_read_0_not_0_point_0():
    zero = {"input_tokens": 0.0, "output_tokens": 0.0, "total_tokens": 0.0}
    lines = render(comparison_table([("t", summary(**zero))]))
    assert row(lines, "tokens / request").split("│")[2].strip() == "0"
    assert row(lines, "  input / output").split("│")[2].strip() == "0 / 0"


def test_a_narrow_tables_title_stays_on_one_line():
    title = "my-agents · 3 examples × 1 repetition(s)"
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=False).print(
        comparison_table([("t", summary(routing_accuracy=1.0))], title=title)
    )
    assert out.getvalue().splitlines()[0].strip() == title


def test_cached_results_are_counted_and_left_out_of_latency_and_its_star():
    """b's one cached result has a stored 10 ms; its two calls took 900 ms: b's p50 is
    900 ms, a's three calls 500 ms win the ★, and the cache row reads 0 of 3 / 1 of 3."""

    def timed(example: str, latency: float, cached: bool = False) -> Result:
        return Result(example, 0, {}, Trace(), latency_s=latency, cached=cached)

    a = from_results([timed("x", 0.5), timed("y", 0.5), timed("z", 0.5)])
    b = from_results([timed("x", 0.01, cached=True), timed("y", 0.9), timed("z", 0.9)])
    lines = render(comparison_table([("a", a), ("b", b)]))
    p50 = [c.strip() for c in row(lines, "latency p50").split("│")[2:4]]
    assert p50 == ["★ 500 ms", "900 ms"]
    cache = [c.strip() for c in row(lines, "from the cache").split("│")[2:4]]
    assert cache == ["0 of 3", "1 of 3"]
    only_cached = from_results([timed("x", 0.01, cached=True)])
    lines = render(comparison_table([("a", a), ("c", only_cached)]))
    assert [c.strip() for c in row(lines, "latency p50").split("│")[2:4]] == ["500 ms", "n/a"]
