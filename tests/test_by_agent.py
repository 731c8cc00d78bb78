"""Per-agent attribution: sums by agent path (teams holding their members), unknown usage
kept unknown, through the JSON export, the --by-agent tables and the HTML report.

The hand-built target ``teams`` has a coordinator ``boss`` and two teams, ``money_team``
(``billing``, ``account``) and ``tech_team`` (``tech_support``). Prices per 1M tokens: ``big``
$2 in / $10 out, ``small`` $0.5 in / $1 out; ``local`` reports no usage at all.

    ex-1  boss big 100/10 0.5s · money_team>billing small 200/20 0.25s · boss big 150/5 0.5s
    ex-2  boss big 100/10 0.5s · tech_team>tech_support small 50/5 0.25s
          · money_team>account small 300/30 0.25s
    ex-3  boss big 100/10 0.5s · tech_team>tech_support local ?/? 1.0s
          · money_team>billing small 100/10 0.25s
    ex-4  an error (boss big 999/999 9s): every call made is counted, failed requests too

By hand, over ex-1..ex-4:

    boss               4 runs, 5 calls, 1449/1034, (1449x2 + 1034x10)/1M = $0.013238, 11.0 s
    money_team         3 runs, 3 calls, 600/60,  (600x0.5 + 60x1)/1M = $0.00036,  0.75 s
      billing          2 runs, 2 calls, 300/30,  (150 + 30)/1M       = $0.00018,  0.5 s
      account          1 run,  1 call,  300/30,                        $0.00018,  0.25 s
    tech_team          2 runs, 2 calls, unknown (one call without usage), cost unknown, 1.25 s
      tech_support     the same
    all agents         4 runs, 10 calls, unknown, unknown, 13.0 s
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.core.records import Example, Handoff, ModelCall, Result, Score, Trace
from agenteval_cli.metrics.prices import price_calls
from agenteval_cli.report import comparison
from agenteval_cli.report.agents import aggregate_results
from agenteval_cli.report.compare_console import print_comparison
from agenteval_cli.report.html import render_html
from agenteval_cli.report.json_report import experiment_json, write_json
from agenteval_cli.report.table import agent_table
from agenteval_cli.results import sources
from agenteval_cli.store.db import Store

ROOT = Path(__file__).resolve().parent.parent
PRICING = {"big": {"input": 2.0, "output": 10.0}, "small": {"input": 0.5, "output": 1.0}}
MONEY, TECH = "money_team", "tech_team"


def call(path: list[str], model: str, tokens: tuple[int, int] | None, latency: float):
    i, o = tokens if tokens is not None else (None, None)
    return ModelCall(path[-1], model, i, o, latency, path)


def team_results() -> list[Result]:
    def result(example_id, path, calls, handoffs=(), error=None):
        trace = Trace(
            agent_path=path,
            handoffs=list(handoffs),
            model_calls=calls,
            coordinators=["boss"],
        )
        scores = [Score("routing_accuracy", 1.0)] if error is None else []
        return Result(example_id, 0, {"final_response": "ok"}, trace, scores, error=error)

    return [
        result(
            "ex-1",
            ["boss", "billing", "boss"],
            [
                call(["boss"], "big", (100, 10), 0.5),
                call([MONEY, "billing"], "small", (200, 20), 0.25),
                call(["boss"], "big", (150, 5), 0.5),
            ],
            [
                Handoff("boss", "billing", "transfer_to_billing"),
                Handoff("billing", "boss", "", via="edge"),
            ],
        ),
        result(
            "ex-2",
            ["boss", "tech_support", "account"],
            [
                call(["boss"], "big", (100, 10), 0.5),
                call([TECH, "tech_support"], "small", (50, 5), 0.25),
                call([MONEY, "account"], "small", (300, 30), 0.25),
            ],
            [
                Handoff("boss", "tech_support", "", via="edge", parallel=True),
                Handoff("boss", "account", "", via="edge", parallel=True),
            ],
        ),
        result(
            "ex-3",
            ["boss", "tech_support", "billing"],
            [
                call(["boss"], "big", (100, 10), 0.5),
                call([TECH, "tech_support"], "local", None, 1.0),
                call([MONEY, "billing"], "small", (100, 10), 0.25),
            ],
            [
                Handoff("boss", "tech_support", "", via="agent_tool"),
                Handoff("tech_support", "billing", "transfer_to_billing"),
            ],
        ),
        result(
            "ex-4", ["boss"], [call(["boss"], "big", (999, 999), 9.0)], error="TimeoutError: slow"
        ),
    ]


# key: (depth, leaf, runs, calls, input, output, cost, latency)
EXPECTED = {
    "boss": (0, True, 4, 5, 1449, 1034, 0.013238, 11.0),
    "money_team": (0, False, 3, 3, 600, 60, 0.00036, 0.75),
    "money_team > billing": (1, True, 2, 2, 300, 30, 0.00018, 0.5),
    "money_team > account": (1, True, 1, 1, 300, 30, 0.00018, 0.25),
    "tech_team": (0, False, 2, 2, None, None, None, 1.25),
    "tech_team > tech_support": (1, True, 2, 2, None, None, None, 1.25),
}


def flat_side() -> sources.ExperimentData:
    """A one-agent target on ex-1, ex-2 and ex-5: big 1000/100 1s, 500/50 0.5s, 7/7 0.1s."""
    runs = [
        Result(eid, 0, {}, Trace(agent_path=["solo"], model_calls=[call(["solo"], "big", t, s)]))
        for eid, t, s in (
            ("ex-1", (1000, 100), 1.0),
            ("ex-2", (500, 50), 0.5),
            ("ex-5", (7, 7), 0.1),
        )
    ]
    return sources.ExperimentData(
        "flat-1", "flat", [sources.run_from_result({}, {}, r) for r in runs], pricing=PRICING
    )


def team_side() -> sources.ExperimentData:
    runs = [sources.run_from_result({"question": r.example_id}, {}, r) for r in team_results()]
    return sources.ExperimentData("teams-1", "teams", runs, pricing=PRICING)


def test_per_agent_sums_match_the_hand_count():
    usage = aggregate_results(team_results(), PRICING)
    assert [row.key for row in usage.rows] == list(EXPECTED)  # each team before its members
    for row in usage.rows:
        depth, leaf, runs, calls, i, o, cost, latency = EXPECTED[row.key]
        assert (row.depth, row.leaf, row.results, row.model_calls) == (depth, leaf, runs, calls)
        assert (row.input_tokens, row.output_tokens) == (i, o)
        assert row.total_tokens == (None if i is None else i + o)
        assert row.cost_usd == (None if cost is None else pytest.approx(cost))
        assert row.latency_s == pytest.approx(latency)
        assert row.latency_mean_s == pytest.approx(latency / runs)
    tech = usage.get("tech_team > tech_support")
    assert tech.calls_without_usage == 1 and tech.models == ["small", "local"]
    total = usage.total
    assert (usage.results, total.results, total.model_calls) == (4, 4, 10)
    assert (total.input_tokens, total.cost_usd, total.calls_without_usage) == (None, None, 1)
    assert total.latency_s == pytest.approx(13.0)
    assert usage.unpriced == []  # local's cost is unknown for its tokens, not its price


def test_an_unpriced_model_leaves_its_agents_cost_unknown_and_is_named():
    pricing = {"big": PRICING["big"]}
    results = team_results()
    for found in results:  # as the run prices them: each call keeps its price
        price_calls(found.trace.model_calls, pricing)
    usage = aggregate_results(results, pricing)
    assert usage.get("boss").cost_usd == pytest.approx(0.013238)
    assert usage.get("money_team").cost_usd is None
    assert usage.get("money_team > billing").input_tokens == 300  # tokens are still known
    assert usage.unpriced == ["small"]


def test_json_has_an_agents_section_per_target(tmp_path):
    with Store(tmp_path / "db") as store:
        exp = store.create_experiment(
            prefix="p", target="teams", target_path="m:g", spec={"pricing": PRICING}
        )
        for result in team_results():
            store.add_result(exp.id, Example(result.example_id, {"q": 1}), result)
        data = experiment_json(store, exp.id)
        write_json(tmp_path / "r.json", store, [exp.id])
    agents = data["agents"]
    assert list(agents) == list(EXPECTED)
    for key, (depth, leaf, runs, calls, i, o, cost, latency) in EXPECTED.items():
        row = agents[key]
        assert row["path"] == key.split(" > ")
        assert (row["depth"], row["leaf"], row["results"], row["model_calls"]) == (
            depth,
            leaf,
            runs,
            calls,
        )
        assert (row["input_tokens"], row["output_tokens"]) == (i, o)
        assert row["total_tokens"] == (None if i is None else i + o)
        assert row["cost_usd"] == (None if cost is None else pytest.approx(cost))
        assert row["latency_s"] == pytest.approx(latency)
        assert row["latency_mean_s"] == pytest.approx(latency / runs)
    assert agents["money_team"]["models"] == ["small"]
    assert data["pricing"] == PRICING
    trace = data["results"][1]["trace"]
    assert trace["model_calls"][1]["path"] == ["tech_team", "tech_support"]
    assert trace["handoffs"][1]["parallel"] is True
    # read back by compare: the model calls, their unknown tokens and the pricing survive
    [side] = sources.from_json_file(tmp_path / "r.json")
    assert side.pricing == PRICING and side.has_model_calls
    again = comparison.agent_usage([side])[0]
    assert again.get("money_team").cost_usd == pytest.approx(0.00036)
    assert again.get("tech_team").input_tokens is None
    assert json.loads((tmp_path / "r.json").read_text())["experiments"][0]["agents"] == agents


def test_a_json_file_without_model_calls_has_no_agents(tmp_path):
    old = {
        "experiments": [
            {"name": "x", "target": "x", "results": [{"example_id": "ex-1", "trace": {}}]}
        ]
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    [loaded] = sources.from_json_file(path)
    assert not loaded.has_model_calls
    assert comparison.agent_usage([flat_side(), loaded])[1] is None


def render(renderable, width: int = 160) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=False).print(renderable)
    return out.getvalue().splitlines()


def cells(lines: list[str], agent: str) -> list[str]:
    """A table row's cells, found by its (indented) agent cell."""
    row = next(
        line for line in lines if line.startswith("│") and line.split("│")[1].strip() == agent
    )
    return [c.strip() for c in row.split("│")[1:-1]]


