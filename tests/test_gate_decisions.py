"""The gate decides from the interval compare shows: a drop whose interval lies wholly
beyond its allowed drop fails whatever the count of differing examples; Holm's step-down
reads as intervals at its levels, and a check it clears, or one no result could fail, says
so. The reference figures are scipy 1.17.1's (``scipy.stats``), written out here."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from agenteval_cli.gating.family import decide
from agenteval_cli.gating.margins import ALPHA, could_fail
from agenteval_cli.gating.regression import baseline_checks, check_baseline
from agenteval_cli.gating.verdict import judge
from agenteval_cli.gating.wording import outcome_line
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.metrics.paired import paired_comparison
from agenteval_cli.metrics.stats import holm
from agenteval_cli.report.comparison import build
from agenteval_cli.results.sources import ExperimentData, Run
from agenteval_cli.store.results import strict_json


def side(target: str, scores: list[dict], name: str | None = None) -> ExperimentData:
    runs = [Run(example_id=f"ex-{i}", scores=s) for i, s in enumerate(scores)]
    return ExperimentData(name or f"exp-{target}", target, runs)


def routing(right: int, n: int) -> list[dict]:
    return [{"routing_accuracy": 1.0 if i < right else 0.0} for i in range(n)]


def test_five_of_22_worse_fails_the_gate_with_the_interval_compare_shows():
    """90.9% → 68.2%, 5 examples worse and none better: the 95% interval compare shows is
    [−43.4, −1.0] pp, wholly below 0, so the gate fails; under the old rule 5 differing
    examples were "not tested" and the gate passed."""
    baseline = side("swarm", routing(20, 22), "before")
    run = side("swarm", routing(15, 22), "after")
    (line,) = check_baseline(run, baseline, {})
    shown = build([baseline, run]).rows[0].vs_first[0]
    assert shown is not None and (round(shown.ci_low * 100, 1), round(shown.ci_high * 100, 1)) == (
        -43.4,
        -1.0,
    )
    assert line.startswith("routing accuracy regressed: 90.9% → 68.2% (−22.7 pp over 22")
    assert "its 95% interval [−43.4, −1.0] pp lies wholly beyond the allowed drop" in line
    # the one-sided mid-p of 5 of 5 differing examples worse:
    # binom.sf(5, 5, .5) + binom.pmf(5, 5, .5) / 2
    mid_p = 0.015625
    assert f"p = {mid_p:.3g}, Holm-adjusted {mid_p:.3g} over 1 check(s)" in line


def coverage_family() -> tuple[ExperimentData, ExperimentData, list[float]]:
    """Coverage falls on 7 of 12 examples, by more than the 5 pp allowed at 95%; routing and
    agent continuity change both ways."""
    drops = [0.75, 0.5, 0.25, 0.25, 0.5, 0.0, 0.0, 0.25, 0.0, 0.5, 0.0, 0.0]
    flips_a = [1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
    flips_b = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0]
    before, after = [], []
    for i, drop in enumerate(drops):
        before.append(
            {"resolution_coverage": 1.0, "routing_accuracy": 1.0, "agent_continuity": 1.0}
        )
        after.append(
            {
                "resolution_coverage": 1.0 - drop,
                "routing_accuracy": float(flips_a[i]),
                "agent_continuity": float(flips_b[i]),
            }
        )
    for i in (0, 5, 9):  # the run fixed these
        before[i]["routing_accuracy"] = 0.0
        before[i]["agent_continuity"] = 0.0
        after[i]["routing_accuracy"] = after[i]["agent_continuity"] = 1.0
    return side("swarm", before), side("swarm", after), drops


NAMED = {"routing_accuracy": 0.05, "resolution_coverage": 0.05, "agent_continuity": 0.05}


def test_a_drop_holm_clears_says_so_with_the_adjusted_p_and_the_interval_it_decided_from():
    baseline, run, _ = coverage_family()
    alone = check_baseline(run, baseline, {"resolution_coverage": 0.05})
    assert len(alone) == 1 and alone[0].startswith("resolution coverage regressed")
    verdict = judge([run], thresholds={}, baselines={"swarm": baseline}, max_regression=NAMED)
    assert verdict.failures == []
    outcome = next(o for o in verdict.checks if o.check.key == "resolution_coverage")
    assert outcome.status == "cleared"
    tested = [o for o in verdict.checks if o.p_value is not None]
    assert outcome.family == len(tested) == 3
    # the p against the margin: ttest_1samp([d - 0.05 for d in drops], 0, alternative="greater")
    p = 0.011226858832812783
    assert outcome.p_value == pytest.approx(p, rel=1e-9)
    assert outcome.adjusted == pytest.approx(holm([o.p_value for o in tested])[1], rel=1e-9)
    assert ALPHA / 3 < p < ALPHA
    # its interval at Holm's level: t.interval(1 − 2·0.025/3, 11, −mean(drops), sem(drops))
    low, high = -0.4625680381602204, -0.0374319618397794
    assert outcome.comparison is not None
    assert (outcome.comparison.ci_low, outcome.comparison.ci_high) == pytest.approx((low, high))
    line = outcome_line(outcome)
    assert line.startswith("resolution coverage cleared by Holm's adjustment: 100.0% → ")
    assert f"p = {p:.3g}, Holm-adjusted {outcome.adjusted:.3g} over 3 check(s)" in line
    assert "its 98.3% interval [−46.3, −3.7] pp, at Holm's level, does not" in line
    # and at 95%, alone (t.interval(0.95, ...)): [−41.6, −8.4] pp
    assert "its 95% interval [−41.6, −8.4] pp lies beyond the allowed drop (allowed 5.0 pp)" in line


@pytest.mark.parametrize("seed", range(3))
def test_a_check_fails_exactly_when_its_interval_at_holms_level_lies_beyond_its_margin(seed):
    """On random families: the decision, the interval shown and Holm's adjusted p agree."""
    rng = random.Random(seed)
    for _ in range(40):
        n = rng.randint(8, 40)
        shift = rng.choice([0.0, 0.1, 0.2])
        before = [
            {"resolution_coverage": rng.random(), "routing_accuracy": float(rng.random() < 0.7)}
            for _ in range(n)
        ]
        after = [
            {
                "resolution_coverage": min(1.0, max(0.0, b["resolution_coverage"] - shift))
                + rng.gauss(0, 0.1),
                "routing_accuracy": float(rng.random() < 0.7 - shift),
            }
            for b in before
        ]
        allowed = {"resolution_coverage": 0.02, "routing_accuracy": 0}
        checks, _ = baseline_checks(side("t", after), side("t", before), allowed)
        for outcome in decide(checks):
            if outcome.p_value is None:
                continue
            found = outcome.comparison
            assert found is not None and found.ci_high is not None
            assert (outcome.status == "failed") == (found.ci_high < -outcome.check.margin)
            assert (outcome.status == "failed") == (outcome.adjusted < ALPHA)


