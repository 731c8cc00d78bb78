"""The HTML report, opened in headless Chromium: it renders, the filters work, text is text."""

from __future__ import annotations

import itertools
import re

import pytest
from chromium import Browser, require_chromium
from report_fixtures import HOSTILE_QUESTION, HOSTILE_RESPONSE, demo_run, hostile_sides
from test_by_agent import flat_side, team_side
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.core.records import Handoff, ModelCall, Score, Trace, Turn
from agenteval_cli.gating.examples import failed_examples
from agenteval_cli.report import comparison, html
from agenteval_cli.report.html import write_html
from agenteval_cli.results import sources
from agenteval_cli.results.sources import ExperimentData, Run

__all__ = ["demo_run"]

VISIBLE_IDS = """
return Array.from(document.querySelectorAll('details.example'))
  .filter(e => e.offsetParent !== null).map(e => e.dataset.id);
"""


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    session = Browser()
    yield session
    session.close()


@pytest.fixture(scope="module")
def report(demo_run):
    """``agenteval report supervisor swarm -o report.html`` on the demo's store."""
    path = demo_run / "report.html"
    result = CliRunner().invoke(
        app, ["report", "supervisor", "swarm", "-o", str(path), "--store", str(demo_run / "db")]
    )
    assert result.exit_code == 0, result.output
    sides = sources.load(["supervisor", "swarm"], demo_run / "db")
    return path, sides


def test_the_report_is_self_contained(report, demo_run):
    for path in (report[0], demo_run / "run.html"):
        text = path.read_text()
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
        assert "@import" not in text and "<link" not in text
        assert "default-src 'none'" in text  # the page may not fetch anything either


def test_report_renders_in_chromium(browser, report):
    path, _ = report
    browser.open(path)
    page = browser.run(
        """return {
          title: document.title,
          examples: document.querySelectorAll('details.example').length,
          charts: document.querySelectorAll('.chart svg rect').length,
          metrics: Array.from(document.querySelectorAll('#comparison tbody tr'))
            .map(r => r.dataset.metric),
          confusion: document.querySelectorAll('table.confusion').length,
          resources: performance.getEntriesByType('resource').length,
          shown: document.getElementById('shown').textContent,
          width: document.querySelector('#comparison').getBoundingClientRect().width,
        };"""
    )
    assert page["title"] == "supervisor vs swarm"
    assert page["examples"] == 32
    assert page["metrics"][:2] == ["routing_accuracy", "resolution_coverage"]
    assert page["charts"] >= 16  # two bars for each of the eight metrics, plus histograms
    assert page["confusion"] == 2
    assert page["resources"] == 0
    assert page["shown"] == "32 of 32 examples shown"
    assert page["width"] > 300


def test_filters_show_failures_and_disagreements(browser, report):
    path, sides = report
    failing = set(failed_examples(sides[0], {})) | set(failed_examples(sides[1], {}))
    built = comparison.build(sides, top=100)
    disagreeing = {d.example_id for d in built.disagreements}
    assert failing and disagreeing and len(failing) < 32  # the demo has some of each
    browser.open(path)
    browser.click('button[data-filter="failed"]')
    assert set(browser.run(VISIBLE_IDS)) == failing
    browser.click('button[data-filter="disagree"]')
    assert set(browser.run(VISIBLE_IDS)) == disagreeing
    assert browser.run("return document.getElementById('shown').textContent") == (
        f"{len(disagreeing)} of 32 examples shown"
    )
    browser.click('button[data-filter="all"]')
    assert len(browser.run(VISIBLE_IDS)) == 32


def test_an_example_expands_to_its_trace(browser, report):
    path, _ = report
    browser.open(path)
    browser.click('details[data-id="multi-sso-and-card"] > summary')
    detail = browser.run(
        """const d = document.querySelector('details[data-id="multi-sso-and-card"]');
        const side = t => d.querySelector(`.side[data-target="${t}"]`);
        const agents = t => Array.from(side(t).querySelectorAll('.agent')).map(a => a.textContent);
        return {
          open: d.open,
          supervisor: agents('supervisor'),
          via: side('supervisor').querySelector('.via').textContent,
          swarm: agents('swarm'),
          comment: side('swarm').innerText,
          response: side('swarm').querySelector('.response').getBoundingClientRect().height,
        };"""
    )
    assert detail["open"] is True
    assert detail["supervisor"] == [
        "supervisor",
        "tech_support",
        "supervisor",
        "billing",
        "supervisor",
    ]
    assert "transfer_to_tech_support" in detail["via"]
    assert detail["swarm"] == ["account", "tech_support"]
    assert "missing ['billing']" in detail["comment"]
    assert detail["response"] > 0


