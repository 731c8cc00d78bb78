"""``agenteval compare``, the comparison it builds, Markdown, JUnit and dataset add-failures."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from report_fixtures import demo_run, hostile_sides
from rich.console import Console

from agenteval_cli.core.records import Result, Score, Trace
from agenteval_cli.gating.examples import failed_examples
from agenteval_cli.report import comparison
from agenteval_cli.report.compare_console import print_comparison
from agenteval_cli.report.html import render_html
from agenteval_cli.report.markdown import render_markdown
from agenteval_cli.results import sources
from agenteval_cli.results.figures import from_results
from agenteval_cli.results.sources import ExperimentData, Run

__all__ = ["demo_run"]

WIDE = {"COLUMNS": "160"}  # no wrapping in the lines the tests read


def test_compare_prints_the_statistical_comparison(demo_run, invoke):
    result = invoke("compare", "supervisor", "swarm", "--store", str(demo_run / "db"), env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "supervisor vs swarm · 32 paired examples" in out
    assert "95% CI" in out and "mid-p McNemar" in out and "paired t" in out
    # the demo's supervisor spends significantly more tokens than the swarm
    tokens = next(line for line in out.splitlines() if line.split()[:1] == ["tokens"])
    assert "<0.001 ▲" in tokens
    assert "examples where the targets disagree most" in out
    assert "routing of swarm" in out
    assert "handoff chain length (examples per value)" in out


def test_the_comparison_matches_the_per_example_scores(demo_run):
    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    built = comparison.build(sides)
    row = next(r for r in built.rows if r.key == "routing_accuracy")
    sup, swarm = (s.per_example("routing_accuracy") for s in sides)
    diffs = [swarm[e] - sup[e] for e in sup]
    assert row.vs_first[0].diff == pytest.approx(sum(diffs) / len(diffs))
    assert row.vs_first[0].ci_low <= row.vs_first[0].diff <= row.vs_first[0].ci_high
    again = comparison.build(sources.load(["supervisor", "swarm"], demo_run / "db"))
    assert again.rows[0].vs_first == built.rows[0].vs_first  # seeded: repeatable
    # the confusion matrix counts each expected agent once per example
    expected = sum(
        len(r.reference["expected_agents"]) or 1 for r in sides[1].runs if r.error is None
    )
    assert sum(built.confusion[1].counts.values()) >= expected


def test_zero_one_rows_show_their_discordant_counts_and_quiet_rows_what_they_could_detect(
    demo_run, invoke
):
    """The ping-pong rate is 0 or 1 per example, lower is better: its line counts the
    examples where the swarm is 0 and the supervisor 1 (better), the reverse (worse) and
    the ties; a row that is not significant says the smallest difference its examples
    detect, a significant one does not."""
    import statistics

    from agenteval_cli.metrics.planning import paired_detectable

    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    sup, swarm = (s.per_example("ping_pong") for s in sides)
    better = sum(1 for e in sup if swarm[e] == 0 and sup[e] == 1)
    worse = sum(1 for e in sup if swarm[e] == 1 and sup[e] == 0)
    ties = len(sup) - better - worse
    out = invoke("compare", "supervisor", "swarm", "--store", str(demo_run / "db"), env=WIDE)
    text = " ".join(out.output.split())
    assert f"ping-pong: better on {better}, worse on {worse}, {ties} ties" in text
    coverage_a, coverage_b = (s.per_example("resolution_coverage") for s in sides)
    diffs = [coverage_b[e] - coverage_a[e] for e in coverage_a]
    row = next(r for r in comparison.build(sides).rows if r.key == "resolution_coverage")
    assert not row.vs_first[0].significant  # the demo's −13 pp on 32 examples
    expected = paired_detectable(len(diffs), statistics.stdev(diffs))
    assert row.vs_first[0].detectable == pytest.approx(expected)
    assert f"coverage: 32 examples detect ±{expected * 100:.1f} pp with 80% power" in text
    assert "tokens: 32 examples detect" not in text  # significant: nothing to detect
    # the Markdown and HTML reports carry them as columns
    markdown = (demo_run / "run.md").read_text()
    row = next(x for x in markdown.splitlines() if x.startswith("| ping-pong"))
    assert f"| {better} / {worse} / {ties} |" in row
    row = next(x for x in markdown.splitlines() if x.startswith("| resolution coverage"))
    assert row.endswith(f"| ±{expected * 100:.1f} pp |")
    page = (demo_run / "run.html").read_text()
    cells = page.split('<tr data-metric="ping_pong">', 1)[1].split("</tr>", 1)[0]
    assert f"<td>{better} / {worse} / {ties}</td>" in cells


def test_different_dataset_versions_are_refused_unless_allowed(demo_run, tmp_path, invoke):
    data = json.loads((demo_run / "results.json").read_text())
    first, second = data["experiments"]
    second["dataset_hash"] = "0" * 64
    for name, exp in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps({"experiments": [exp]}))
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    refused = invoke("compare", a, b, env=WIDE)
    assert refused.exit_code == 2
    assert "different dataset versions" in refused.output
    assert "--allow-different-data" in refused.output
    allowed = invoke("compare", a, b, "--allow-different-data", env=WIDE)
    assert allowed.exit_code == 0, allowed.output
    assert "supervisor vs swarm · 32 paired examples" in allowed.output


def test_unknown_names_and_bad_files_are_one_line_errors(demo_run, tmp_path, invoke):
    result = invoke("compare", "supervisr", "swarm", "--store", str(demo_run / "db"), env=WIDE)
    assert result.exit_code == 2
    assert "did you mean 'supervisor'?" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = invoke("compare", str(bad), env=WIDE)
    assert result.exit_code == 2
    assert f"{bad}:1: not valid JSON" in result.output


def test_pass_k_and_spread_over_repetitions():
    def run(example: str, rep: int, routing: float, tokens: int) -> Run:
        scores = {"routing_accuracy": routing, "routing_exact": routing, "total_tokens": tokens}
        return Run(example, rep, scores=scores)

    side = ExperimentData(
        "e",
        "t",
        [run("a", 0, 1.0, 10), run("a", 1, 1.0, 12), run("b", 0, 1.0, 10), run("b", 1, 0.0, 10)],
        repetitions=2,
    )
    # only routing_exact is declared pass/fail: a passed 2 of 2, b 1 of 2
    [exact] = side.summary().repeated().values()
    assert exact.key == "routing_exact" and (exact.flaky.examples, exact.flaky.repeated) == (1, 2)
    assert [(a.pass_at, a.pass_hat) for a in exact.at] == [(0.75, 0.75), (1.0, 0.5)]
    # repetition means 1.0 and 0.5: sample sd = 0.3536
    assert side.summary().spread("routing_accuracy") == pytest.approx(0.35355, 1e-4)
    results = [
        Result(r.example_id, r.repetition, {}, Trace(), [Score(k, v) for k, v in r.scores.items()])
        for r in side.runs
    ]
    summary = from_results(results)
    assert summary.repeated() == side.summary().repeated()
    assert summary.spread("routing_accuracy") == pytest.approx(0.35355, 1e-4)
    assert from_results(results[:1]).repeated() == {} and from_results(results[:1]).flaky() is None


def test_markdown_escapes_model_text():
    text = render_markdown(comparison.build(hostile_sides()), title="a | b")
    assert "&lt;b class=&quot;injected&quot;&gt;" in text
    assert "<b class" not in text
    assert "\\| pipes" in text
    assert "| routing accuracy | 100.0% | 50.0% | −50.0 pp |" in text


def test_junit_has_a_case_per_example_target_and_check(demo_run):
    root = ET.parse(demo_run / "run.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"supervisor", "swarm"}
    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    for side in sides:
        suite = suites[side.target]
        # default checks: routing accuracy, coverage and ping-pong, for each of 32 examples
        assert suite.get("tests") == "96"
        failed_ids = {
            c.get("classname").split(".", 1)[1] for c in suite if c.find("failure") is not None
        }
        assert failed_ids == set(failed_examples(side, {}))
    failure = next(
        c.find("failure")
        for c in suites["swarm"]
        if c.get("classname") == "swarm.multi-sso-and-card" and c.get("name") == "routing_accuracy"
    )
    assert failure.get("message") == "routing_accuracy = 50.0%, expected >= 1"
    assert "missing ['billing']" in failure.text


def test_add_failures_appends_failed_examples_once(demo_run, tmp_path, invoke):
    target = tmp_path / "review.jsonl"
    store = str(demo_run / "db")
    result = invoke(
        "dataset",
        "add-failures",
        "swarm",
        "--to",
        str(target),
        "--store",
        store,
        env=WIDE,
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    swarm = sources.load(["swarm"], demo_run / "db")[0]
    assert [r["id"] for r in rows] == failed_examples(swarm, {})
    card = next(r for r in rows if r["id"] == "multi-sso-and-card")
    assert card["outputs"]["expected_agents"] == ["tech_support", "billing"]
    assert card["metadata"]["agent_path"] == ["account", "tech_support"]
    assert "missing ['billing']" in card["metadata"]["failure"]
    assert invoke("dataset", "validate", str(target), env=WIDE).exit_code == 0
    again = invoke(
        "dataset",
        "add-failures",
        "swarm",
        "--to",
        str(target),
        "--store",
        store,
        env=WIDE,
    )
    assert again.exit_code == 0, again.output
    assert f"no failed example of {swarm.name} to add ({len(rows)} already there)" in again.text
    assert len(target.read_text().splitlines()) == len(rows)
    wrong = invoke(
        "dataset",
        "add-failures",
        "swarm",
        "--to",
        str(tmp_path / "x.csv"),
        "--store",
        store,
        env=WIDE,
    )
    assert wrong.exit_code == 2 and "give a .jsonl file" in wrong.output


def test_add_failures_with_nothing_failed_writes_no_file(demo_run, tmp_path, invoke):
    document = json.loads((demo_run / "results.json").read_text())
    supervisor = next(e for e in document["experiments"] if e["target"] == "supervisor")
    failed = set(failed_examples(sources.load(["supervisor"], demo_run / "db")[0], {}))
    assert failed  # the demo's supervisor misses one request's second agent
    supervisor["results"] = [r for r in supervisor["results"] if r["example_id"] not in failed]
    passed = tmp_path / "passed.json"
    passed.write_text(json.dumps({"experiments": [supervisor]}))
    target = tmp_path / "review.jsonl"
    result = invoke("dataset", "add-failures", str(passed), "--to", str(target))
    assert result.exit_code == 0, result.output
    assert "no failed example of" in result.text and "nothing written" in result.text
    assert not target.exists()


def test_a_side_whose_tokens_are_all_unknown_shows_na():
    def run(example: str, tokens: float | None) -> Run:
        return Run(example, scores={"routing_accuracy": 1.0, "total_tokens": tokens})

    sides = [
        ExperimentData("h", "hosted", [run("a", 100.0), run("b", 300.0)]),
        ExperimentData("l", "local", [run("a", None), run("b", None)]),
    ]
    built = comparison.build(sides)
    row = next(r for r in built.rows if r.key == "total_tokens")
    assert row.means == [200.0, None] and row.vs_first == [None]
    out = io.StringIO()
    print_comparison(Console(file=out, width=160), built)
    line = next(x for x in out.getvalue().splitlines() if x.split()[:1] == ["tokens"])
    assert line.split()[1:4] == ["200", "n/a", "–"]
    assert "| tokens / request | 200 | n/a | – |" in render_markdown(built)
    html = render_html(built)
    assert re.search(
        r'data-metric="total_tokens"><td>tokens / request</td><td>200</td><td>n/a</td>', html
    )


def test_the_bootstrap_is_an_option_from_thirty_examples(demo_run, invoke, tmp_path):
    """--bootstrap on the demo's 32 examples: percentile intervals whose p inverts them;
    on fewer than 30 shared examples, one line saying why, exit 2."""
    from agenteval_cli.metrics.stats import bootstrap_ci

    db = str(demo_run / "db")
    out = invoke("compare", "supervisor", "swarm", "--store", db, "--bootstrap", env=WIDE)
    assert out.exit_code == 0, out.output
    assert "percentile bootstrap" in " ".join(out.output.split())
    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    a, b = (s.per_example("output_tokens") for s in sides)
    low, high = bootstrap_ci([b[e] - a[e] for e in sorted(a)])
    line = next(x for x in out.output.splitlines() if x.split()[:2] == ["output", "tokens"])
    assert f"[{low:,.0f}, {high:,.0f}]".replace("-", "−") in line
    data = json.loads((demo_run / "results.json").read_text())
    first, second = data["experiments"]
    for exp in (first, second):
        kept = {r["example_id"] for r in exp["results"]}
        keep = sorted(kept)[:10]
        exp["results"] = [r for r in exp["results"] if r["example_id"] in keep]
    for name, exp in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps({"experiments": [exp]}))
    refused = invoke("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--bootstrap")
    assert refused.exit_code == 2
    assert "the bootstrap needs 30 or more paired examples; these share 10" in refused.output


def test_compare_json_has_every_figure_with_q_values_and_what_quiet_rows_could_detect(
    demo_run, invoke
):
    import statistics

    from agenteval_cli.metrics.planning import paired_detectable

    out = invoke("compare", "supervisor", "swarm", "--store", str(demo_run / "db"), "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["targets"] == ["supervisor", "swarm"] and data["paired_examples"] == 32
    rows = {r["metric"]: r for r in data["rows"]}
    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    sup, swarm = (s.per_example("ping_pong") for s in sides)
    pong = rows["ping_pong"]["vs_first"][0]
    assert pong["kind"] == "binary" and pong["p_value"] is None
    assert pong["not_tested"] == "too few differing examples to test"
    assert pong["worse"] == sum(1 for e in sup if swarm[e] > sup[e])  # lower is better
    assert pong["better"] == sum(1 for e in sup if swarm[e] < sup[e])
    a, b = (s.per_example("routing_accuracy") for s in sides)
    diffs = [b[e] - a[e] for e in a]
    routing = rows["routing_accuracy"]["vs_first"][0]
    assert routing["diff"] == pytest.approx(statistics.mean(diffs))
    assert routing["detectable"] == pytest.approx(paired_detectable(32, statistics.stdev(diffs)))
    assert rows["total_tokens"]["vs_first"][0]["detectable"] is None  # significant
    # Benjamini–Hochberg by hand over every tested p: q_(i) = min over j >= i of p_(j)·m/j
    tested = [c for r in data["rows"] for c in r["vs_first"] if c.get("p_value") is not None]
    assert len(tested) == data["tested"]
    ordered = sorted(tested, key=lambda c: c["p_value"])
    m = len(ordered)
    for i, c in enumerate(ordered):
        expected = min(
            min(1.0, d["p_value"] * m / (j + 1)) for j, d in enumerate(ordered) if j >= i
        )
        assert c["q_value"] == pytest.approx(expected)


def test_a_costs_median_per_example_ratio_is_shown_beside_its_mean(demo_run, invoke):
    import statistics

    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    a, b = (s.per_example("cost_usd") for s in sides)
    ratio = statistics.median(b[e] / a[e] for e in a)
    out = invoke("compare", "supervisor", "swarm", "--store", str(demo_run / "db"), env=WIDE)
    assert f"cost / request: median per-example ratio swarm / supervisor ×{ratio:.2f}" in out.output
    data = json.loads(
        invoke("compare", "supervisor", "swarm", "--store", str(demo_run / "db"), "--json").stdout
    )
    cost = next(r for r in data["rows"] if r["metric"] == "cost_usd")["vs_first"][0]
    assert cost["kind"] == "skewed" and cost["median_ratio"] == pytest.approx(ratio)
