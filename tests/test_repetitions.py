"""pass@k, pass^k and the flaky examples: the estimators against hand counts and a brute-force
enumeration over subsets of repetitions, Wilson's interval against the inequality that
defines it, and the figures through the CLI on a target whose pass or fail per repetition
the test fixes."""

from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from projects import project, rows

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.registry import metric
from agenteval_cli.metrics.repetitions import pass_at_k, pass_hat_k, repeated, wilson
from agenteval_cli.metrics.summary import Summary
from agenteval_cli.report import comparison
from agenteval_cli.report.html import render_html
from agenteval_cli.report.markdown import render_markdown
from agenteval_cli.results.sources import ExperimentData, Run

Z = 1.959963984540054


@pytest.mark.parametrize(
    ("n", "c", "k", "at", "hat"),
    [
        (3, 2, 2, 1.0, 1 / 3),  # 3 pairs, every one holds a pass, one holds two
        (5, 2, 3, 0.9, 0.0),  # of 10 triples only {f, f, f} misses; none holds 3 passes
        (4, 3, 2, 1.0, 0.5),  # 6 pairs, 3 of them both passes
        (4, 1, 2, 0.5, 0.0),  # 3 of 6 pairs hold the one pass
        (3, 3, 3, 1.0, 1.0),
        (3, 0, 1, 0.0, 0.0),
    ],
)
def test_estimators_match_hand_counts(n, c, k, at, hat):
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_estimators_equal_the_share_of_every_subset_of_k_repetitions():
    """Unbiased: over every k-subset of an example's n repetitions, the share that holds a
    pass (pass@k) and the share that holds only passes (pass^k)."""
    for n in range(1, 8):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                anyone = Fraction(sum(any(outcomes[i] for i in s) for s in subsets), len(subsets))
                everyone = Fraction(sum(all(outcomes[i] for i in s) for s in subsets), len(subsets))
                assert pass_at_k(n, c, k) == pytest.approx(float(anyone), abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(float(everyone), abs=1e-12)


def test_estimators_refuse_a_k_beyond_the_repetitions():
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


@pytest.mark.parametrize(("successes", "total"), [(0, 4), (2, 4), (1, 10), (7, 9), (20, 20)])
def test_wilson_is_the_set_of_shares_the_score_test_keeps(successes, total):
    """Wilson's bounds are the p where (p̂ − p)² = z² p (1 − p) / n: the roots of
    (1 + z²/n) p² − (2 p̂ + z²/n) p + p̂² = 0, solved here directly."""
    share = successes / total
    a = 1 + Z * Z / total
    b = -(2 * share + Z * Z / total)
    root = math.sqrt(b * b - 4 * a * share * share)
    low, high = wilson(successes, total)
    assert low == pytest.approx((-b - root) / (2 * a), abs=1e-12)
    assert high == pytest.approx((-b + root) / (2 * a), abs=1e-12)
    assert low < high  # never of zero width, not even at 0 of n or n of n


def test_wilson_at_nothing_passing_is_z_squared_over_n_plus_z_squared():
    assert wilson(0, 4) == (0.0, pytest.approx(Z * Z / (4 + Z * Z)))


def test_figures_average_the_examples_and_count_the_flaky_ones():
    """a: 2 of 3, b: 3 of 3, c: 0 of 3. pass^2 = (1/3 + 1 + 0) / 3 = 4/9; pass@2 =
    (1 + 1 + 0) / 3; pass^3 = 1/3; a alone is flaky."""
    found = repeated("k", {"a": [True, True, False], "b": [True] * 3, "c": [False] * 3})
    assert (found.examples, found.repetitions) == (3, 3)
    assert [(a.k, a.pass_at, a.pass_hat) for a in found.at] == [
        (1, pytest.approx(5 / 9), pytest.approx(5 / 9)),
        (2, pytest.approx(2 / 3), pytest.approx(4 / 9)),
        (3, pytest.approx(2 / 3), pytest.approx(1 / 3)),
    ]
    assert (found.flaky.examples, found.flaky.repeated) == (1, 3)


def test_an_example_counts_at_k_only_with_k_repetitions():
    """b has two outcomes (its third repetition scored null): it is in k = 1, 2, not 3."""
    found = repeated("k", {"a": [True, False, False], "b": [True, True]})
    assert [(a.k, a.examples) for a in found.at] == [(1, 2), (2, 2), (3, 1)]
    assert found.at_k(3).pass_at == pytest.approx(1.0)  # a: 1 − C(2,3)/C(3,3) = 1


CATALOG = Catalog.of(
    [
        metric("ok", fmt="percent", binary=True),
        metric("clean", lower=True, fmt="percent", binary=True),
        metric("rate", fmt="percent"),
    ],
    keys=("ok", "clean", "rate"),
)


def test_an_unanswered_repetition_fails_every_pass_fail_key():
    """An error or an interrupt is never a pass, whatever the trace scored (its keys that
    need the answer are null); a null score of an answered repetition is no outcome; a rate
    is not pass/fail; a key a repetition was not scored on at all (a sampled evaluator's
    other examples) is no outcome either."""
    summary = Summary(catalog=CATALOG)
    summary.add_row("a", 0, None, 0.1, [("ok", 1.0), ("clean", 0.0), ("rate", 0.5)], [])
    summary.add_row("a", 1, "ValueError: boom", 0.1, [("ok", None), ("clean", 0.0)], [])
    summary.add_row("a", 2, None, 0.1, [("ok", None), ("clean", 1.0)], [], interrupted=True)
    summary.add_row("b", 0, None, 0.1, [("ok", 1.0), ("clean", 1.0)], [])
    summary.add_row("b", 1, None, 0.1, [("ok", None), ("clean", 1.0)], [])
    summary.add_row("c", 0, "ValueError: boom", 0.1, [("clean", 0.0)], [])
    assert summary.outcomes == {
        "ok": {"a": [True, False, False], "b": [True]},
        # lower is better: 0 passes
        "clean": {"a": [True, False, False], "b": [False, False], "c": [False]},
    }
    assert list(summary.repeated()) == ["ok", "clean"]
    flaky = summary.flaky()
    assert (flaky.examples, flaky.repeated) == (1, 2)  # a disagrees; b's ok has one outcome


def test_a_conversation_passes_a_request_key_when_every_turn_did():
    """A conversation's request score is its turns' mean: 0.5 is a failure, not a value
    the key cannot have; a single-turn 0.5 leaves the key without figures, saying why."""
    talks = Summary(catalog=CATALOG)
    for rep, value in enumerate([1.0, 0.5]):
        talks.add_row("t", rep, None, 0.1, [("ok", value)], [], conversation=True)
    assert talks.outcomes["ok"] == {"t": [True, False]} and talks.not_binary == {}
    single = Summary(catalog=CATALOG)
    for rep, value in enumerate([1.0, 0.5]):
        single.add_row("s", rep, None, 0.1, [("ok", value)], [])
    found = single.repeated()["ok"]
    assert found.at == () and found.reason == "ok scored 0.5, not 0 or 1: no pass or fail to count"
    assert single.flaky() == type(single.flaky())(0, 0)


# --- through the CLI ----------------------------------------------------------------------

# Example i passes in the first PASSES[i] of its 3 calls (whatever order they run in); e3
# raises every time, which fails it as surely as a wrong answer.
TARGET = """
PASSES = {"e0": 3, "e1": 2, "e2": 1, "e3": 0}
calls = {}


def answer(inputs):
    key = inputs["question"]
    calls[key] = calls.get(key, 0) + 1
    if key == "e3":
        raise ValueError("no answer for e3")
    good = calls[key] <= PASSES[key]
    return {"final_response": "refund issued" if good else "sorry"}
"""
CHECKS = "def said_refund(outputs):\n    return 'refund' in outputs['final_response']\n"
EVALUATORS = (
    "[{name: said_refund, type: custom, target: checks.py:said_refund, binary: true, "
    "format: percent}]"
)


def documented_pass_k() -> dict:
    """The ``pass_k`` example docs/output.md shows, for the run below."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "output.md").read_text()
    block = re.search(r'```json\n\s*("pass_k": .*?)\n\s*```', text, re.S)
    assert block, "docs/output.md shows no pass_k example"
    return json.loads("{" + block.group(1) + "}")["pass_k"]


def rounded(value):
    """``value`` with every float rounded to 3 places, as the docs print it."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return value


def fixed_passes(folder: Path, extra: str) -> Path:
    """The project of four examples passing 3, 2, 1 and 0 of 3 repetitions, its spec ending
    with ``extra``."""
    return project(
        folder,
        TARGET,
        data=rows(4, question="e{i}"),
        evaluators=EVALUATORS,
        concurrency=1,
        files={"checks.py": CHECKS},
        extra=extra,
    )


def test_run_reports_pass_k_of_a_target_whose_passes_are_fixed(tmp_path, invoke):
    """Passes per example 3, 2, 1, 0 of 3 (e3's three errors). By hand: pass^1 = 6/12;
    pass^2 = (1 + 1/3) / 4 = 1/3; pass^3 = 1/4; pass@2 = (1 + 1 + 2/3) / 4 = 2/3; pass@3 =
    3/4; flaky 2 of 4, Wilson [15.0, 85.0]. An example's check passes when every repetition
    does: e1's mean 0.667 is above the threshold, yet it fails, reading 2/3 in the JUnit
    file."""
    spec = fixed_passes(
        tmp_path, 'repetitions: 3\nmax_error_rate: 0.5\nthresholds:\n  said_refund: ">= 0.4"\n'
    )
    out, junit = tmp_path / "out.json", tmp_path / "junit.xml"
    ran = invoke("run", spec, "--store", tmp_path / "db", "--json", out, "--junit", junit)
    assert ran.exit_code == 0, ran.output
    assert "pass^k, k = 1 / 2 / 3 │ 50.0% / 33.3% / 25.0%" in ran.text, ran.text
    assert "pass@k, k = 2 / 3 │ 66.7% / 75.0%" in ran.text
    assert "flaky examples │ 2/4 · 50.0% [15.0, 85.0]" in ran.text

    [experiment] = json.loads(out.read_text())["experiments"]
    figures = experiment["pass_k"]["outcomes"]["said_refund"]
    assert (figures["examples"], figures["repetitions"]) == (4, 3)
    assert [(k["k"], k["examples"]) for k in figures["k"]] == [(1, 4), (2, 4), (3, 4)]
    assert [k["pass_hat_k"] for k in figures["k"]] == pytest.approx([0.5, 1 / 3, 0.25])
    assert documented_pass_k() == rounded(experiment["pass_k"]), "docs/output.md's example"
    assert [k["pass_at_k"] for k in figures["k"]] == pytest.approx([0.5, 2 / 3, 0.75])
    flaky = experiment["pass_k"]["flaky"]
    assert (flaky["examples"], flaky["of"], flaky["share"]) == (2, 4, 0.5)
    assert flaky["ci95"] == pytest.approx([0.15003, 0.84997], abs=1e-4)
    assert "consistency" not in experiment["metrics"]
    # the export reads back: the report of it shows the same figures
    page = tmp_path / "report.html"
    reported = invoke("report", out, "-o", page)
    assert reported.exit_code == 0, reported.output
    assert "<td>said_refund pass^3</td><td>25.0%</td>" in page.read_text()

    text = junit.read_text()
    # e0 alone passes in every repetition; e3 is an error, its check no failure
    assert 'tests="4" failures="2" errors="1"' in text
    assert "said_refund = 2/3 repetitions pass (mean 66.7%), expected" in text
    assert "said_refund = 1/3 repetitions pass (mean 33.3%), expected" in text


def test_one_repetition_has_no_repetition_figures(tmp_path, invoke):
    spec = project(
        tmp_path,
        TARGET,
        data=rows(4, question="e{i}"),
        evaluators=EVALUATORS,
        files={"checks.py": CHECKS},
        extra="max_error_rate: 0.5\n",
    )
    out = tmp_path / "out.json"
    ran = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert ran.exit_code == 0, ran.output
    assert "pass^" not in ran.text and "flaky" not in ran.text
    assert json.loads(out.read_text())["experiments"][0]["pass_k"] is None


def test_binary_must_be_true_or_false(tmp_path, invoke):
    spec = project(
        tmp_path,
        evaluators="[{name: said_refund, type: custom, target: checks.py:said_refund, "
        "binary: maybe}]",
        files={"checks.py": CHECKS},
    )
    ran = invoke("run", spec, "--store", tmp_path / "db")
    assert ran.exit_code == 2
    assert "binary must be true or false, got 'maybe'" in ran.text
    assert "Traceback" not in ran.output


# --- compare and the reports --------------------------------------------------------------


def _side(name: str, passes: dict[str, list[bool]]) -> ExperimentData:
    runs = [
        Run(example, rep, scores={"ok": float(passed), "rate": 0.5})
        for example, outcomes in passes.items()
        for rep, passed in enumerate(outcomes)
    ]
    return ExperimentData(name, name, runs, repetitions=2, catalog=CATALOG)


def test_compare_and_the_reports_show_pass_k_flaky_and_what_the_spread_is():
    """a: x passes 2 of 2, y 1 of 2 → pass^2 = (1 + 0) / 2, pass@2 = 1, one flaky of two;
    b: both 2 of 2 → 100%, none flaky (Wilson's upper bound for 0 of 2: z²/(2 + z²))."""
    built = comparison.build(
        [
            _side("a", {"x": [True, True], "y": [True, False]}),
            _side("b", {"x": [True] * 2, "y": [True] * 2}),
        ]
    )
    upper = 100 * Z * Z / (2 + Z * Z)
    table = render_markdown(built)
    assert "| ok pass^2 | 50.0% | 100.0% |" in table
    assert "| ok pass@2 | 100.0% | 100.0% |" in table
    assert f"| flaky examples | 1/2 · 50.0% [9.5, 90.5] | 0/2 · 0.0% [0.0, {upper:.1f}] |" in table
    assert "± is the run-to-run sd" in table and "consistency" not in table
    page = render_html(built)
    assert "<td>ok pass^2</td><td>50.0%</td><td>100.0%</td>" in page
    assert "± is the run-to-run sd" in page and "consistency" not in page


def test_the_api_gives_the_repetitions_of_the_json_export(tmp_path):
    from agenteval_cli import api

    spec = fixed_passes(tmp_path, "repetitions: 3\nmax_error_rate: 0.5\n")
    report = api.run(spec, store=tmp_path / "db")
    [experiment] = report.experiments
    found = experiment.pass_k
    assert found is not None
    assert [k["pass_hat_k"] for k in found["outcomes"]["said_refund"]["k"]] == pytest.approx(
        [0.5, 1 / 3, 0.25]
    )
    assert found["flaky"]["examples"] == 2