def test_hostile_model_text_shows_as_text(browser, tmp_path):
    sides = hostile_sides()
    path = tmp_path / "hostile.html"
    write_html(path, comparison.build(sides), title="<script>alert(1)</script>")
    browser.open(path)
    browser.click('details[data-id="ex-2"] > summary')
    page = browser.run(
        """return {
          pwned: window.__pwned === undefined ? null : window.__pwned,
          scripts: document.scripts.length,
          images: document.images.length,
          injected: document.querySelectorAll('.injected, svg[onload]').length,
          title: document.title,
          response: document.querySelector('details[data-id="ex-2"] .response').textContent,
          question: document.querySelector('details[data-id="ex-2"] .question').textContent,
          body: document.body.innerText,
        };"""
    )
    assert page["pwned"] is None
    assert page["scripts"] == 1  # the report's own filter script
    assert page["images"] == 0 and page["injected"] == 0
    assert page["title"] == "<script>alert(1)</script>"
    assert page["response"] == HOSTILE_RESPONSE
    assert page["question"] == HOSTILE_QUESTION
    assert "</pre><script>x()</script>" in page["body"]
    assert "<svg onload=alert(1)>" in page["body"]


def test_agents_and_nested_paths_render(browser, tmp_path):
    path = tmp_path / "agents.html"
    write_html(path, comparison.build([team_side(), flat_side()]), title="teams vs flat")
    browser.open(path)
    browser.click('details[data-id="ex-2"] > summary')
    page = browser.run(
        """const table = t => document.querySelector(`.agent-table[data-target="${t}"]`);
        const rows = t => Array.from(table(t).querySelectorAll('tbody tr')).map(
          r => Array.from(r.cells).map(c => c.textContent));
        const indent = t => Array.from(table(t).querySelectorAll('td.name')).map(
          c => parseFloat(getComputedStyle(c).paddingLeft));
        const side = document.querySelector('details[data-id="ex-2"] .side[data-target="teams"]');
        return {
          teams: rows('teams'),
          flat: rows('flat'),
          indent: indent('teams'),
          chain: Array.from(side.querySelectorAll('.agent')).map(a => a.textContent),
          parallel: side.querySelectorAll('.chain .parallel').length,
          others: side.querySelector('.handoffs').textContent.replace(/\\s+/g, ' ').trim(),
          visible: side.querySelector('table.run-agents').getBoundingClientRect().height,
        };"""
    )
    # over the examples both ran (ex-1, ex-2), in tree order, the total last
    assert [r[0] for r in page["teams"]] == [
        "boss", "money_team", "billing", "account", "tech_team", "tech_support", "all agents",
    ]  # fmt: skip
    assert page["teams"][1] == ["money_team", "2", "2", "500", "50", "$0.0003", "500 ms"]
    assert page["flat"] == [
        ["solo", "2", "2", "1,500", "150", "$0.0045", "1.50 s"],
        ["all agents", "2", "2", "1,500", "150", "$0.0045", "1.50 s"],
    ]
    assert page["indent"][2] > page["indent"][1]  # members sit under their team
    assert page["chain"] == ["boss", "tech_team › tech_support", "money_team › account"]
    assert page["parallel"] == 1
    assert page["others"] == "other handoffs: boss → account (edge) ∥ parallel"
    assert page["visible"] > 0


def big_sides(count: int, failing: set[int]) -> list[ExperimentData]:
    """Two sides over ``count`` examples; the ``failing`` ones miss their route on side b."""

    def side(name: str, fail: set[int]) -> ExperimentData:
        runs = [
            Run(
                example_id=f"ex-{i:05d}",
                inputs={"question": f"question {i}"},
                reference={"expected_agents": ["billing"]},
                outputs={"final_response": f"answer {i}"},
                scores={"routing_accuracy": 0.0 if i in fail else 1.0},
                agent_path=["billing"],
            )
            for i in range(count)
        ]
        return ExperimentData(f"big-{name}", name, runs)

    return [side("a", set()), side("b", failing)]


def test_a_large_experiment_shows_its_failures_then_its_first_examples(monkeypatch):
    monkeypatch.setattr(html, "EXAMPLE_LIMIT", 5)
    sides = big_sides(40, failing={3, 30, 35})
    text = html.render_html(comparison.build(sides))
    shown = re.findall(r'<details class="example" data-id="([^"]+)"', text)
    # the three failures, then the first passing examples, in dataset order
    assert shown == ["ex-00000", "ex-00001", "ex-00003", "ex-00030", "ex-00035"]
    assert "35 more examples (70 results) not shown" in text
    assert "of those examples failing" not in text  # every failure is on the page
    assert "this page holds 5 of 40 examples" in text


