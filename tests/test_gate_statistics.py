"""The baseline gate as a test: errors compared per example, the allowed drop as a margin,
Holm across every target and metric, and baseline files that keep their errors."""

from __future__ import annotations

import math
import statistics

import pytest

from agenteval_cli.gating.baselines import baseline_data, read_baseline_file
from agenteval_cli.gating.regression import check_baseline, checked_keys
from agenteval_cli.gating.verdict import evaluate
from agenteval_cli.metrics.distributions import t_upper
from agenteval_cli.results.sources import ExperimentData, Run
from agenteval_cli.store.results import strict_json


def side(target: str, scores: list[dict], errors: set[int] = frozenset()) -> ExperimentData:
    runs = [
        Run(
            example_id=f"ex-{i}",
            scores={} if i in errors else s,
            error="boom" if i in errors else None,
        )
        for i, s in enumerate(scores)
    ]
    return ExperimentData(f"exp-{target}", target, runs)


def _hard_and_easy(n: int = 30) -> list[dict]:
    return [{"routing_accuracy": 0.0 if i < 14 else 1.0} for i in range(n)]


@pytest.mark.parametrize("max_regression", [{}, {"error_rate": 0}, {"routing_accuracy": 0}])
def test_a_change_that_errors_on_14_of_30_examples_fails_the_gate(max_regression):
    """The hard examples error: the scores of the rest look no worse (the errored are left
    out of every score), but the error rate, paired per example, is 14 of 30 worse."""
    baseline = side("swarm", _hard_and_easy())
    broken = side("swarm", _hard_and_easy(), errors=set(range(14)))
    failures = check_baseline(broken, baseline, max_regression)
    (line,) = [f for f in failures if f.startswith("error rate regressed")]
    assert line.startswith("error rate regressed: 0.0% → 46.7% (+46.7 pp over 30 examples")
    # one-sided mid-p of 14 of 14 differing examples worse: ½·2⁻¹⁴
    p = 0.5 * 2**-14
    assert f"p = {p:.3g}" in line


def test_the_allowed_drop_is_a_margin_the_bound_must_pass():
    """A drop of exactly the allowed margin passes (p = ½); a drop well beyond it fails;
    the p-value is the one-sided paired t against the margin, computed here by hand."""
    base = [0.5 + 0.01 * (i % 7) for i in range(40)]
    noise = [0.05 * ((i * 37) % 11 - 5) / 5 for i in range(40)]
    noise = [x - sum(noise) / 40 for x in noise]  # mean 0: the drop is exactly the shift
    baseline = side("t", [{"resolution_coverage": v} for v in base])
    at_margin = side(
        "t", [{"resolution_coverage": v - 0.1 + e} for v, e in zip(base, noise, strict=True)]
    )
    beyond = side(
        "t", [{"resolution_coverage": v - 0.2 + e} for v, e in zip(base, noise, strict=True)]
    )
    allowed = {"resolution_coverage": 0.1}
    assert check_baseline(at_margin, baseline, allowed) == []
    (line,) = check_baseline(beyond, baseline, allowed)
    drops = [0.2 - e for e in noise]
    error = statistics.stdev(drops) / math.sqrt(40)
    p = t_upper((statistics.mean(drops) - 0.1) / error, 39)
    assert f"p = {p:.3g}" in line and "allowed 10.0 pp" in line
    assert check_baseline(beyond, baseline, {"resolution_coverage": 0.3}) == []


def test_holm_adjusts_across_every_target_and_metric_of_the_gate():
    """Alone, 7 of 8 differing examples worse fails (one-sided mid-p (1 + 8/2)/256 =
    0.0195); beside two more tested checks of another target, Holm multiplies it by 3:
    0.059, and the gate passes."""
    baseline = side("a", [{"routing_accuracy": 1.0}] * 20)
    worse = side(
        "a",
        [{"routing_accuracy": 0.0 if i < 7 else 1.0} for i in range(19)]
        + [{"routing_accuracy": 1.0}],
    )
    baseline.runs[19] = Run("ex-19", scores={"routing_accuracy": 0.0})  # one the run fixed
    (alone,) = evaluate([worse], thresholds={}, baselines={"a": baseline}, max_regression={})
    assert "p = 0.0195" in alone.message and "Holm-adjusted 0.0195 over 1 check(s)" in alone.message
    mixed = [
        {"routing_accuracy": float(i % 2), "resolution_coverage": float(i % 2)} for i in range(12)
    ]
    other_base = side("b", mixed)
    other = side("b", [{k: 1 - v for k, v in row.items()} for row in mixed])  # 6 up, 6 down
    both = evaluate(
        [worse, other],
        thresholds={},
        baselines={"a": baseline, "b": other_base},
        max_regression={"routing_accuracy": 0, "resolution_coverage": 0},
        allow_untested=True,  # target a scores no coverage
    )
    assert both == []


def test_by_default_the_gate_checks_the_headline_scores_and_the_error_rate():
    scores = {"routing_accuracy": 1.0, "resolution_coverage": 1.0, "total_tokens": 10}
    one = side("t", [scores] * 4)
    assert checked_keys(one, one, {}) == ["routing_accuracy", "resolution_coverage", "error_rate"]
    assert checked_keys(one, one, {"total_tokens": 0}) == ["total_tokens", "error_rate"]
    assert checked_keys(one, one, {}, ["total_tokens"]) == ["total_tokens", "error_rate"]


def test_a_baseline_file_keeps_each_examples_errors(tmp_path):
    broken = side("swarm", _hard_and_easy(), errors={0, 3})
    path = tmp_path / "base.json"
    path.write_text(strict_json(baseline_data([broken])))
    (read,) = read_baseline_file(path)
    shares = read.per_example_figure("errors")
    assert shares == {f"ex-{i}": (1.0 if i in (0, 3) else 0.0) for i in range(30)}
    # and a run that errors where the baseline did not fails against the file
    worse = side("swarm", _hard_and_easy(), errors=set(range(14)))
    assert any(f.startswith("error rate regressed") for f in check_baseline(worse, read, {}))


def test_a_run_figure_in_max_regression_is_refused_at_its_line(tmp_path, invoke, demo_spec):
    text = demo_spec.read_text().replace("../datasets/", f"{demo_spec.parent.parent}/datasets/")
    spec = tmp_path / "routing.yaml"
    spec.write_text(text + "max_regression:\n  latency_p50_s: 0.1\n")
    result = invoke("run", str(spec), "--store", str(tmp_path / "db"))
    assert result.exit_code == 2
    line = text.count("\n") + 2
    assert f"routing.yaml:{line}: 'latency_p50_s' is a figure of the whole run" in result.output
    assert "gate it with 'thresholds:' instead" in result.output
