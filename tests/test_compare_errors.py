"""compare and the reports on errored calls: the error-rate and latency rows, a side whose
every call failed, the error reasons, sections that follow the configured evaluators, and
the conversation view of the HTML report."""

from __future__ import annotations

import re

import pytest
from projects import project, rows
from report_fixtures import ROOT, demo_run
from rich.console import Console
from test_by_agent import parse

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.report import comparison
from agenteval_cli.report.compare_console import print_comparison
from agenteval_cli.report.html import render_html
from agenteval_cli.results import sources
from agenteval_cli.results.failures import error_reasons, group_errors
from agenteval_cli.results.sources import ExperimentData, Run

__all__ = ["demo_run"]


def side(name: str, errored: set[int], *, baseline: bool = False) -> ExperimentData:
    """Four examples; the ones in ``errored`` failed, the others scored 1.0 in 0.5 s."""
    runs = [
        Run(example_id=f"ex-{i}", error="TimeoutError: no answer in 60 s")
        if i in errored
        else Run(example_id=f"ex-{i}", scores={"resolution_coverage": 1.0}, latency_s=0.5)
        for i in range(4)
    ]
    return ExperimentData(
        name,
        name,
        runs,
        has_traces=not baseline,
        records_errors=not baseline,
        catalog=Catalog(keys=("resolution_coverage",)),
    )


def text_of(built: comparison.Comparison) -> str:
    console = Console(width=200, record=True, color_system=None)
    print_comparison(console, built)
    return console.export_text()


def test_the_error_rate_row_is_paired_per_example():
    built = comparison.build([side("a", {1}), side("b", {1, 2, 3})], seed=0)
    row = next(r for r in built.rows if r.key == "error_rate")
    assert row.label == "error rate"
    assert row.means == [0.25, 0.75]  # 1 of 4 examples, 3 of 4
    # per example, b minus a: 0, 0, +1, +1 -> mean +0.5
    assert row.delta == pytest.approx(0.5)
    assert row.vs_first[0] is not None and row.vs_first[0].n == 4
    assert row.verdict(1) in (None, "worse")  # more errors is never better
    line = next(line for line in text_of(built).splitlines() if "error rate" in line)
    assert "25.0%" in line and "75.0%" in line and "+50.0 pp" in line
    # the latency rows: each side's percentile, no paired test
    p50 = next(r for r in built.rows if r.key == "latency_p50_s")
    assert p50.label == "latency p50" and p50.vs_first == [None]
    # the score row is over the successful results: 1.0 on each side
    score = next(r for r in built.rows if r.key == "resolution_coverage")
    assert score.means == [1.0, 1.0]


def test_an_errored_result_counts_in_the_trace_figures_and_one_stored_unscored_is_named():
    """A side's errored result scored from its trace (as agenteval stores them now) counts
    in that metric's mean and its pairs; one stored without scores (an older store) is left
    out, and a warning says so rather than let the two sides' means differ in meaning."""
    measured = [
        Run(example_id="ex-0", scores={"ping_pong": 0.0, "resolution_coverage": 1.0}),
        Run(
            example_id="ex-1",
            error="GraphRecursionError: Recursion limit of 12 reached",
            scores={"ping_pong": 1.0, "resolution_coverage": None},
        ),
    ]
    older = [
        Run(example_id="ex-0", scores={"ping_pong": 0.0, "resolution_coverage": 1.0}),
        Run(example_id="ex-1", error="GraphRecursionError: Recursion limit of 12 reached"),
    ]
    keys = ["ping_pong", "resolution_coverage"]
    built = comparison.build(
        [
            ExperimentData("new", "new", measured, catalog=Catalog(keys=tuple(keys))),
            ExperimentData("old", "old", older, catalog=Catalog(keys=tuple(keys))),
        ],
        seed=0,
    )
    pong = next(r for r in built.rows if r.key == "ping_pong")
    # the columns are over the one example both scored (ex-0), as the Δ is: 0.0 − 0.0
    assert pong.means == [0.0, 0.0]
    assert pong.vs_first[0] is not None and pong.vs_first[0].n == 1  # ex-0: both have it
    assert pong.vs_first[0].diff == pong.means[1] - pong.means[0]
    coverage = next(r for r in built.rows if r.key == "resolution_coverage")
    assert coverage.means == [1.0, 1.0]  # over the answered results on both sides
    assert built.warnings == [
        "old: 1 errored result(s) were stored without scores (by an agenteval that did not "
        "measure them): its trace figures (routing, handoffs, tokens, cost) leave them out"
    ]
    assert built.note == (
        "trace figures (agents, handoffs, tokens, cost) count every request, the 2 errored "
        "too; figures that need an answer leave them out; ping-pong: each column is over the "
        "examples every side scored, as Δ is (the run table's figure is over each side's own)"
    )


