"""The CI gate: threshold conditions, baseline regressions, and run's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.gating.baselines import read_baseline_file
from agenteval_cli.gating.examples import failed_examples
from agenteval_cli.gating.regression import check_baseline
from agenteval_cli.gating.thresholds import check_thresholds, parse_condition, thresholds_for
from agenteval_cli.gating.verdict import evaluate
from agenteval_cli.results.sources import ExperimentData, Run

ROOT = Path(__file__).resolve().parent.parent
TRAVEL = ROOT / "tests" / "data" / "external"


def side(target: str, scores: list[dict], name: str | None = None) -> ExperimentData:
    runs = [Run(example_id=f"ex-{i}", scores=s) for i, s in enumerate(scores)]
    return ExperimentData(name or f"exp-{target}", target, runs)


def test_conditions():
    assert parse_condition("routing_accuracy", ">= 0.9").passes(0.9)
    assert not parse_condition("routing_accuracy", ">= 0.9").passes(0.89)
    cost = parse_condition("token_cost", "<=0.002")
    assert (cost.key, cost.op, cost.bound) == ("cost_usd", "<=", 0.002)
    # a bare number: "at least" for scores, "at most" for costs and counts
    assert str(parse_condition("routing_accuracy", 0.8)) == ">= 0.8"
    assert str(parse_condition("total_tokens", "1500")) == "<= 1500"
    assert parse_condition("ping_pong", "== 0").passes(0.0)
    for bad in ("=> 3", "about 0.9", True, ">= x"):
        with pytest.raises(ValueError, match="expected a condition"):
            parse_condition("routing_accuracy", bad)


def test_per_target_thresholds_override_shared_ones():
    spec = {"routing_accuracy": ">= 0.9", "swarm": {"routing_accuracy": ">= 0.8"}}
    assert str(thresholds_for(spec, "supervisor")["routing_accuracy"]) == ">= 0.9"
    assert str(thresholds_for(spec, "swarm")["routing_accuracy"]) == ">= 0.8"
    assert list(thresholds_for(spec, "swarm")) == ["routing_accuracy"]


def test_threshold_failures_say_by_how_much():
    swarm = side("swarm", [{"routing_accuracy": v, "cost_usd": 0.003} for v in (1, 1, 0.5, 0.5)])
    failures = check_thresholds(
        swarm,
        thresholds_for({"routing_accuracy": ">= 0.9", "token_cost": "<= 0.002"}, "swarm"),
    )
    assert failures == [
        "routing accuracy = 75.0%, threshold >= 0.9 (off by −15.0 pp)",
        "cost / request = $0.003, threshold <= 0.002 (off by +$0.001)",
    ]
    assert check_thresholds(swarm, thresholds_for({"routing_accuracy": ">= 0.75"}, "swarm")) == []
    missing = check_thresholds(swarm, thresholds_for({"resolution_coverage": 0.5}, "swarm"))
    assert missing == ["resolution coverage has no value (threshold >= 0.5)"]


def test_a_significant_drop_fails_and_noise_or_an_allowed_drop_does_not():
    baseline = side("swarm", [{"routing_accuracy": 1.0}] * 32)
    dropped = side("swarm", [{"routing_accuracy": 0.0 if i < 10 else 1.0} for i in range(32)])
    (message,) = check_baseline(dropped, baseline, {})
    assert message.startswith("routing accuracy regressed: 100.0% → 68.8% (−31.2 pp")
    assert "p = " in message
    assert check_baseline(dropped, baseline, {"routing_accuracy": 0.4}) == []
    one_worse = side("swarm", [{"routing_accuracy": 0.0 if i == 0 else 1.0} for i in range(32)])
    (untested,) = check_baseline(one_worse, baseline, {})  # no result of 1 could fail it
    assert untested.startswith("routing accuracy untested: 1 of 32 examples differ: too few")
    assert check_baseline(one_worse, baseline, {}, allow_untested=True) == []
    assert check_baseline(baseline, dropped, {}) == []  # an improvement never fails
    failures = evaluate([dropped], thresholds={}, baselines={"swarm": baseline}, max_regression={})
    assert [(f.target, f.key) for f in failures] == [("swarm", "baseline")]


def test_failed_examples_use_thresholds_or_default_pass_marks():
    exp = side(
        "s",
        [
            {"routing_accuracy": 1.0, "resolution_coverage": 1.0, "ping_pong": False},
            {"routing_accuracy": 0.5, "resolution_coverage": 1.0, "ping_pong": False},
            {"routing_accuracy": 1.0, "resolution_coverage": 1.0, "ping_pong": True},
        ],
    )
    exp.runs.append(Run(example_id="ex-3", error="TimeoutError: 60s"))
    assert failed_examples(exp, {}) == ["ex-1", "ex-2", "ex-3"]
    assert failed_examples(exp, thresholds_for({"routing_accuracy": ">= 0.5"}, "s")) == ["ex-3"]


def _travel_spec(tmp_path: Path, extra: str) -> Path:
    spec = tmp_path / "travel.yaml"
    text = (TRAVEL / "travel.yaml").read_text()
    text = text.replace("travel.jsonl", str(TRAVEL / "travel.jsonl"))
    text = text.replace("travel_graphs.py", str(TRAVEL / "travel_graphs.py"))
    spec.write_text(text.replace("  plain: ", "  # plain: ") + extra)
    return spec


def test_run_exits_1_on_a_failing_threshold_and_0_on_passing_ones(tmp_path, invoke):
    failing = _travel_spec(
        tmp_path,
        'thresholds:\n  token_cost: "<= 0.001"\n  swarm:\n    resolution_coverage: ">= 0.9"\n',
    )
    result = invoke("run", str(failing), "--store", str(tmp_path / "db"))
    assert result.exit_code == 1, result.output
    assert "gate failed" in result.output
    assert "swarm: resolution coverage = 83.3%, threshold >= 0.9 (off by −6.7 pp)" in result.output
    passing = _travel_spec(
        tmp_path, 'thresholds:\n  token_cost: "<= 0.001"\n  resolution_coverage: ">= 0.8"\n'
    )
    result = invoke("run", str(passing), "--store", str(tmp_path / "db"))
    assert result.exit_code == 0, result.output
    assert "gate passed" in result.output


def test_spec_threshold_mistakes_name_the_line(tmp_path):
    spec = _travel_spec(tmp_path, "thresholds:\n  swarm:\n    routing_acuracy: 0.9\n")
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "db")])
    assert result.exit_code == 2
    lines = spec.read_text().splitlines()
    line = lines.index("    routing_acuracy: 0.9") + 1
    assert f"travel.yaml:{line}: unknown metric 'routing_acuracy'" in result.output
    assert "did you mean 'routing_accuracy'?" in result.output
    spec = _travel_spec(tmp_path, 'thresholds:\n  routing_accuracy: "=> 0.9"\n')
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "db")])
    assert result.exit_code == 2
    assert "expected a condition such as '>= 0.9'" in result.output


@pytest.mark.slow
def test_saved_baseline_passes_and_a_better_baseline_fails_the_run(tmp_path, invoke, demo_spec):
    spec = demo_spec
    store = str(tmp_path / "db")
    saved = tmp_path / "baseline.json"
    result = invoke(
        "run", str(spec), "--limit", "12", "--store", store, "--save-baseline", str(saved)
    )
    assert result.exit_code == 0, result.output
    data = json.loads(saved.read_text())
    assert [e["target"] for e in data["experiments"]] == ["supervisor", "swarm"]
    swarm = data["experiments"][1]
    assert (
        len(swarm["scores"]) == 12
        and "routing_accuracy" in swarm["scores"]["billing-payment-method"]
    )
    assert len(saved.read_text()) < 20_000  # small enough to commit

    result = invoke("run", str(spec), "--limit", "12", "--store", store, "--baseline", str(saved))
    assert result.exit_code == 0, result.output
    assert "gate passed" in result.output

    for scores in swarm["scores"].values():
        scores["total_tokens"] = 10  # a baseline far cheaper than today's swarm
    saved.write_text(json.dumps(data))
    # by default the gate checks the headline scores and the error rate, not every figure
    result = invoke("run", str(spec), "--limit", "12", "--store", store, "--baseline", str(saved))
    assert result.exit_code == 0, result.output
    named = tmp_path / "routing.yaml"
    text = spec.read_text().replace("../datasets/", f"{spec.parent.parent}/datasets/")
    named.write_text(text + "max_regression: {total_tokens: 0}\n")
    result = invoke("run", str(named), "--limit", "12", "--store", store, "--baseline", str(saved))
    assert result.exit_code == 1, result.output
    assert "swarm: tokens / request regressed: 10 →" in result.output
    assert "Holm-adjusted" in result.output

    missing = CliRunner().invoke(
        app, ["run", str(spec), "--limit", "1", "--store", store, "--baseline", "nope.json"]
    )
    assert missing.exit_code == 2
    assert "baseline file not found: nope.json" in missing.output


def _baseline_file(path: Path, scores: dict) -> Path:
    experiment = {"name": "base-swarm", "target": "swarm", "metrics": {}, "scores": scores}
    body = {"format": "agenteval-baseline/1", "experiments": [experiment]}
    path.write_text(json.dumps(body))  # json writes NaN as NaN, as a hand edit would
    return path


@pytest.mark.parametrize(
    ("scores", "problem"),
    [
        (
            {"a": {"routing_accuracy": 1.0}, "b": {"routing_accuracy": float("nan")}},
            "example 'b': routing_accuracy is nan, not a finite number",
        ),
        ({"a": {"total_tokens": float("inf")}}, "total_tokens is inf, not a finite number"),
        ({}, "no scores: the gate would compare nothing"),
        ({"a": {}, "b": {"routing_accuracy": None}}, "no scores: the gate would compare nothing"),
        ({"a": {"total_tokens": 1e308}}, "total_tokens is 1e+308, too large to compare"),
        ({"a": {"total_tokens": -(10**400)}}, "total_tokens is -inf, too large to compare"),
        ({"a": {"routing_accuracy": "high"}}, "routing_accuracy is 'high', not a number"),
    ],
)
def test_a_baseline_that_cannot_be_compared_is_refused_before_the_run(
    tmp_path, invoke, scores, problem
):
    baseline = _baseline_file(tmp_path / "base.json", scores)
    store = tmp_path / "db"
    result = invoke("run", _travel_spec(tmp_path, ""), "--store", store, "--baseline", baseline)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "base.json: baseline cannot be compared: experiment 'base-swarm': " in result.text
    assert problem in result.text
    assert "finished" not in result.output  # refused before any target was called
    # the spec's own baseline file is checked before the run too
    spec = _travel_spec(tmp_path, f"baseline: {baseline}\n")
    result = invoke("run", spec, "--store", store)
    assert result.exit_code == 2, result.output
    assert problem in result.text


def test_a_comparable_baseline_still_gates(tmp_path, invoke):
    scores = {f"e{i}": {"routing_accuracy": 1.0, "total_tokens": 1e299} for i in range(3)}
    loaded = read_baseline_file(_baseline_file(tmp_path / "base.json", scores))
    assert [b.per_example("routing_accuracy") for b in loaded] == [
        {"e0": 1.0, "e1": 1.0, "e2": 1.0}
    ]
