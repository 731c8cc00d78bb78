"""Deep agents (deepagents' ``create_deep_agent``) and agents called as tools, through the CLI,
every metric held against the truth from the models' own log (see tests/forms).

The main agent's graph is ``model``, ``tools`` and middleware hooks: none of them names an
agent, so an unnamed main agent is the target's own agent, named after the target. It runs
its sub-agents with the ``task`` tool, so it is a coordinator in every request, the ones it
answers alone included (routing precision 1.0 and exact routing there, not 0.0 / False).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from deepagents import CompiledSubAgent, create_deep_agent
from forms import datasets, deep
from forms.harness import BASE_EVALUATORS, Run, mismatches, report, run_spec, truths
from forms.policy import TOOLS
from forms.tools import TOOL_OF
from forms.truth import Form
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from typer.testing import CliRunner

import agenteval_cli
from agenteval_cli.cli import app
from agenteval_cli.trace.agent_tools import agent_tool_coordinators

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVALUATORS = [*BASE_EVALUATORS, "routing_precision", "routing_exact"]
SUBAGENTS = ("billing", "tech")
BOTH = "Refund my last invoice and fix the crash in the app."
WORK_TOOLS = {TOOLS[agent][0]: agent for agent in SUBAGENTS}  # tool name -> its sub-agent
MAINS = {"deep_agent": "deep_agent", "deep_named": "orchestrator"}  # target -> its main agent


def deep_form(main: str, *, parallel: bool = False, kinds: dict[str, str] | None = None) -> Form:
    return Form(
        coordinators=frozenset({main}),
        branches=SUBAGENTS if parallel else (),
        kinds=kinds or {"task": "agent"},
        paths_known=False,  # checked here: sub-agents sit under the main agent
    )


def precision(expected: Sequence[str], invoked: set[str]) -> float:
    if not invoked:
        return 0.0 if expected else 1.0
    return len(invoked & set(expected)) / len(invoked)


def deep_mismatches(
    run: Run,
    target: str,
    main: str,
    form: Form,
    *,
    graph: str | None = None,
    paths: dict[str, list[str]] | None = None,
) -> list[str]:
    """Beyond the harness: routing precision and exact routing (the form's coordinators are
    no specialists), every call's agent path (``paths``: by default ``main`` for the main
    agent, ``main > sub`` for a sub-agent), the usage per path in the trace and in ``--json``
    agents, the coordinators, each tool call's path and each ``task`` call's agent."""
    graph = graph or main  # the graph's models log under this name
    paths = paths or {main: [main], **{sub: [main, sub] for sub in SUBAGENTS}}
    truth = truths(run, graph, form)
    problems = mismatches(run, target, form, graph=graph)
    agents: dict[str, list[int]] = {}  # path -> [results, model calls]
    for row in run.rows[target]:
        where = f"{target}/{row.example_id}"
        t = truth[row.question]
        expected = row.reference.get("expected_agents") or []
        invoked = {c.agent for c in t.calls} - form.coordinators
        want = {
            "routing_precision": precision(expected, invoked),
            "routing_exact": invoked == set(expected),
        }
        for key, value in want.items():
            if row.scores.get(key) != value:
                problems.append(f"{where}: {key}: agenteval={row.scores.get(key)!r} truth={value}")
        got_paths = [c["path"] for c in row.json["trace"]["model_calls"]]
        want_paths = [paths[c.agent] for c in t.calls]
        if sorted(got_paths) != sorted(want_paths):
            problems.append(f"{where}: model call paths: agenteval={got_paths} truth={want_paths}")
        usage = {k: (v["model_calls"], v["input_tokens"]) for k, v in row.trace.by_agent().items()}
        want_usage: dict[str, tuple[int, int]] = {}
        for c in t.calls:  # a call counts for its agent and every agent it runs inside
            for depth in range(1, len(paths[c.agent]) + 1):
                key = " > ".join(paths[c.agent][:depth])
                calls, tokens = want_usage.get(key, (0, 0))
                want_usage[key] = (calls + 1, tokens + (c.input_tokens or 0))
        if usage != want_usage:
            problems.append(f"{where}: by_agent: agenteval={usage} truth={want_usage}")
        if set(row.json["trace"]["coordinators"]) != form.coordinators:
            problems.append(f"{where}: coordinators: {row.json['trace']['coordinators']}")
        for call in row.json["trace"]["tool_calls"]:
            if call["kind"] == "agent":  # made by the agent the one it runs sits in
                want_path = paths[call["target"]][:-1]
            else:  # a sub-agent's work tool, else the main agent's own
                want_path = paths[WORK_TOOLS.get(call["name"], main)]
            if call["path"] != want_path:
                problems.append(f"{where}: tool call path: agenteval={call} truth={want_path}")
            if call["name"] == "task" and call["target"] != call["args"]["subagent_type"]:
                problems.append(f"{where}: task call reaches {call['target']}: {call}")
        for key in want_usage:
            counts = agents.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += want_usage[key][0]
    experiment = next(e for e in run.document["experiments"] if e["target"] == target)
    got = {k: [v["results"], v["model_calls"]] for k, v in experiment["agents"].items()}
    if got != agents:
        problems.append(f"{target}: --json agents: agenteval={got} truth={agents}")
    return problems


def by_agent_rows(store: Any, first: str, second: str) -> list[tuple[str, list[str]]]:
    """``agenteval compare FIRST SECOND --by-agent``: the per-agent table's rows, each agent
    indented under the agent it runs inside, with its cells."""
    result = CliRunner().invoke(
        app,
        ["compare", first, second, "--by-agent", "--store", str(store)],
        env={"COLUMNS": "220"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    rows = []
    for line in result.output.split("per agent", 1)[1].splitlines():
        if line.startswith(("└", "├")):
            break
        if line.startswith("│"):
            name, *cells = line.split("│")[1:-1]
            rows.append((name.removeprefix(" ").rstrip(), [c.strip() for c in cells]))
    return rows


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory) -> tuple[Run, Any]:
    """Two deep agents side by side: unnamed, and ``name="orchestrator"``."""
    folder = tmp_path_factory.mktemp("deep")
    run = run_spec(
        folder,
        targets={
            "deep_agent": "forms.deep:deep_agent",
            "deep_named": "forms.deep:orchestrator",
        },
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    return run, folder


def test_deep_agent_delegating_by_task(deep_run):
    """The unnamed main agent is ``deep_agent`` (the target), never
    ``PatchToolCallsMiddleware.before_agent``; ``task`` calls are agent calls."""
    run, _ = deep_run
    form = deep_form("deep_agent")
    truth = truths(run, "deep_agent", form)
    both = truth[BOTH]
    assert (both.path, both.chain) == (
        ["deep_agent", "billing", "deep_agent", "tech", "deep_agent"],
        4,
    )
    assert truth[datasets.HOURS].path == ["deep_agent"]
    problems = deep_mismatches(run, "deep_agent", "deep_agent", form)
    assert not problems, report(problems)


def test_named_deep_agent_answering_alone_is_a_coordinator(deep_run):
    """``create_deep_agent(name="orchestrator")`` is the agent ``orchestrator`` whatever the
    target is called; answering the opening-hours question alone it is still no specialist."""
    run, _ = deep_run
    problems = deep_mismatches(run, "deep_named", "orchestrator", deep_form("orchestrator"))
    assert not problems, report(problems)
    hours = next(r for r in run.rows["deep_named"] if r.question == datasets.HOURS)
    assert (hours.scores["routing_precision"], hours.scores["routing_exact"]) == (1.0, True)


def test_deep_agents_by_agent_table(deep_run):
    """``compare --by-agent``: the main agent of each target with its sub-agents indented
    under it, no middleware hook among them; each row's model calls are the log's."""
    run, folder = deep_run
    ids = {e["target"]: e["id"] for e in run.document["experiments"]}
    rows = by_agent_rows(folder / "agenteval.db", ids["deep_agent"], ids["deep_named"])
    want = []
    for side, (target, main) in enumerate(MAINS.items()):
        truth = truths(run, main, deep_form(main))
        calls = [c for row in run.rows[target] for c in truth[row.question].calls]
        for agent, indent in ((main, ""), ("billing", "  "), ("tech", "  ")):
            count = str(sum(1 for c in calls if agent in (main, c.agent)))
            want.append((indent + agent, count if side == 0 else "–", count if side else "–"))
    got = [(name, cells[1], cells[6]) for name, cells in rows]  # each side's model calls
    assert got == want, rows


def test_parallel_task_calls(tmp_path):
    """Both parts handed out in one model turn: two parallel branches, four handoffs."""
    run = run_spec(
        tmp_path,
        targets={"deep_parallel": "forms.deep:deep_parallel"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    form = deep_form("deep_parallel", parallel=True)
    both = truths(run, "deep_parallel", form)[BOTH]
    assert (both.path, both.chain) == (["deep_parallel", "billing", "tech", "deep_parallel"], 4)
    turns = [c for c in both.calls if c.agent == "deep_parallel" and c.tools]
    assert [len(c.tools) for c in turns] == [2]  # one turn, two task calls
    problems = deep_mismatches(run, "deep_parallel", "deep_parallel", form)
    assert not problems, report(problems)
    row = next(r for r in run.rows["deep_parallel"] if r.example_id == "both")
    handoffs = row.json["trace"]["handoffs"]
    assert [(h["source"], h["target"], h["via"], h["parallel"]) for h in handoffs] == [
        ("deep_parallel", "billing", "agent_tool", True),
        ("deep_parallel", "tech", "agent_tool", True),
        ("billing", "deep_parallel", "agent_tool", True),
        ("tech", "deep_parallel", "agent_tool", True),
    ]


def test_compiled_sub_agents(tmp_path):
    """``CompiledSubAgent(runnable=create_agent(...))``, the runnable named or not: the
    sub-agent is the name deepagents gives it."""
    run = run_spec(
        tmp_path,
        targets={"deep_compiled": "forms.deep:deep_compiled"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    problems = deep_mismatches(run, "deep_compiled", "deep_compiled", deep_form("deep_compiled"))
    assert not problems, report(problems)


def test_agents_as_tools_answering_alone(tmp_path):
    """An unnamed ``create_agent`` whose ``@tool`` functions invoke agents: the target's own
    agent, a coordinator from its graph, so answering alone it routes exactly."""
    run = run_spec(
        tmp_path,
        targets={"agent_tools": "forms.deep:agent_tools"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    form = deep_form("agent_tools", kinds={"ask_billing": "agent", "ask_tech": "agent"})
    problems = deep_mismatches(run, "agent_tools", "agent_tools", form)
    assert not problems, report(problems)
    hours = next(r for r in run.rows["agent_tools"] if r.question == datasets.HOURS)
    assert hours.json["trace"]["agent_path"] == ["agent_tools"]
    assert (hours.scores["routing_precision"], hours.scores["routing_exact"]) == (1.0, True)
    assert hours.json["trace"]["coordinators"] == ["agent_tools"]


def test_supervisor_node_with_its_own_tool_node(tmp_path):
    """A ``supervisor`` node beside a ``ToolNode`` called ``tools`` that runs agents: the
    tools node is the supervisor's step (its tool calls and the agents they run sit under
    ``supervisor``, never under ``tools``), and the supervisor is a coordinator from the
    graph, answering alone too."""
    run = run_spec(
        tmp_path,
        targets={"tool_node": "forms.deep:tool_node_supervisor"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    form = deep_form("supervisor", kinds={"ask_billing": "agent", "ask_tech": "agent"})
    problems = deep_mismatches(run, "tool_node", "supervisor", form, graph="tool_node_supervisor")
    assert not problems, report(problems)


def test_agenteval_never_imports_deepagents():
    """deepagents is a test dependency: no module of agenteval imports it."""
    package = Path(agenteval_cli.__file__).parent
    importing = []
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] == "deepagents" for n in names):
                importing.append(str(source.relative_to(package)))
    assert not importing, importing


def test_coordinators_are_found_in_the_graph():
    """Agents whose tools run agents, found when the target is loaded, by what the tools
    hold: deepagents' task tool (a ``CompiledSubAgent`` that is itself a deep agent is one
    too), ``Runnable.as_tool()``, a graph given an ``lc_agent_name``; not an unnamed single
    agent (its calls are its caller's) nor ordinary tools."""
    inner = deep.build_deep("nested", "money")
    outer = create_deep_agent(
        model=deep.form_model("nested", "outer", deep.delegating(("money",)), large=True),
        subagents=[CompiledSubAgent(name="money", description="Money matters.", runnable=inner)],
    )
    assert agent_tool_coordinators(outer, own="outer") == ["outer", "money"]

    def main_with(*tools: Any) -> Any:
        return create_agent(deep.form_model("t", "main", lambda m: AIMessage("hi")), list(tools))

    billing = create_agent(deep.form_model("t", "billing", lambda m: AIMessage("b")), [])
    named = create_agent(deep.form_model("t", "billing", lambda m: AIMessage("b")), [], name="b")
    labelled = billing.with_config({"metadata": {"lc_agent_name": "billing"}})
    assert agent_tool_coordinators(main_with(named.as_tool(name="ask")), own="main") == ["main"]

    @tool
    def ask_labelled(query: str) -> str:
        """Ask billing."""
        return str(labelled.invoke({"messages": [("user", query)]}))

    @tool
    def ask_unnamed(query: str) -> str:
        """Ask an unnamed agent."""
        return str(billing.invoke({"messages": [("user", query)]}))

    assert agent_tool_coordinators(main_with(ask_labelled), own="main") == ["main"]
    assert agent_tool_coordinators(main_with(ask_unnamed), own="main") == []
    assert agent_tool_coordinators(main_with(TOOL_OF["billing"]), own="main") == []


def test_deep_agent_under_a_deep_agent(tmp_path):
    """A ``CompiledSubAgent`` that is itself a deep agent: ``deep_nested > money > billing``;
    ``money`` is a coordinator from the graph, also where it answers alone (a request no
    specialist of its handles)."""
    rows = [*datasets.support(), datasets.row("money-alone", "Please change my email address.", [])]
    run = run_spec(
        tmp_path,
        targets={"deep_nested": "forms.deep:deep_nested"},
        rows=rows,
        evaluators=EVALUATORS,
    )
    form = Form(
        coordinators=frozenset({"deep_nested", "money"}),
        kinds={"task": "agent"},
        paths_known=False,
    )
    outer, money = ["deep_nested"], ["deep_nested", "money"]
    paths = {"deep_nested": outer, "money": money, **{s: [*money, s] for s in SUBAGENTS}}
    truth = truths(run, "deep_nested", form)
    assert truth[BOTH].path == [
        "deep_nested", "money", "billing", "money", "tech", "money", "deep_nested",
    ]  # fmt: skip
    assert truth["Please change my email address."].path == ["deep_nested", "money", "deep_nested"]
    problems = deep_mismatches(run, "deep_nested", "deep_nested", form, paths=paths)
    assert not problems, report(problems)


def test_function_target_running_a_deep_agent(tmp_path):
    """A plain function invoking a deep agent: the agent is still the target's own, and a
    coordinator found in the graph the function holds."""
    run = run_spec(
        tmp_path,
        targets={"deep_function": "forms.deep:deep_function"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    problems = deep_mismatches(run, "deep_function", "deep_function", deep_form("deep_function"))
    assert not problems, report(problems)
