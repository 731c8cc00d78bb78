"""The run table: best values marked by each metric's direction, dataset-level rows."""

from __future__ import annotations

import io

from rich.console import Console

from agenteval_cli.core.records import Result, Score, Trace
from agenteval_cli.metrics.summary import summarize
from agenteval_cli.report.table import comparison_table


def summary(**scores: float):
    return summarize([Result("e", 0, {}, Trace(), [Score(k, v) for k, v in scores.items()])])


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
    assert "★ 0" in row(lines, "unnecessary_steps").split("│")[3]  # lower is better
    confusion = row(lines, "routing_confusion (dataset)").split("│")
    assert confusion[2].strip() == "★ 0.976" and confusion[3].strip() == "0.833"


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