def test_the_gate_reads_the_comparison_compare_shows():
    baseline, run, _ = coverage_family()
    (check, *_), _ = baseline_checks(run, baseline, NAMED)
    before, after = baseline.per_example(check.key), run.per_example(check.key)
    info = run.catalog.info(check.key)
    kind = paired_kind(info, before.values(), after.values())
    assert check.at(ALPHA) == paired_comparison(info, before, after, kind=kind)
    assert check.at(ALPHA) == build([baseline, replace_name(run)]).rows[0].vs_first[0]


def replace_name(data: ExperimentData) -> ExperimentData:
    return ExperimentData("exp-after", data.target, data.runs)


def test_too_few_differing_examples_to_fail_is_untested_and_fails_unless_allowed():
    """With 4 differing examples no result fails a 0/1 check (all 4 worse: one-sided mid-p
    2⁻⁵ > 2.5%); with 5 one can. A metric the baseline never scored is untested too."""
    assert not could_fail(22, 4, "binary") and could_fail(22, 5, "binary")
    baseline = side("swarm", routing(22, 22))
    run = side("swarm", [{**r, "resolution_coverage": 1.0} for r in routing(18, 22)])
    verdict = judge(
        [run],
        thresholds={},
        baselines={"swarm": baseline},
        max_regression={"routing_accuracy": 0, "resolution_coverage": 0},
    )
    assert [(f.key, f.message) for f in verdict.failures] == [
        (
            "untested",
            "routing accuracy untested: 4 of 22 examples differ: too few for any result to "
            "fail the check (even all of them worse would not)",
        ),
        (
            "untested",
            "resolution coverage untested: the baseline 'exp-swarm' has no value for it",
        ),
    ]
    allowed = judge(
        [run],
        thresholds={},
        baselines={"swarm": baseline},
        max_regression={"routing_accuracy": 0, "resolution_coverage": 0},
        allow_untested=True,
    )
    assert allowed.failures == []
    assert [o.status for o in allowed.checks] == ["untested", "untested", "unchanged"]


def test_an_unchanged_run_passes_and_is_said_to_be_unchanged():
    baseline = side("swarm", routing(20, 22))
    verdict = judge([baseline], thresholds={}, baselines={"swarm": baseline}, max_regression={})
    assert verdict.failures == []
    assert [outcome_line(o) for o in verdict.checks] == [
        "routing accuracy unchanged on all 22 examples",
        "error rate unchanged on all 22 examples",
    ]