def test_a_baseline_file_shows_latency_and_error_rate_as_na_never_zero():
    built = comparison.build([side("a", set()), side("baseline", set(), baseline=True)])
    p50 = next(r for r in built.rows if r.key == "latency_p50_s")
    assert p50.means == [0.5, None]
    errors = next(r for r in built.rows if r.key == "error_rate")
    assert errors.means == [0.0, None] and errors.vs_first == [None]
    line = next(line for line in text_of(built).splitlines() if "latency p50" in line)
    assert "n/a" in line and "0 ms" not in line.split("ms", 1)[1]
    page = render_html(built)
    cells = re.search(r'<tr data-metric="latency_p50_s">(.*?)</tr>', page, re.S)
    assert cells is not None and "<td>n/a</td>" in cells.group(1)


def test_error_grouping_is_one_rule_for_run_and_compare():
    messages = ["KeyError: 'a'", None, "boom", "KeyError: 'b'", "KeyError: 'a'"]
    reasons = error_reasons(messages)
    assert [(r.kind, r.count, r.first, r.same) for r in reasons] == [
        ("KeyError", 3, "KeyError: 'a'", False),
        ("boom", 1, "boom", True),
    ]
    assert reasons[0].text == "KeyError, first: KeyError: 'a'"
    # the store's grouped rows (message, count, first id) give the same
    assert group_errors([("KeyError: 'b'", 1, 4), ("boom", 1, 3), ("KeyError: 'a'", 2, 1)]) == (
        reasons
    )


TARGETS = """
async def ok(inputs):
    return {"final_response": inputs["question"] + " billing refund"}

async def broken(inputs):
    raise ValueError("no answer for " + inputs["question"])
"""


@pytest.fixture(scope="module")
def failed_project(tmp_path_factory):
    """``ok`` answers every example; every call of ``broken`` raises."""
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    folder = tmp_path_factory.mktemp("failed")
    spec = project(
        folder,
        TARGETS,
        module="targets.py",
        targets={"ok": "ok", "broken": "broken"},
        data=rows(4, question="question {i}", outputs={"must_mention": ["billing"]}),
        prefix="failed",
        evaluators="[resolution_coverage]",
        concurrency=1,
        extra="retries: {max: 0}\nmax_error_rate: 1.0\n",
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(folder / "db")])
    assert result.exit_code == 0, result.output
    return folder


