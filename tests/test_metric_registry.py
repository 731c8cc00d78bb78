"""Metric metadata declared where a metric is produced, and one summary read everywhere.

A small hand-made experiment in a store, its figures worked out by hand, must read the same
in the run table, ``--json``, the HTML report, JUnit and the gate; the routing confusion
matrix is the evaluator's (lower-cased, ``ignore_agents`` honoured) in the JSON and the HTML;
a user's metric declared lower-is-better is marked, compared and gated that way.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console

from agenteval_cli.core.records import Example, ModelCall, Result, Run, Score, Trace
from agenteval_cli.evaluators import declares, metric
from agenteval_cli.evaluators.loading import bind_evaluators
from agenteval_cli.gating.examples import example_thresholds
from agenteval_cli.gating.thresholds import (
    check_thresholds,
    experiment_metrics,
    parse_condition,
    thresholds_for,
)
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.registry import ALIASES
from agenteval_cli.report import comparison
from agenteval_cli.report.compare_console import stats_table
from agenteval_cli.report.html import _table, render_html
from agenteval_cli.report.json_report import experiment_header
from agenteval_cli.report.junit import junit_tree
from agenteval_cli.report.markdown import render_markdown
from agenteval_cli.report.table import comparison_table
from agenteval_cli.results import figures
from agenteval_cli.results.sources import ExperimentData, from_store
from agenteval_cli.spec.model import EvaluatorSpec
from agenteval_cli.store.db import Store

SPEC = {
    "evaluators": [
        "routing_accuracy",
        {"name": "hops", "type": "custom", "target": "evals.py:hops", "direction": "lower",
         "format": "count", "label": "hops taken"},
        {"name": "routing_confusion", "ignore_agents": ["router"]},
    ],
    "thresholds": {"routing_accuracy": 0.9, "hops": 1.8},
}  # fmt: skip

# (target, example, expected agents, agent path, routing accuracy, hops, latency)
ROWS = [
    ("a", "e1", ["Billing"], ["router", "billing"], 1.0, 3.0, 0.2),
    ("a", "e2", ["Account"], ["router", "billing"], 0.0, 1.0, 0.4),
    ("b", "e1", ["Billing"], ["router", "billing"], 1.0, 1.0, 0.1),
    ("b", "e2", ["Account"], ["router", "account"], 1.0, 2.0, 0.3),
]


def trace(path: list[str]) -> Trace:
    calls = [ModelCall(agent, "m", 10, 1) for agent in path]
    return Trace(agent_path=path, model_calls=calls)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "a.db") as s:
        for target in ("a", "b"):
            exp = s.create_experiment(prefix="hand", target=target, target_path="m:g", spec=SPEC)
            for t, eid, expected, path, routing, hops, latency in ROWS:
                if t != target:
                    continue
                result = Result(
                    eid,
                    0,
                    {"final_response": "ok"},
                    trace(path),
                    [Score("routing_accuracy", routing), Score("hops", hops)],
                    latency_s=latency,
                )
                s.add_result(
                    exp.id, Example(eid, {"question": eid}, {"expected_agents": expected}), result
                )
            s.finish_experiment(exp.id)
        yield s


def records(store):
    return [store.experiment(_name(store, target)) for target in ("a", "b")]


def _name(store, target: str) -> str:
    (name,) = store.db.execute(
        "SELECT name FROM experiments WHERE target = ?", (target,)
    ).fetchone()
    return name


def render(table) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=160, force_terminal=False).print(table)
    return out.getvalue().splitlines()


def cells(lines: list[str], name: str) -> list[str]:
    line = next(line for line in lines if line.startswith(f"│ {name} "))
    return [c.strip() for c in line.split("│")[2:-1]]


# By hand: a: routing (1 + 0) / 2, hops (3 + 1) / 2, latency p50 of [0.2, 0.4] = 0.3 and
# p95 = 0.2 + 0.95 * 0.2; b: routing 1, hops 1.5, p50 0.2, p95 0.29.
EXPECTED = {
    "a": {"routing_accuracy": 0.5, "hops": 2.0, "error_rate": 0.0, "interrupt_rate": 0.0,
          "latency_p50_s": 0.3, "latency_p95_s": 0.39},
    "b": {"routing_accuracy": 1.0, "hops": 1.5, "error_rate": 0.0, "interrupt_rate": 0.0,
          "latency_p50_s": 0.2, "latency_p95_s": 0.29},
}  # fmt: skip


def test_table_json_html_junit_and_gate_agree_on_one_store(store):
    recs = records(store)
    # --json: the experiment's keys only, in the spec's order, then the run's figures
    for rec in recs:
        metrics = experiment_header(store, rec.id)["metrics"]
        assert list(metrics) == list(EXPECTED[rec.target])
        assert metrics == pytest.approx(EXPECTED[rec.target])
    # the gate reads the same summary, built from the read model
    sides = [from_store(store, rec) for rec in recs]
    for side in sides:
        assert experiment_metrics(side) == pytest.approx(EXPECTED[side.target])
    failures = check_thresholds(sides[0], thresholds_for(SPEC["thresholds"], "a", sides[0].catalog))
    assert failures == [
        "routing accuracy = 50.0%, threshold >= 0.9 (off by −40.0 pp)",
        "hops taken = 2.0, threshold <= 1.8 (off by +0.2)",  # a bare number: at most
    ]
    assert (
        check_thresholds(sides[1], thresholds_for(SPEC["thresholds"], "b", sides[1].catalog)) == []
    )
    # the run table, streamed from the store's rows
    lines = render(comparison_table([(r.target, figures.from_store(store, r)) for r in recs]))
    assert cells(lines, "routing accuracy") == ["50.0%", "★ 100.0%"]
    assert cells(lines, "hops taken") == ["2.0", "★ 1.5"]  # lower is better
    assert cells(lines, "latency p50") == ["300 ms", "★ 200 ms"]
    assert not any("routing_confusion" in line for line in lines)  # dataset-level only
    assert not any("interrupt rate" in line for line in lines)  # none stopped at interrupt()
    # compare and the HTML report: the same means
    built = comparison.build(sides)
    rows = {r["key"]: r["means"] for r in _table(built)}
    assert rows == {
        "routing_accuracy": ["50.0%", "100.0%"],
        "hops": ["2.0", "1.5"],
        "error_rate": ["0.0%", "0.0%"],
        "latency_p50_s": ["300 ms", "200 ms"],  # the run table's
        "latency_p95_s": ["390 ms", "290 ms"],
    }
    markdown = render_markdown(built)
    assert "| routing accuracy | 50.0% | 100.0% |" in markdown
    assert "| hops taken | 2.0 | 1.5 |" in markdown
    # JUnit: each example against the spec's thresholds, the same direction
    suites = {s.get("name"): s for s in junit_tree(sides, thresholds=SPEC["thresholds"])}
    failed = {
        (case.get("classname"), case.get("name"))
        for case in suites["a"].iter("testcase")
        if case.find("failure") is not None
    }
    assert failed == {("a.e1", "hops"), ("a.e2", "routing_accuracy")}
    assert suites["b"].get("failures") == "1"  # b.e2: 2 hops


def test_the_confusion_matrix_is_the_evaluators_in_the_json_and_the_html(store):
    """Expected names are lower-cased ("Billing" is billing) and the spec's ignore_agents
    (the router, not the default supervisor) is honoured, in both."""
    recs = records(store)
    matrix = {"expected": ["account", "billing"], "invoked": ["billing"], "counts": [[1], [1]]}
    assert experiment_header(store, recs[0].id)["routing_confusion"] == matrix
    sides = [from_store(store, rec) for rec in recs]
    built = comparison.build(sides)
    first = built.confusion[0]
    assert (first.expected, first.invoked) == (matrix["expected"], matrix["invoked"])
    assert first.counts == {("billing", "billing"): 1, ("account", "billing"): 1}
    assert built.confusion[1].counts == {("billing", "billing"): 1, ("account", "account"): 1}
    page = render_html(built, thresholds=SPEC["thresholds"])
    table = page[page.index('<table class="confusion" data-target="a">') :]
    table = table[: table.index("</table>")]
    assert "<th>billing</th>" in table and "router" not in table and "Billing" not in table
    assert table.count('class="hit">1<') == 1 and table.count('class="miss">1<') == 1


def test_an_experiment_without_routing_evaluators_has_no_routing_rows(tmp_path):
    with Store(tmp_path / "a.db") as s:
        exp = s.create_experiment(
            prefix="p", target="t", target_path="m:g", spec={"evaluators": ["resolution_coverage"]}
        )
        result = Result("e1", 0, {}, Trace(), [Score("resolution_coverage", 1.0)], latency_s=0.1)
        s.add_result(exp.id, Example("e1", {}, {}), result)
        rec = s.experiment(exp.id)
        metrics = experiment_header(s, exp.id)["metrics"]
        assert list(metrics) == [
            "resolution_coverage",
            "error_rate",
            "interrupt_rate",
            "latency_p50_s",
            "latency_p95_s",
        ]
        text = "\n".join(render(comparison_table([("t", figures.from_store(s, rec))])))
        assert "resolution coverage" in text
        for gone in ("routing", "handoff", "ping-pong", "tokens", "cost"):
            assert gone not in text


def test_a_configured_metric_no_result_gave_is_a_null_row(tmp_path):
    with Store(tmp_path / "a.db") as s:
        spec = {"evaluators": ["resolution_coverage", "routing_accuracy"]}
        exp = s.create_experiment(prefix="p", target="t", target_path="m:g", spec=spec)
        s.add_result(exp.id, Example("e1", {}, {}), Result("e1", 0, None, Trace(), error="boom"))
        metrics = experiment_header(s, exp.id)["metrics"]
        assert metrics["resolution_coverage"] is None and metrics["routing_accuracy"] is None
        assert list(metrics)[:2] == ["resolution_coverage", "routing_accuracy"]


def side(name: str, values: list[float], key: str, catalog: Catalog = BUILT_IN) -> ExperimentData:
    runs = [Run(f"e{i}", scores={key: v}) for i, v in enumerate(values)]
    return ExperimentData(name, name, runs, catalog=replace(catalog, keys=(key,)))


def test_a_user_metric_declared_lower_is_better_reads_that_way_everywhere(tmp_path):
    (tmp_path / "my_evals.py").write_text(
        "def wasted(outputs):\n    return {'key': 'wasted_calls', 'score': 1}\n"
    )

    item = EvaluatorSpec(
        name="wasted_calls",
        options={"type": "custom", "target": "my_evals.py:wasted", "lower_is_better": True,
                 "format": "count", "label": "wasted calls"},
    )  # fmt: skip
    spec = SimpleNamespace(
        source=tmp_path / "spec.yaml",
        base_dir=tmp_path,
        pricing={},
        evaluators=[item],
        line_of=lambda *_: 3,
    )

    (bound,) = bind_evaluators(spec)
    assert bound.keys == ("wasted_calls",)
    catalog = Catalog.of(bound.metrics, bound.keys)  # what its experiment keeps
    declared = catalog.info("wasted_calls")
    assert (declared.label, declared.direction, declared.format) == (
        "wasted calls",
        "lower",
        "count",
    )
    # the gate: a bare number is a ceiling
    assert str(parse_condition("wasted_calls", 2, catalog)) == "<= 2"
    # compare: fewer is better, so the lower side is marked ▲ better
    rng = random.Random(0)
    base = [3 + rng.random() for _ in range(30)]
    sides = [
        side("old", base, "wasted_calls", catalog),
        side("new", [v - 2 for v in base], "wasted_calls", catalog),
    ]
    built = comparison.build(sides)
    row, *run = built.rows  # then the run's own figures: error rate, latency
    assert row.key == "wasted_calls" and row.verdict(1) == "better"
    assert [r.key for r in run] == ["error_rate", "latency_p50_s", "latency_p95_s"]
    line = next(line for line in render(stats_table(built)) if "wasted calls" in line)
    assert "▲" in line and "▼" not in line
    # the run table: the lowest mean is the best
    from agenteval_cli.results.figures import from_results

    def summary(value: float):
        result = Result("e", 0, {}, Trace(), [Score("wasted_calls", value)])
        return from_results([result], catalog=catalog)

    lines = render(comparison_table([("x", summary(4.0)), ("y", summary(1.0))]))
    assert cells(lines, "wasted calls") == ["4.0", "★ 1.0"]


def test_a_function_declares_its_metrics_with_the_decorator():
    @declares(metric("spent_s", "time spent", lower=True, fmt="duration"), "plain_key")
    def check(outputs):
        return [{"key": "spent_s", "score": 0.5}, {"key": "plain_key", "score": 1}]

    from agenteval_cli.evaluators.registry import entry_metrics

    found = entry_metrics({"name": "mine", "type": "custom", "target": "x.py:check"}, check)
    assert [m.key for m in found] == ["spent_s", "plain_key"]
    assert found[0].direction == "lower" and found[1].direction == "higher"
    assert BUILT_IN.fmt("plain_key", 2.0) == "2"  # undeclared: a plain number


def test_a_declared_pass_mark_is_the_default_example_check():
    defaults = example_thresholds({})
    assert {k: str(t) for k, t in defaults.items()}.items() >= {
        "routing_accuracy": ">= 1",
        "resolution_coverage": ">= 1",
        "ping_pong": "<= 0",
    }.items()
    # a run's own figures are never checked per example
    thresholds = thresholds_for({"error_rate": 0.1, "latency_p95_s": 2, "hops": 3}, "t")
    assert set(example_thresholds(thresholds)) == {"hops"}


def test_every_builtin_evaluator_declares_its_keys():
    from agenteval_cli.evaluators import REGISTRY
    from agenteval_cli.evaluators.judge_model import JUDGE_KEYS
    from agenteval_cli.metrics.registry import METRICS

    for entry in REGISTRY.values():
        assert entry.keys and all(k in METRICS for k in entry.keys), entry.name
    assert all(k in METRICS and not METRICS[k].shown for k in JUDGE_KEYS)
    assert METRICS["judge_cost_usd_total"].aggregation == "sum"
    assert ALIASES["token_cost"] == "cost_usd"


def test_a_spec_declared_lower_is_better_metric_through_run_and_compare(tmp_path):
    """End to end: the table's ★ goes to the fewer words, the gate reads a bare number as a
    ceiling, and compare (reading the stored spec again) marks the drop ▲ better."""
    from typer.testing import CliRunner

    from agenteval_cli.cli import app
    from agenteval_cli.metrics.registry import METRICS

    (tmp_path / "evals.py").write_text(
        "def words(outputs):\n    return len(outputs['final_response'].split())\n"
    )
    (tmp_path / "targets.py").write_text(
        "def short(inputs):\n    return {'final_response': inputs['question']}\n\n"
        "def long(inputs):\n    return {'final_response': inputs['question'] + ' and more'}\n"
    )
    rows = [{"id": f"q{i}", "inputs": {"question": "word " * (1 + i % 2)}} for i in range(12)]
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "dataset: data.jsonl\n"
        "targets: {short: targets.py:short, long: targets.py:long}\n"
        "evaluators:\n"
        "  - {name: words_used, type: custom, target: evals.py:words, direction: lower,\n"
        "     format: count, label: words used}\n"
        "thresholds: {words_used: 3}\n"
    )
    store = str(tmp_path / "db")
    result = CliRunner().invoke(app, ["run", str(tmp_path / "spec.yaml"), "--store", store])
    lines = result.output.splitlines()
    assert cells(lines, "words used") == ["★ 1.5", "3.5"]
    rows = [line for line in lines if line.startswith("│")]
    assert not any("routing" in line or "tokens" in line for line in rows)
    assert result.exit_code == 1, result.output
    assert "words used = 3.5, threshold <= 3" in result.output
    assert "words_used" not in METRICS  # declared with its experiment, not process-wide
    result = CliRunner().invoke(
        app, ["compare", "long", "short", "--store", store], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "words used" in line)
    assert "▲" in line and "−2.0" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("direction: sideways", "direction must be one of higher, lower, got 'sideways'"),
        ("format: furlongs", "format must be one of percent, count, money, duration, number"),
        ("metrics: {x: {colour: red}}", "unknown field(s) colour"),
    ],
)
def test_a_bad_declaration_is_a_user_error_at_its_line(tmp_path, extra, message):
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.spec.model import load_spec

    (tmp_path / "evals.py").write_text("def one(outputs):\n    return 1\n")
    (tmp_path / "data.jsonl").write_text('{"inputs": {"question": "q"}}\n')
    (tmp_path / "spec.yaml").write_text(
        "dataset: data.jsonl\ntargets: {t: evals.py:one}\nevaluators:\n"
        f"  - {{name: one, type: custom, target: evals.py:one, {extra}}}\n"
    )
    with pytest.raises(UserError) as caught:
        bind_evaluators(load_spec(tmp_path / "spec.yaml"))
    assert message in str(caught.value)
    assert caught.value.line == 4