def test_agent_table_indents_the_tree_and_shows_unknown_as_na():
    lines = render(agent_table([("teams", aggregate_results(team_results(), PRICING))]))
    names = [line.split("│")[1].rstrip() for line in lines if line.startswith("│")]
    assert names == [
        " boss",
        " money_team",
        "   billing",
        "   account",
        " tech_team",
        "   tech_support",
        " all agents",
    ]
    header = " ".join(line for line in lines if line.startswith("┃"))
    for heading in ("agent", "teams", "runs", "model", "calls", "tokens", "in / out", "cost"):
        assert heading in header
    assert cells(lines, "boss") == ["boss", "4", "5", "1,449 / 1,034", "$0.0132", "11.00 s"]
    assert cells(lines, "billing") == ["billing", "2", "2", "300 / 30", "$0.00018", "500 ms"]
    assert cells(lines, "tech_support") == ["tech_support", "2", "2", "n/a", "n/a", "1.25 s"]
    assert cells(lines, "all agents") == ["all agents", "4", "10", "n/a", "n/a", "13.00 s"]


def test_compare_by_agent_puts_targets_side_by_side_over_shared_examples():
    sides = [team_side(), flat_side()]
    teams, flat = comparison.agent_usage(sides)
    # shared: ex-1 and ex-2 (teams' ex-3 and ex-4, flat's ex-5 are left out)
    assert (teams.get("boss").model_calls, teams.get("boss").input_tokens) == (3, 350)
    assert teams.get("tech_team").input_tokens == 50  # the call without usage was on ex-3
    assert teams.get("tech_team").cost_usd == pytest.approx(30 / 1e6)
    assert teams.get("money_team").cost_usd == pytest.approx((250 + 50) / 1e6)
    solo = flat.get("solo")
    assert (solo.results, solo.input_tokens, solo.output_tokens) == (2, 1500, 150)
    assert solo.cost_usd == pytest.approx((3000 + 1500) / 1e6)
    out = io.StringIO()
    print_comparison(Console(file=out, width=200), comparison.build(sides), by_agent=True)
    lines = out.getvalue().splitlines()
    assert any("per agent · totals over the 2 examples every side ran" in x for x in lines)
    assert cells(lines, "boss") == [
        "boss", "2", "3", "350 / 25", "$0.00095", "1.50 s", *["–"] * 5,  # flat has no boss
    ]  # fmt: skip
    solo_cells = cells(lines, "solo")
    assert solo_cells[1:6] == ["–"] * 5  # teams has no solo
    assert solo_cells[6:] == ["2", "2", "1,500 / 150", "$0.0045", "1.50 s"]