def test_a_side_whose_every_call_failed_shows_na_and_its_error_reason(failed_project, invoke):
    db = failed_project / "db"
    out = invoke("compare", "ok", "broken", "--store", db)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    coverage = next(line for line in lines if "coverage" in line)
    assert coverage.split()[1:4] == ["100.0%", "n/a", "–"]  # no 0.0%, no Δ
    errors = next(line for line in lines if "error rate" in line)
    assert "0.0%" in errors and "100.0%" in errors and "+100.0 pp" in errors
    assert "errors: broken: 4 of 4 call(s) failed" in out.text
    assert "4 × ValueError, first: ValueError: no answer for question 0" in out.text
    assert "errors: ok" not in out.text

    html, md = failed_project / "r.html", failed_project / "r.md"
    report = invoke("report", "ok", "broken", "-o", html, "--markdown", md, "--store", db)
    assert report.exit_code == 0, report.output
    page = html.read_text()
    parse(page)  # every element closed
    row = re.search(r'<tr data-metric="resolution_coverage">(.*?)</tr>', page, re.S)
    assert row is not None
    assert re.findall(r"<td>([^<]*)</td>", row.group(1))[1:3] == ["100.0%", "n/a"]
    chart = page.split('<div class="chart" data-metric="resolution_coverage">', 1)[1]
    chart = chart.split("</svg>", 1)[0]
    assert chart.count("<rect") == 1 and "n/a: no successful result" in chart
    section = page.split("<h2>Errors</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'data-target="broken"' in section and 'data-target="ok"' not in section
    assert "4 of 4 call(s) failed" in section
    assert '<li data-kind="ValueError"><span class="count">4 ×</span>' in section
    assert "ValueError: no answer for question 0" in section
    summary = next(line for line in md.read_text().splitlines() if "resolution" in line)
    assert "| 100.0% | n/a |" in summary
    assert (
        "- **Errors** `broken`: 4 of 4 call(s) failed: "
        "4 × `ValueError, first: ValueError: no answer for question 0`"
    ) in md.read_text()


def test_no_errors_section_when_no_call_failed(failed_project):
    db = failed_project / "db"
    ok = sources.load(["ok"], db)
    built = comparison.build([ok[0], ok[0]])
    assert not built.has_errors
    assert "<h2>Errors</h2>" not in render_html(built)


def test_html_without_a_routing_evaluator_has_no_routing_sections(tmp_path, invoke):
    """The routing dataset has expected_agents, but no routing evaluator ran: no confusion
    matrix of zeros, no handoff histogram."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"experiment_prefix: plain\ndataset: {ROOT / 'datasets' / 'routing.jsonl'}\n"
        "targets:\n  supervisor: agenteval_cli.demo.supervisor:graph\n"
        "  swarm:\n    target: agenteval_cli.demo.swarm:graph\n    input_key: question\n"
        "    initial_state: {resolution_notes: []}\n"
        "evaluators: [resolution_coverage]\nconcurrency: 4\n"
    )
    html = tmp_path / "r.html"
    result = invoke("run", spec, "--store", tmp_path / "db", "--html", html)
    assert result.exit_code == 0, result.output
    page = html.read_text()
    parse(page)
    assert "Routing confusion" not in page and 'class="confusion"' not in page
    assert "andoff chain" not in page  # neither a histogram nor a row
    compared = invoke("compare", "supervisor", "swarm", "--store", tmp_path / "db")
    assert "routing of" not in compared.text


def test_html_with_a_routing_evaluator_keeps_the_confusion_matrix(demo_run):
    page = (demo_run / "run.html").read_text()
    assert "<h2>Routing confusion</h2>" in page


def test_the_conversation_view_holds_tool_calls_results_and_agents(demo_run, invoke):
    path = demo_run / "conversation.html"
    result = invoke("report", "supervisor", "swarm", "-o", path, "--store", demo_run / "db")
    assert result.exit_code == 0, result.output
    page = path.read_text()
    parse(page)
    example = page.split('<details class="example" data-id="billing-payment-method"', 1)[1]
    example = example.split('<details class="example"', 1)[0]
    swarm = example.split('data-target="swarm"', 1)[1]
    view = swarm.split('<details class="conversation">', 1)[1].split("</details>", 1)[0]
    messages = re.findall(r'<li class="(\w+)" data-role="\w+"(?: data-agent="([^"]*)")?>', view)
    assert messages[0] == ("user", "")
    assert ("assistant", "account") in messages and ("assistant", "billing") in messages
    # billing's tool call, with its arguments and result, then the tool message itself
    call = view.split('<div class="call" data-tool="update_payment_method">', 1)[1]
    call = call.split("</div>", 1)[0]
    assert "{&#34;method&#34;: &#34;credit card&#34;}" in call
    assert "Payment method updated to credit card" in call
    assert '<li class="tool" data-role="tool" data-agent="billing">' in view
    assert "I need to change my payment method to a credit card." in view


def test_an_uploaded_result_links_to_its_langsmith_run(tmp_path, demo_run):
    import shutil

    from agenteval_cli.langsmith.upload import root_run_id
    from agenteval_cli.store.db import Store
    from agenteval_cli.store.langsmith_state import LangSmithState
    from agenteval_cli.store.lookup import resolve_experiment

    db = tmp_path / "db"
    shutil.copy(demo_run / "db", db)
    dataset = "https://smith.example.com/o/org-1/datasets/ds-1"
    with Store(db) as store:
        record = resolve_experiment(store, "swarm")
        state = LangSmithState(store.db)
        state.set_upload(
            record.id, "https://api.example.com", "uploaded", project_id="proj-1",
            url=f"{dataset}/compare?selectedSessions=proj-1",
        )  # fmt: skip
        state.mark_sent(record.id, [("billing-payment-method", 0)])
        run_id = root_run_id(record, "billing-payment-method", 0)
        sides = [sources.from_store(store, resolve_experiment(store, t)) for t in ("supervisor",)]
        sides.append(sources.from_store(store, record))
    assert sides[1].run_urls == {
        (
            "billing-payment-method",
            0,
        ): f"https://smith.example.com/o/org-1/projects/p/proj-1/r/{run_id}"
    }
    page = render_html(comparison.build(sides))
    assert f'href="https://smith.example.com/o/org-1/projects/p/proj-1/r/{run_id}"' in page
    assert page.count(">LangSmith run</a>") == 1
    assert ">LangSmith experiment</a>" in page


def test_the_conversation_view_is_escaped_and_redacted(monkeypatch):
    from report_fixtures import HOSTILE_RESPONSE, hostile_sides

    monkeypatch.setenv("AGENTEVAL_TEST_SECRET", "s3cr3t-value-123")
    sides = hostile_sides()
    conversation = [
        {"role": "user", "content": HOSTILE_RESPONSE},
        {
            "role": "assistant",
            "name": "<b>agent</b>",
            "content": [{"type": "text", "text": "key s3cr3t-value-123"}],
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "lookup",
                        "arguments": '{"q": "</code><script>x()</script>"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "name": "lookup",
            "tool_call_id": "c1",
            "content": "<img src=x onerror=y>",
        },
    ]
    for found in sides:
        found.conversations = {"ex-1": conversation}
        found.run_urls = {("ex-1", 0): "javascript:alert(1)"}
    page = render_html(comparison.build(sides))
    parse(page)
    view = page.split('<details class="conversation">', 1)[1].split("</details>", 1)[0]
    assert "<script>" not in view and "<img" not in view and "<b>agent</b>" not in view
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in view
    assert 'data-agent="&lt;b&gt;agent&lt;/b&gt;"' in view  # the tool result: its caller's
    assert "s3cr3t-value-123" not in page and "key ***" in view
    assert "javascript:" not in page  # no link but to http(s)


def test_the_columns_are_what_the_delta_is_the_difference_of():
    """Repetitions that errored unevenly: ex-1 answered once of four (coverage 1.0, the rest
    errored and unscored), ex-2 four times (0.0 each). Per result that reads 1/5 = 20%; per
    example, as the paired test weighs it, (1.0 + 0.0) / 2 = 50%. The other side covers
    both fully, so Δ = mean(1.0 − 1.0, 1.0 − 0.0) = +50 pp: the columns subtract to it."""
    error = "TimeoutError: the call timed out"
    uneven = [Run("ex-1", 0, scores={"resolution_coverage": 1.0})]
    uneven += [Run("ex-1", r, scores={"resolution_coverage": None}, error=error) for r in (1, 2, 3)]
    uneven += [Run("ex-2", r, scores={"resolution_coverage": 0.0}) for r in range(4)]
    steady = [
        Run(e, r, scores={"resolution_coverage": 1.0}) for e in ("ex-1", "ex-2") for r in range(4)
    ]
    keys = ("resolution_coverage",)
    built = comparison.build(
        [
            ExperimentData("uneven", "a", uneven, catalog=Catalog(keys=keys)),
            ExperimentData("steady", "b", steady, catalog=Catalog(keys=keys)),
        ],
        seed=0,
    )
    row = next(r for r in built.rows if r.key == "resolution_coverage")
    assert row.means == [0.5, 1.0]
    assert row.vs_first[0] is not None and row.vs_first[0].diff == pytest.approx(0.5)
