"""Hostile data in every output: the terminal, JUnit, Markdown and ``--json`` stay intact.

Target names, example ids, questions, outputs and error messages are data: escape sequences
never reach the terminal, Rich markup in them shows as written, JUnit parses with a strict
XML parser, a Markdown code span cannot be closed from inside, and ``--json`` is strict JSON.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from agenteval_cli.report import comparison
from agenteval_cli.report.compare_console import print_comparison
from agenteval_cli.report.junit import junit_tree
from agenteval_cli.report.markdown import render_markdown
from agenteval_cli.results.sources import ExperimentData, Run

TARGETS = """
def good(inputs):
    return {"final_response": "ok", "ratio": float("nan"), "big": float("inf"),
            "small": float("-inf")}

def bad(inputs):
    raise ValueError("\\x1b[31mboom\\x1b[0m [bold]not markup[/] \\x00\\x07")
"""
HOSTILE_ID = "a`b](http://evil.example)"
QUESTION = "\x1b[2J\x1b]0;pwned\x07[bold red]hi[/] | q"
SPEC = """
dataset: rows.jsonl
targets:
  "g\\e[31m[red]ood": t.py:good
  "b\\e]0;x\\aad": t.py:bad
evaluators: [routing_accuracy]
"""

WIDE = {"COLUMNS": "200"}  # no wrapping in the lines the tests read


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, invoke):
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "t.py").write_text(TARGETS)
    rows = [
        {"id": HOSTILE_ID, "inputs": {"question": QUESTION}, "outputs": {"expected_agents": []}},
        {"id": "plain", "inputs": {"question": "fine"}, "outputs": {"expected_agents": []}},
    ]
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "spec.yaml").write_text(SPEC)
    result = invoke(
        "run", tmp / "spec.yaml", "--store", tmp / "db", "--json", tmp / "r.json",
        "--junit", tmp / "r.xml", "--markdown", tmp / "r.md",
     env=WIDE)  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return tmp, result.output


def assert_clean_terminal_text(text: str) -> None:
    controls = sorted({hex(ord(c)) for c in text if (ord(c) < 32 and c != "\n") or ord(c) == 127})
    assert controls == [], (controls, text)


def test_run_prints_no_escape_sequence_and_no_markup_from_data(hostile_run):
    _, output = hostile_run
    assert "Traceback" not in output
    assert_clean_terminal_text(output)
    assert "g[red]ood 2/2 (0 errors)" in output  # the name as written, its escape removed
    assert "bad 2/2 (2 errors)" in output  # an OSC sequence is removed whole
    assert "2 × ValueError: boom [bold]not markup[/] " in output


def test_compare_and_experiments_print_no_escape_sequence(hostile_run, invoke):
    tmp, _ = hostile_run
    listed = invoke("experiments", "--store", tmp / "db", env=WIDE)
    assert listed.exit_code == 0, listed.output
    assert_clean_terminal_text(listed.output)
    assert "spec-g[red]ood-" in listed.output and "spec-bad-" in listed.output
    names = [e["name"] for e in json.loads((tmp / "r.json").read_text())["experiments"]]
    assert names[0].startswith("spec-g\x1b[31m[red]ood-")
    compared = invoke("compare", *names, "--store", tmp / "db", env=WIDE)
    assert compared.exit_code == 0, compared.output
    assert_clean_terminal_text(compared.output)
    assert "g[red]ood vs bad" in compared.output


def test_the_comparison_on_the_console_shows_data_as_written():
    def run(score: float, path: list[str]) -> Run:
        return Run(HOSTILE_ID, inputs={"question": QUESTION}, reference={"expected_agents": ["x"]},
                   scores={"routing_accuracy": score}, agent_path=path)  # fmt: skip

    sides = [
        ExperimentData("n-1", "t\x1b[31m[b]one", [run(1.0, ["x\x1b[2J"])]),
        ExperimentData("n-2", "two\x9b2J", [run(0.0, ["[i]y"])]),
    ]
    out = io.StringIO()
    print_comparison(Console(file=out, width=200), comparison.build(sides), by_agent=True)
    text = out.getvalue()
    assert_clean_terminal_text(text)
    assert "t[b]one vs two" in text
    assert "[bold red]hi[/] | q" in text and "pwned" not in text  # the question as written
    assert HOSTILE_ID in text and "[i]y" in text and "routing of t[b]one" in text


def test_a_bad_name_in_an_error_line_is_shown_as_written(tmp_path, invoke):
    result = invoke("compare", "x[/]\x1b[31m", "--store", tmp_path / "none.db", env=WIDE)
    assert result.exit_code == 2
    assert result.output.startswith("error: no experiment store at ")


def test_junit_with_escape_sequences_parses_strictly(hostile_run):
    tmp, _ = hostile_run
    root = ET.fromstring((tmp / "r.xml").read_bytes())  # expat: well-formed XML 1.0 only
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"g[red]ood", "bad"}
    errors = [c.find("error") for c in suites["bad"].iter("testcase")]
    assert len(errors) == 6  # 2 examples x 3 default checks
    assert {e.get("message") for e in errors} == {"ValueError: boom [bold]not markup[/] "}
    classnames = {c.get("classname") for c in suites["bad"].iter("testcase")}
    assert classnames == {f"bad.{HOSTILE_ID}", "bad.plain"}


def test_junit_strips_every_character_xml_cannot_hold():
    hostile = "".join(chr(c) for c in range(32)) + "\ud800\ufffe\uffff end"
    side = ExperimentData(
        "x\x1b[1m", "t\x00", [Run("e\x0c", scores={"routing_accuracy": 0.0}, error=hostile)]
    )
    tree = junit_tree([side], thresholds={})
    text = ET.tostring(tree, encoding="unicode")
    root = ET.fromstring(text)
    error = root.find("testsuite/testcase/error")
    assert error is not None
    assert error.text == "\t\n\n end"  # a parser reads a carriage return as a newline
    assert root.find("testsuite").get("name") == "t"
    assert root.find("testsuite/testcase").get("classname") == "t.e"


def test_json_is_strict_with_null_for_non_finite_numbers(hostile_run):
    tmp, _ = hostile_run

    def refuse(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    data = json.loads((tmp / "r.json").read_text(), parse_constant=refuse)
    good = next(e for e in data["experiments"] if e["target"] == "g\x1b[31m[red]ood")
    outputs = {r["example_id"]: r["outputs"] for r in good["results"]}
    assert outputs[HOSTILE_ID] == {
        "final_response": "ok",
        "ratio": None,
        "big": None,
        "small": None,
    }


def _markdown_html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def _sides(example_id: str, target: str) -> list[ExperimentData]:
    def run(score: float) -> Run:
        return Run(example_id, inputs={"question": "[click](http://evil.example)"},
                   scores={"routing_accuracy": score}, agent_path=["a"])  # fmt: skip

    return [ExperimentData("x-1", target, [run(1.0)]), ExperimentData("y-1", "y", [run(0.0)])]


@pytest.mark.parametrize(
    "example_id",
    [HOSTILE_ID, "`[x](http://evil.example)`", "a``b`", "a|b](http://evil.example)", "`"],
)
def test_markdown_code_spans_hold_any_id(example_id):
    text = render_markdown(comparison.build(_sides(example_id, "t`[y](http://evil.example)")))
    html = _markdown_html(text)
    assert "<a " not in html, text  # no live link, from the id, the target or the question
    codes = [c.split("</code>")[0] for c in html.split("<code>")[1:]]
    escaped = example_id.replace("&", "&amp;").replace('"', "&quot;")
    assert escaped in codes, (codes, text)
    assert "t`[y](http://evil.example)" in codes
    assert "[click](http:&#47;/evil.example)" in text or "\\[click\\]" in text


def test_markdown_disagreement_row_keeps_its_columns():
    text = render_markdown(comparison.build(_sides("a|b", "t")))
    html = _markdown_html(text)
    rows = [r for r in html.split("<tr>") if "<code>a|b</code>" in r]
    assert len(rows) == 1 and rows[0].count("<td") == 4  # example, question, two sides


def test_markdown_file_from_a_hostile_run_has_no_live_link(hostile_run):
    tmp, _ = hostile_run
    text = (tmp / "r.md").read_text()
    assert "\x1b" not in text and "<a " not in _markdown_html(text)
    assert "`g[red]ood`" in text


def test_a_report_redacts_secrets(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("AGENTEVAL_TEST_SECRET", "s3cr3t-value-123")
    sides = _sides("id-s3cr3t-value-123", "t")
    text = render_markdown(comparison.build(sides))
    assert "s3cr3t-value-123" not in text and "`id-***`" in text
    xml = ET.tostring(junit_tree(sides, thresholds={}), encoding="unicode")
    assert "s3cr3t-value-123" not in xml and "id-***" in xml


def test_a_saved_baseline_is_strict_json(tmp_path):
    from agenteval_cli.gating.baselines import save_baseline

    nan, inf = float("nan"), float("inf")
    runs = [
        Run("a", scores={"my_ratio": nan, "routing_accuracy": 1.0}),
        Run("b", scores={"my_ratio": inf}),
    ]
    save_baseline(tmp_path / "b.json", [ExperimentData("n-1", "t", runs)], git_commit=None)

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    data = json.loads((tmp_path / "b.json").read_text(), parse_constant=refuse)
    (experiment,) = data["experiments"]
    assert experiment["scores"] == {"a": {"routing_accuracy": 1.0, "my_ratio": None},
                                    "b": {"my_ratio": None}}  # fmt: skip
    assert experiment["metrics"]["my_ratio"] is None  # the mean of NaN and infinity
    assert experiment["metrics"]["routing_accuracy"] == 1.0


def test_add_failures_prints_a_hostile_experiment_name_as_written(hostile_run, tmp_path, invoke):
    tmp, _ = hostile_run
    names = [e["name"] for e in json.loads((tmp / "r.json").read_text())["experiments"]]
    bad = next(n for n in names if n.startswith("spec-b"))
    to = tmp_path / "review.jsonl"
    result = invoke("dataset", "add-failures", bad, "--to", to, "--store", tmp / "db", env=WIDE)
    assert result.exit_code == 0, result.output
    assert_clean_terminal_text(result.output)
    assert "appended 2 failed example(s) of spec-bad-" in result.output
    rows = [json.loads(line) for line in to.read_text().splitlines()]
    assert [r["id"] for r in rows] == [HOSTILE_ID, "plain"]
    assert rows[0]["inputs"]["question"] == QUESTION  # the data itself is kept as it was


def test_a_metric_key_cannot_make_a_link_in_the_markdown_table():
    key = "**[x](http://evil.example)**"
    sides = [
        ExperimentData("n-1", "a", [Run("e", scores={key: 1.0})]),
        ExperimentData("n-2", "b", [Run("e", scores={key: 0.0})]),
    ]
    text = render_markdown(comparison.build(sides))
    assert "<a " not in _markdown_html(text) and "<strong>" not in _markdown_html(text)
    row = next(line for line in text.splitlines() if "evil" in line)
    # one example: no interval, too few to test, no 0/1 counts (a plain number), no MDE
    escaped = "\\*\\*\\[x\\](http:&#47;/evil.example)\\*\\*"
    assert row == f"| {escaped} | 1 | 0 | −1 | – | too few |  | – |"