def test_failures_beyond_the_limit_are_counted(monkeypatch):
    monkeypatch.setattr(html, "EXAMPLE_LIMIT", 2)
    text = html.render_html(comparison.build(big_sides(10, failing={1, 4, 6, 8})))
    shown = re.findall(r'<details class="example" data-id="([^"]+)"', text)
    assert shown == ["ex-00001", "ex-00004"]
    assert "8 more examples (16 results, 2 of those examples failing) not shown" in text


def test_a_small_experiment_has_no_left_out_line():
    text = html.render_html(comparison.build(big_sides(30, failing={2})))
    assert len(re.findall(r'<details class="example"', text)) == 30
    assert 'id="left-out"' not in text


@pytest.mark.slow
def test_a_report_of_many_examples_stays_small_and_opens(browser, tmp_path):
    count = html.EXAMPLE_LIMIT * 3
    sides = big_sides(count, failing=set(range(0, count, 7)))
    path = tmp_path / "big.html"
    write_html(path, comparison.build(sides))
    size = path.stat().st_size
    single = html.render_html(comparison.build(big_sides(1, failing=set())))
    assert size < len(single) + html.EXAMPLE_LIMIT * 5_000  # bounded by the shown examples
    browser.open(path)
    page = browser.run(
        """return {
          examples: document.querySelectorAll('details.example').length,
          failed: document.querySelectorAll('details.example[data-failed="1"]').length,
          shown: document.getElementById('shown').textContent,
          line: document.getElementById('left-out').innerText,
        };"""
    )
    failing = len(range(0, count, 7))
    assert page["examples"] == html.EXAMPLE_LIMIT
    assert page["failed"] == failing  # every failure is on the page
    assert page["shown"] == f"{html.EXAMPLE_LIMIT} of {html.EXAMPLE_LIMIT} examples shown"
    left_out = count - html.EXAMPLE_LIMIT
    assert page["line"].startswith(f"{left_out:,} more examples ({2 * left_out:,} results)")
    assert f"this page holds {html.EXAMPLE_LIMIT:,} of {count:,} examples" in page["line"]
    assert "agenteval run --json" in page["line"]


def conversation_side(name: str, turns: list[Turn]) -> ExperimentData:
    """One conversation (two turns) as a side of a comparison."""
    run = Run(
        example_id="conv-1",
        inputs={"turns": [dict(t.inputs) for t in turns]},
        outputs=turns[-1].outputs,
        scores={"routing_accuracy": 1.0},
        agent_path=[a for t in turns for a in t.trace.agent_path],
        turns=turns,
    )
    return ExperimentData(f"conv-{name}", name, [run])


def _turn(question: str, agents: list[str], answer: str, **more: object) -> Turn:
    handoffs = [Handoff(a, b, tool=f"transfer_to_{b}") for a, b in itertools.pairwise(agents)]
    calls = [ModelCall(agent, "scripted-small", 10, 5) for agent in agents]
    trace = Trace(agent_path=agents, handoffs=handoffs, model_calls=calls)
    return Turn(
        {"question": question},
        {"final_response": answer},
        trace,
        [Score("routing_accuracy", 1.0)],
        **more,  # type: ignore[arg-type]
    )


def test_a_conversation_shows_each_turn_with_its_agents_and_handoffs():
    turns = [
        _turn("My invoice is wrong.", ["account", "billing"], "Billing: fixed the invoice."),
        _turn("And the refund?", ["billing"], "Billing: refund sent."),
        Turn({"resume": "yes"}, None, Trace(), interrupt="confirm the cancellation"),
    ]
    text = html.render_html(comparison.build([conversation_side("swarm", turns)]))
    rows = re.findall(r'<tr class="turn" data-turn="(\d)">(.*?)</tr>', text, re.S)
    assert [number for number, _ in rows] == ["1", "2", "3"]
    first, second, third = (body for _, body in rows)
    assert "My invoice is wrong." in first
    assert re.search(r"account</span><span class=\"via\">→ transfer_to_billing →</span>", first)
    assert "<td>2</td>" in first  # two model calls: account's, then billing's
    assert "And the refund?" in second and "<td>1</td>" in second
    assert "resume: yes" in third and "interrupted" in third
    assert "waiting for confirm the cancellation" in third
    # the example's heading is the conversation's first message and the turns after it
    assert "My invoice is wrong. (+2 turns)" in text
