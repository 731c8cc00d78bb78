"""Agent attribution on graph forms beyond the corpus's: teams whose nodes are functions, a
map-reduce fan-out to one agent, agents called as tools in parallel, a swarm of create_agent
agents. Each request is traced by the recorder; the truth is worked out by hand from the
scripted models' replies, written next to each test."""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import pytest
from fakes import reply, scripted
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send
from langgraph_swarm import create_handoff_tool, create_swarm
from typing_extensions import TypedDict

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.handoffs import chain_length, ping_pong_at
from agenteval_cli.trace.attribution import graph_coordinators
from agenteval_cli.trace.recorder import TraceRecorder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")


def traced(graph: Any, question: str, coordinators: list[str] | None = None) -> Trace:
    recorder = TraceRecorder(coordinators=coordinators or graph_coordinators(graph))
    graph.invoke({"messages": [HumanMessage(question)]}, config={"callbacks": [recorder]})
    return recorder.trace()


def hops(trace: Trace) -> list[tuple[str, str, str]]:
    return [(h.source, h.target, h.via) for h in trace.handoffs]


def test_teams_of_function_nodes_with_command_routing() -> None:
    """The LangGraph tutorial's hierarchical teams: a top supervisor node routes with
    Command(goto=...) to a team node that invokes the team's graph; the team's own
    "supervisor" node routes to "search", a node running an unnamed react agent."""
    search_agent = create_react_agent(scripted("search-model", reply("found it")), tools=[])
    team_model = scripted("team-model", reply("search"), reply("FINISH"))

    def team_supervisor(state: MessagesState) -> Command:
        answer = team_model.invoke(state["messages"])
        goto = END if answer.content == "FINISH" else "search"
        return Command(goto=goto, update={"messages": [answer]})

    def search(state: MessagesState) -> Command:
        result = search_agent.invoke(state)
        return Command(goto="supervisor", update={"messages": result["messages"][-1:]})

    team = (
        StateGraph(MessagesState)
        .add_node("supervisor", team_supervisor, destinations=("search", END))
        .add_node("search", search, destinations=("supervisor",))
        .add_edge(START, "supervisor")
        .compile()
    )
    top_model = scripted("top-model", reply("research_team"), reply("FINISH"))

    def top_supervisor(state: MessagesState) -> Command:
        answer = top_model.invoke(state["messages"])
        goto = END if answer.content == "FINISH" else "research_team"
        return Command(goto=goto, update={"messages": [answer]})

    def research_team(state: MessagesState) -> Command:
        result = team.invoke({"messages": state["messages"][-1:]})
        return Command(goto="supervisor", update={"messages": result["messages"][-1:]})

    graph = (
        StateGraph(MessagesState)
        .add_node("supervisor", top_supervisor, destinations=("research_team", END))
        .add_node("research_team", research_team, destinations=("supervisor",))
        .add_edge(START, "supervisor")
        .compile()
    )
    trace = traced(graph, "Find the paper.")
    # model calls: top, team supervisor, search agent, team supervisor, top
    assert [c.path for c in trace.model_calls] == [
        ["supervisor"],
        ["research_team", "supervisor"],
        ["research_team", "search"],
        ["research_team", "supervisor"],
        ["supervisor"],
    ]
    # two agents named "supervisor" in different places stay two steps
    assert trace.agent_path == ["supervisor", "supervisor", "search", "supervisor", "supervisor"]
    assert hops(trace) == [
        ("supervisor", "supervisor", "command"),
        ("supervisor", "search", "command"),
        ("search", "supervisor", "command"),
        ("supervisor", "supervisor", "command"),
    ]
    assert chain_length(trace) == 4
    # every hop is a Command; the top supervisor chooses between its team and the end, and
    # the team's node can only go back to it: a coordinator found in the graph, so the
    # supervisor → search → supervisor exchange is no bounce
    assert graph_coordinators(graph) == ["supervisor"]
    assert ping_pong_at(trace) is None
    trace.coordinators = []  # without it, that exchange is a bounce
    assert ping_pong_at(trace) == 2


class _MapState(TypedDict):
    messages: Annotated[list[Any], add_messages]
    parts: list[str]