def test_compare_by_agent_stacks_the_targets_on_a_narrow_console():
    out = io.StringIO()
    built = comparison.build([team_side(), flat_side()])
    print_comparison(Console(file=out, width=80), built, by_agent=True)
    text = out.getvalue()
    assert "per agent · totals over the 2 examples every side ran · teams" in text
    assert "per agent · totals over the 2 examples every side ran · flat" in text
    assert "…" not in text.split("per agent")[1]  # no figure cut short


class Html(HTMLParser):
    """Text of the elements the tests read, by a class they carry."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, set[str]]] = []
        self.found: dict[str, list[str]] = {}
        self.open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        if tag in {"meta", "br", "hr", "img", "input", "link"}:  # void: no end tag
            return
        classes = set((dict(attrs).get("class") or "").split())
        self.stack.append((tag, classes))
        for name in classes:
            self.open.append((name, []))

    def handle_startendtag(self, tag, attrs):
        pass  # <line/>: nothing inside

    def handle_endtag(self, tag):
        tag_, classes = self.stack.pop()
        assert tag_ == tag, f"</{tag}> closes <{tag_}>"
        for _ in classes:
            name, parts = self.open.pop()
            self.found.setdefault(name, []).append("".join(parts))

    def handle_data(self, data):
        for _, parts in self.open:
            parts.append(data)


def parse(text: str) -> Html:
    parser = Html()
    parser.feed(text)
    assert not parser.stack, "every element is closed"
    return parser


def test_html_has_an_agents_section_and_nested_paths_with_parallel_handoffs():
    text = render_html(comparison.build([team_side(), flat_side()]), title="t")
    page = parse(text)
    section = text.split("<h2>Agents</h2>", 1)[1].split("<h2>Metrics</h2>", 1)[0]
    teams, flat = section.split('data-target="flat"')
    rows = [
        (kind, agent, re.findall(r"<td[^>]*>([^<]*)</td>", body))
        for kind, agent, body in re.findall(
            r'<tr class="(\w+)" data-agent="([^"]*)">(.*?)</tr>', teams, re.S
        )
    ]
    assert [(kind, agent) for kind, agent, _ in rows] == [
        ("leaf", "boss"),
        ("team", "money_team"),
        ("leaf", "money_team › billing"),
        ("leaf", "money_team › account"),
        ("team", "tech_team"),
        ("leaf", "tech_team › tech_support"),
        ("total", "all agents"),
    ]
    # over the shared ex-1 and ex-2: boss 3 calls 350/25 $0.00095 1.5 s
    assert rows[0][2] == ["boss", "2", "3", "350", "25", "$0.00095", "1.50 s"]
    assert rows[5][2] == ["tech_support", "1", "1", "50", "5", "$0.00003", "250 ms"]
    # 350+200+50+300 / 25+20+5+30; $(950 + 120 + 30 + 180) / 1M; 1.5 + 3 x 0.25 s
    assert rows[6][2] == ["all agents", "2", "6", "900", "80", "$0.00128", "2.25 s"]
    assert 'data-agent="solo"><td class="name" style="padding-left: 10px"' in flat
    agents = page.found["agent"]
    assert "money_team › billing" in agents and "tech_team › tech_support" in agents
    assert "∥ parallel" in page.found["parallel"]
    # ex-2: boss fans out to tech_support and account at once; the second shows apart
    assert any("boss → account (edge) ∥ parallel" in h for h in page.found["handoffs"])
    assert "agent as a tool" in " ".join(page.found["via"])
    # per run: ex-3's tech_support tokens are unknown
    assert re.search(
        r'data-agent="tech_team › tech_support"><td[^>]*>tech_support</td>'
        r"<td>1</td><td>n/a</td><td>n/a</td><td>n/a</td>",
        text,
    )


def test_html_leaves_the_agents_section_out_without_model_calls():
    bare = [sources.ExperimentData("e", "t", [sources.Run("ex-1", scores={"x": 1.0})])]
    text = render_html(comparison.build(bare))
    parse(text)
    assert "<h2>Agents</h2>" not in text and 'class="agents' not in text


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``agenteval run configs/routing.yaml --limit 3 --by-agent`` with its JSON."""
    tmp = tmp_path_factory.mktemp("by-agent")
    result = CliRunner().invoke(
        app,
        ["run", str(ROOT / "configs" / "routing.yaml"), "--limit", "3", "--by-agent",
         "--store", str(tmp / "db"), "--json", str(tmp / "r.json")],
        env={"COLUMNS": "200"},
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return tmp, result.output, json.loads((tmp / "r.json").read_text())["experiments"]


def agent_rows(output: str, title: str) -> tuple[list[str], dict[str, list[str]]]:
    """The per-agent table after ``title``: its header lines and its rows by agent."""
    lines = output.split(title, 1)[1].splitlines()
    header = [line for line in lines if line.startswith("┃")]
    rows = {}
    for line in lines:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            parts = [c.strip() for c in line.split("│")[1:-1]]
            rows[parts[0]] = parts[1:]
    return header, rows


def tokens(cell: str) -> int:
    i, o = (int(n.replace(",", "")) for n in cell.split(" / "))
    return i + o


def test_run_by_agent_on_the_demo_adds_up_to_the_runs_tokens(demo):
    _, output, experiments = demo
    header, rows = agent_rows(
        output, "per agent · totals over every result (every call made, failed requests too)"
    )
    assert header[0].split("┃")[2].strip() == "supervisor"
    assert [c.strip() for c in header[-1].split("┃")[1:-1]] == [
        "agent", "runs", "calls", "in / out", "cost", "time",
        "runs", "calls", "in / out", "cost", "time",
    ]  # fmt: skip
    assert [c.strip() for c in header[0].split("┃")[1:-1]] == [
        "", "supervisor", "model", "tokens", "", "model",
        "swarm", "model", "tokens", "", "model",
    ]  # fmt: skip
    # the demo's agents are all top-level: supervisor, billing, tech_support, account
    assert set(rows) == {"supervisor", "billing", "tech_support", "account", "all agents"}
    for index, exp in enumerate(experiments):
        assert exp["target"] == ("supervisor", "swarm")[index]
        group = slice(index * 5, index * 5 + 5)
        run_tokens = sum(int(r["scores"]["total_tokens"]) for r in exp["results"])
        agents = [cells[group] for name, cells in rows.items() if name != "all agents"]
        ran = [c for c in agents if c[0] != "–"]
        assert sum(tokens(c[2]) for c in ran) == run_tokens
        assert tokens(rows["all agents"][group][2]) == run_tokens
        assert sum(a["total_tokens"] for a in exp["agents"].values()) == run_tokens
        assert sum(a["cost_usd"] for a in exp["agents"].values()) == pytest.approx(
            sum(r["scores"]["cost_usd"] for r in exp["results"])
        )
        for name, row in exp["agents"].items():
            assert rows[name][group][:3] == [
                str(row["results"]),
                str(row["model_calls"]),
                f"{row['input_tokens']:,} / {row['output_tokens']:,}",
            ]
    assert "supervisor" not in experiments[1]["agents"]  # the swarm has no supervisor
    assert rows["supervisor"][5:] == ["–"] * 5


def test_compare_by_agent_on_the_demo_matches_the_run(demo):
    tmp, output, _ = demo
    result = CliRunner().invoke(
        app,
        ["compare", "supervisor", "swarm", "--by-agent", "--store", str(tmp / "db")],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    _, from_run = agent_rows(
        output, "per agent · totals over every result (every call made, failed requests too)"
    )
    _, from_compare = agent_rows(result.output, "per agent · totals over the 3 examples")
    assert from_compare == from_run


def test_the_html_agents_section_says_it_counts_every_result_and_does():
    """An errored request's model call is counted, and the section says so: never "over the
    successful results"."""
    errored = flat_side()
    errored.runs[0] = replace(errored.runs[0], error="boom")
    text = render_html(comparison.build([errored, flat_side()]), title="t")
    section = text.split("<h2>Agents</h2>", 1)[1].split("<h2>Metrics</h2>", 1)[0]
    assert "successful" not in section
    assert "over every result of the examples every side ran" in section
    usage = comparison.agent_usage([errored, flat_side()])[0]
    assert usage is not None and usage.total.model_calls == 3  # the errored one's call too