def test_the_gates_lines_say_what_each_check_came_to(capsys):
    """A passed gate counts its baseline checks and prints the one Holm cleared; never "no
    significant regression" about checks it did not make."""
    from agenteval_cli.api import Gate
    from agenteval_cli.cli.outputs import print_gate

    baseline, run, _ = coverage_family()
    verdict = judge([run], thresholds={}, baselines={"swarm": baseline}, max_regression=NAMED)
    print_gate(Gate(verdict.failures, checked=True, checks=verdict.checks), checked=True)
    out = capsys.readouterr().out
    assert "no significant regression" not in out
    assert (
        "gate passed: thresholds met; baseline checks: 3 tested, none beyond its allowed drop "
        "after Holm's adjustment (1 cleared by it), 1 unchanged on every example"
    ) in " ".join(out.split())
    assert "swarm: resolution coverage cleared by Holm's adjustment" in out
    short = side("swarm", routing(18, 22))
    allowed = judge(
        [short],
        thresholds={},
        baselines={"swarm": side("swarm", routing(22, 22))},
        max_regression={},
        allow_untested=True,
    )
    print_gate(
        Gate(allowed.failures, checked=True, checks=allowed.checks, allow_untested=True),
        checked=True,
    )
    out = " ".join(capsys.readouterr().out.split())
    assert "baseline checks: 0 tested, none beyond its allowed drop, 1 unchanged on every " in out
    assert "1 untested (allowed)" in out
    assert "swarm: routing accuracy untested: 4 of 22 examples differ" in out
    assert "(allow_untested: passed)" in out


def test_a_run_with_an_untested_check_exits_1_unless_the_spec_allows_it(tmp_path, invoke):
    import json

    from projects import project

    evaluators = "\n  - {name: fine, type: custom, target: evals.py:fine}"
    files = {"evals.py": "def fine(outputs):\n    return 1.0\n"}
    spec = project(
        tmp_path, files=files, evaluators=evaluators, extra="max_regression: {fine: 0}\n"
    )
    saved = tmp_path / "b.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--save-baseline", saved)
    assert result.exit_code == 0, result.output
    data = json.loads(saved.read_text())
    scores = data["experiments"][0]["scores"]
    for example in list(scores)[:2]:  # the run is better on 2 of 3: no result could fail
        scores[example]["fine"] = 0.0
    saved.write_text(json.dumps(data))
    out, junit = tmp_path / "r.json", tmp_path / "r.xml"
    result = invoke(
        "run",
        spec,
        "--store",
        tmp_path / "db",
        "--baseline",
        saved,
        "--json",
        out,
        "--junit",
        junit,
    )
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    why = "2 of 3 examples differ: too few for any result to fail the check"
    assert f"t: fine untested: {why}" in text
    document = json.loads(out.read_text())
    assert out.read_text() == strict_json(document, indent=2) + "\n"  # as every --json is laid out
    gate = document["gate"]
    assert gate["passed"] is False and gate["allow_untested"] is False
    fine, errors = gate["checks"]
    assert (fine["key"], fine["status"], fine["fails_gate"]) == ("fine", "untested", True)
    assert fine["untested"].startswith(why) and fine["ci_low"] is None
    assert (errors["key"], errors["status"], errors["fails_gate"]) == (
        "error_rate",
        "unchanged",
        False,
    )
    suite = ET.parse(junit).getroot().find("testsuite[@name='baseline gate']")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    failure = suite.find("testcase[@name='fine']/failure")
    assert failure is not None and why in failure.get("message", "")
    spec.write_text(spec.read_text() + "allow_untested: true\n")
    result = invoke("run", spec, "--store", tmp_path / "db", "--baseline", saved)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "gate passed: thresholds met; baseline checks: 0 tested" in text
    assert "1 untested (allowed)" in text and "(allow_untested: passed)" in text
    result = invoke("run", spec, "--store", tmp_path / "db", "--baseline", saved, "--junit", junit)
    suite = ET.parse(junit).getroot().find("testsuite[@name='baseline gate']")
    assert suite is not None and suite.get("failures") == "0" and suite.get("skipped") == "1"
    schema = json.loads(invoke("schema").output)
    assert schema["properties"]["allow_untested"]["type"] == "boolean"


def test_the_markdown_says_what_passed_and_what_holm_cleared():
    from agenteval_cli.report.markdown import render_markdown

    baseline, run, _ = coverage_family()
    verdict = judge([run], thresholds={}, baselines={"swarm": baseline}, max_regression=NAMED)
    text = render_markdown(
        build([baseline, replace_name(run)]),
        gate_failures=verdict.failures,
        gate_checks=verdict.checks,
    )
    assert "no significant regression" not in text
    assert "**Gate passed**: thresholds met; baseline checks: 3 tested, none beyond" in text
    assert "- `swarm`: resolution coverage cleared by Holm&#x27;s adjustment" in text  # escaped