def test_map_reduce_fan_out_to_one_agent() -> None:
    """A planner sends three parts to the same worker at once, then writes the answer:
    planner → {worker ×3} → writer is 3 + 3 handoffs, all parallel, and no bounce."""
    planner_model = scripted("planner-model", reply("plan", tokens=(5, 1)))
    worker_model = scripted("worker-model", *[reply(f"part {i}", tokens=(2, 2)) for i in range(3)])
    writer_model = scripted("writer-model", reply("answer", tokens=(7, 3)))

    def planner(state: _MapState) -> dict:
        return {"messages": [planner_model.invoke(state["messages"])], "parts": ["a", "b", "c"]}

    def fan_out(state: _MapState) -> list[Send]:
        return [
            Send("worker", {"messages": state["messages"], "parts": [p]}) for p in state["parts"]
        ]

    def worker(state: _MapState) -> dict:
        return {"messages": [worker_model.invoke(state["messages"])]}

    def writer(state: _MapState) -> dict:
        return {"messages": [writer_model.invoke(state["messages"])]}

    graph = (
        StateGraph(_MapState)
        .add_node("planner", planner)
        .add_node("worker", worker)
        .add_node("writer", writer)
        .add_edge(START, "planner")
        .add_conditional_edges("planner", fan_out, ["worker"])
        .add_edge("worker", "writer")
        .add_edge("writer", END)
        .compile()
    )
    trace = traced(graph, "Summarise three things.")
    assert trace.agent_path == ["planner", "worker", "writer"]
    assert hops(trace) == [("planner", "worker", "edge")] * 3 + [("worker", "writer", "edge")] * 3
    assert all(h.parallel for h in trace.handoffs)
    assert [h.after for h in trace.handoffs[3:]] == [[0], [1], [2]]
    assert chain_length(trace) == 6 and ping_pong_at(trace) is None
    usage = trace.by_agent()
    assert (usage["worker"]["model_calls"], usage["worker"]["input_tokens"]) == (3, 6)
    assert (usage["planner"]["input_tokens"], usage["writer"]["output_tokens"]) == (5, 3)


def test_agents_called_as_tools_in_parallel() -> None:
    """A create_agent supervisor calls two prebuilt react agents as tools in one turn:
    supervisor → {billing ∥ tech} → supervisor, each a delegation, the supervisor a
    coordinator, and the sub-agents' tokens under "supervisor > billing"."""
    billing = create_react_agent(
        scripted("bill-model", reply("refunded", tokens=(3, 1))), [], name="billing"
    )
    tech = create_react_agent(
        scripted("tech-model", reply("reset", tokens=(4, 1))), [], name="tech"
    )

    @tool
    def ask_billing(question: str) -> str:
        """Ask the billing agent."""
        return billing.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content

    @tool
    def ask_tech(question: str) -> str:
        """Ask the tech agent."""
        return tech.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content

    model = scripted(
        "sup-model",
        reply(
            tools=[("ask_billing", {"question": "refund"}), ("ask_tech", {"question": "reset"})],
            tokens=(9, 2),
        ),
        reply("Refunded and reset.", tokens=(12, 4)),
    )
    graph = create_agent(model, tools=[ask_billing, ask_tech], name="supervisor")
    trace = traced(graph, "Refund me and reset my password.")
    assert sorted(c.path for c in trace.model_calls) == [
        ["supervisor"],
        ["supervisor"],
        ["supervisor", "billing"],
        ["supervisor", "tech"],
    ]
    assert trace.agent_path == ["supervisor", "billing", "tech", "supervisor"]
    assert sorted(hops(trace)) == sorted(
        [
            ("supervisor", "billing", "agent_tool"),
            ("supervisor", "tech", "agent_tool"),
            ("billing", "supervisor", "agent_tool"),
            ("tech", "supervisor", "agent_tool"),
        ]
    )
    assert [(t.name, t.kind, t.target) for t in trace.tool_calls] == [
        ("ask_billing", "agent", "billing"),
        ("ask_tech", "agent", "tech"),
    ]
    assert trace.coordinators == ["supervisor"]
    assert chain_length(trace) == 4 and ping_pong_at(trace) is None
    usage = trace.by_agent()
    assert usage["supervisor > billing"]["input_tokens"] == 3
    assert (
        usage["supervisor"]["input_tokens"] == 9 + 12 + 3 + 4
    )  # the team: its own and its agents'


def test_swarm_of_create_agent_agents() -> None:
    """create_swarm over create_agent(name=...) agents: alice → bob → alice, both by handoff
    tools, is a bounce; the agents are named by lc_agent_name."""
    alice = create_agent(
        scripted(
            "alice-model",
            reply(tools=[("transfer_to_bob", {})], tokens=(1, 1)),
            reply("Thanks, Bob says 42.", tokens=(2, 1)),
        ),
        tools=[create_handoff_tool(agent_name="bob")],
        name="alice",
    )
    bob = create_agent(
        scripted("bob-model", reply(tools=[("transfer_to_alice", {})], tokens=(3, 1))),
        tools=[create_handoff_tool(agent_name="alice")],
        name="bob",
    )
    graph = create_swarm([alice, bob], default_active_agent="alice").compile()
    trace = traced(graph, "What is the answer?")
    assert trace.agent_path == ["alice", "bob", "alice"]
    assert hops(trace) == [("alice", "bob", "tool"), ("bob", "alice", "tool")]
    assert [t.kind for t in trace.tool_calls] == ["handoff", "handoff"]
    assert trace.coordinators == []
    assert chain_length(trace) == 2 and ping_pong_at(trace) == 1


def test_an_unnamed_single_agent_is_one_agent_with_its_tools() -> None:
    """create_react_agent with no name, invoked directly: one agent, named after its first
    node, whose tool calls are its own (not an agent called "tools")."""

    @tool
    def lookup(invoice: str) -> str:
        """Look an invoice up."""
        return f"{invoice}: paid"

    model = scripted(
        "solo-model",
        reply(tools=[("lookup", {"invoice": "INV-1"})], tokens=(4, 2)),
        reply("INV-1 is paid.", tokens=(8, 3)),
    )
    trace = traced(create_react_agent(model, [lookup]), "Is INV-1 paid?")
    assert trace.agent_path == ["agent"]
    assert [(t.path, t.name, t.kind) for t in trace.tool_calls] == [(["agent"], "lookup", "tool")]
    assert trace.handoffs == [] and chain_length(trace) == 0


def test_a_supervisor_that_workers_return_to_by_command_is_a_coordinator() -> None:
    """The agent-supervisor tutorial: workers end with ``Command[Literal["supervisor"]]``,
    a return that can go nowhere else, so the supervisor coordinates and
    supervisor → billing → supervisor → billing is no bounce."""
    sup_model = scripted("sup-model", reply("billing"), reply("billing"), reply("FINISH"))
    billing_model = scripted("bill-model", reply("first part"), reply("second part"))

    def supervisor(state: MessagesState) -> Command:
        choice = sup_model.invoke(state["messages"]).content
        return Command(goto=END if choice == "FINISH" else choice)

    def billing(state: MessagesState) -> Command:
        answer = billing_model.invoke(state["messages"])
        return Command(goto="supervisor", update={"messages": [answer]})

    def tech(state: MessagesState) -> Command:  # not asked this time
        raise AssertionError("tech was not routed to")

    graph = (
        StateGraph(MessagesState)
        .add_node("supervisor", supervisor, destinations=("billing", "tech", END))
        .add_node("billing", billing, destinations=("supervisor",))
        .add_node("tech", tech, destinations=("supervisor",))
        .add_edge(START, "supervisor")
        .compile()
    )
    assert graph_coordinators(graph) == ["supervisor"]
    trace = traced(graph, "Two billing questions.")
    assert trace.agent_path == ["supervisor", "billing", "supervisor", "billing", "supervisor"]
    assert chain_length(trace) == 4
    assert trace.coordinators == ["supervisor"] and ping_pong_at(trace) is None


def test_a_runnable_parallel_of_agents_is_parallel_even_run_one_by_one() -> None:
    """A node runs a model, then two named agents through ``RunnableParallel`` with
    ``max_concurrency=1`` (so they run one after the other): desk → {billing ∥ tech}, two
    parallel handoffs and no billing → tech handoff, on every run."""
    from langchain_core.runnables import RunnableConfig, RunnableParallel

    def build() -> Any:
        desk_model = scripted("desk-model", reply("splitting", tokens=(2, 1)))
        billing = create_react_agent(scripted("bill-model", reply("refunded")), [], name="billing")
        tech = create_react_agent(scripted("tech-model", reply("reset")), [], name="tech")
        both = RunnableParallel(billing=billing, tech=tech)

        def desk(state: MessagesState, config: RunnableConfig) -> dict:
            first = desk_model.invoke(state["messages"])
            done = both.invoke({"messages": state["messages"]}, {**config, "max_concurrency": 1})
            answers = [done[name]["messages"][-1] for name in ("billing", "tech")]
            return {"messages": [first, *answers]}

        return StateGraph(MessagesState).add_node("desk", desk).add_edge(START, "desk").compile()

    for _ in range(3):
        trace = traced(build(), "Refund me and reset my password.")
        assert trace.agent_path == ["desk", "billing", "tech"]
        assert [c.path for c in trace.model_calls] == [
            ["desk"],
            ["desk", "billing"],
            ["desk", "tech"],
        ]
        assert hops(trace) == [("desk", "billing", "edge"), ("desk", "tech", "edge")]
        assert all(h.parallel for h in trace.handoffs)
        assert chain_length(trace) == 2 and ping_pong_at(trace) is None
