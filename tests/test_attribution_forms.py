"""Agent metrics on more multi-agent forms, built the way langgraph-supervisor, langgraph-swarm,
LangChain and the LangGraph docs build them: the functional API, a swarm inside a supervisor
and a supervisor inside a swarm, forwarded messages, Command.PARENT tools, structured-output
routers, streamed agents, async fan-outs, model hooks, nested agent tools, node retries,
model retries and models without usage.

Each request is traced by the recorder; the truth (agent path, handoff chain length,
ping-pong, tokens, cost, per-agent usage) is worked out by hand from the scripted replies,
written next to each test.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Annotated, Any, Literal

import pytest
from fakes import reply, scripted
from forms.network import (
    functional_network,
    transfer_to_hotel_advisor,
    transfer_to_travel_advisor,
)
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, before_model
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.types import Command, RetryPolicy, Send
from langgraph_supervisor import create_supervisor
from langgraph_supervisor.handoff import create_forward_message_tool
from langgraph_swarm import create_handoff_tool as swarm_handoff_tool
from langgraph_swarm import create_swarm
from typing_extensions import TypedDict

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.cost import token_cost
from agenteval_cli.evaluators.handoffs import handoff_chain_length
from agenteval_cli.evaluators.routing import routing_accuracy
from agenteval_cli.trace.attribution import graph_coordinators
from agenteval_cli.trace.recorder import TraceRecorder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

pytestmark = pytest.mark.filterwarnings(
    "ignore::langgraph.warnings.LangGraphDeprecationWarning",
    "ignore::DeprecationWarning",
)

PRICE = {"input": 1.0, "output": 2.0}  # USD per 1M tokens, the same for every scripted model

Usage = tuple[int, int | None, int | None]  # model calls, input tokens, output tokens


# -- tracing and the metrics the CLI reports ------------------------------------------------------


def _recorder(graph: Any, coordinators: list[str] | None) -> TraceRecorder:
    declared = graph_coordinators(graph) if coordinators is None else coordinators
    return TraceRecorder(coordinators=declared)


def traced(
    graph: Any,
    inputs: Any = None,
    *,
    coordinators: list[str] | None = None,
    config: dict[str, Any] | None = None,
) -> Trace:
    recorder = _recorder(graph, coordinators)
    state = {"messages": [HumanMessage("Help me, please.")]} if inputs is None else inputs
    graph.invoke(state, config={"callbacks": [recorder], **(config or {})})
    return recorder.trace()


def atraced(graph: Any, inputs: Any = None, *, coordinators: list[str] | None = None) -> Trace:
    recorder = _recorder(graph, coordinators)
    state = {"messages": [HumanMessage("Help me, please.")]} if inputs is None else inputs

    async def go() -> None:
        await graph.ainvoke(state, config={"callbacks": [recorder]})

    asyncio.run(go())
    return recorder.trace()


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _cost(tokens_in: int | None, tokens_out: int | None) -> float | None:
    if tokens_in is None or tokens_out is None:
        return None
    return round((tokens_in * PRICE["input"] + tokens_out * PRICE["output"]) / 1_000_000, 12)


def metrics(trace: Trace, expected_agents: list[str]) -> dict[str, Any]:
    """What the CLI scores for one request, and its model calls per agent."""
    found: dict[str, Any] = {}
    found["routing_accuracy"] = routing_accuracy()({"expected_agents": expected_agents}, trace)[
        "score"
    ]
    found["agent_path"] = trace.agent_path
    for score in handoff_chain_length()(trace):
        found[score["key"]] = score["score"]
    for score in token_cost(pricing={m: PRICE for m in trace.tokens})(trace):
        found[score["key"]] = score["score"]
    if found["cost_usd"] is not None:
        found["cost_usd"] = round(found["cost_usd"], 12)
    calls: dict[str, list[Any]] = {}
    for call in trace.model_calls:
        if not call.failed:  # a call that raised answered nothing: the model logged none
            calls.setdefault(call.agent, []).append(call)
    found["per_agent"] = {
        agent: (
            len(made),
            _sum([c.input_tokens for c in made]),
            _sum([c.output_tokens for c in made]),
        )
        for agent, made in calls.items()
    }
    return found


def truth(
    path: list[str],
    chain: int,
    ping_pong: bool,
    per_agent: dict[str, Usage],
    *,
    routing: float = 1.0,
) -> dict[str, Any]:
    """The metrics a request must get, from the scripted models' calls (per agent)."""
    tokens_in = _sum([u[1] for u in per_agent.values()])
    tokens_out = _sum([u[2] for u in per_agent.values()])
    return {
        "routing_accuracy": routing,
        "agent_path": path,
        "handoff_chain_length": chain,
        "ping_pong": ping_pong,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "total_tokens": None if tokens_in is None or tokens_out is None else tokens_in + tokens_out,
        "cost_usd": _cost(tokens_in, tokens_out),
        "cache_share": None,  # the scripted models report no cache reads
        "per_agent": per_agent,
    }


def teams(trace: Trace, *keys: str) -> dict[str, Usage]:
    usage = trace.by_agent()
    return {
        k: (usage[k]["model_calls"], usage[k]["input_tokens"], usage[k]["output_tokens"])
        for k in keys
        if k in usage
    }


def hops(trace: Trace) -> list[tuple[str, str, str]]:
    return [(h.source, h.target, h.via) for h in trace.handoffs]


def _react(name: str, model: Any, tools: list[Any] | None = None, **kw: Any) -> Any:
    return create_react_agent(model, tools or [], name=name, **kw)


def _ask(agent: Any, question: str) -> str:
    return agent.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content


# -- 1. the functional API ------------------------------------------------------------------------


def test_functional_api_agents_in_tasks_take_turns() -> None:
    """The LangGraph docs' functional-API network: an @entrypoint loop calls the active
    advisor's @task and awaits it before choosing the next one from its last tool call."""

    travel = _react(
        "travel_advisor",
        scripted(
            "travel-model",
            reply(tools=[("transfer_to_hotel_advisor", {})], tokens=(10, 2)),
            reply("Go to Aruba and stay at the Hilton.", tokens=(30, 5)),
        ),
        [transfer_to_hotel_advisor],
    )
    hotel = _react(
        "hotel_advisor",
        scripted("hotel-model", reply(tools=[("transfer_to_travel_advisor", {})], tokens=(20, 3))),
        [transfer_to_travel_advisor],
    )

    workflow = functional_network(travel, hotel)

    trace = traced(workflow, [{"role": "user", "content": "A warm trip and a hotel."}])
    # travel (10, 2) hands off; hotel (20, 3) hands back; travel (30, 5) answers. Each task
    # ran only after the previous one returned: a sequence, travel → hotel → travel, a
    # bounce between two peers (the loop itself makes no model call and coordinates none).
    assert metrics(trace, ["travel_advisor", "hotel_advisor"]) == truth(
        ["travel_advisor", "hotel_advisor", "travel_advisor"],
        2,
        True,
        {"travel_advisor": (2, 40, 7), "hotel_advisor": (1, 20, 3)},
    )


def test_functional_api_parallel_tasks_in_between() -> None:
    """An async @entrypoint: a planning task, two agent tasks gathered at once, a writing
    task (the functional API's map-reduce)."""
    planner = scripted("plan-model", reply("plan", tokens=(1, 1)))
    writer = scripted("write-model", reply("final", tokens=(2, 2)))
    billing = create_agent(
        scripted("bill-model", reply("refunded", tokens=(3, 3)), delay_s=0.02), [], name="billing"
    )
    tech = create_agent(
        scripted("tech-model", reply("reset", tokens=(4, 4)), delay_s=0.01), [], name="tech"
    )

    @task
    async def plan(question: str) -> str:
        return (await planner.ainvoke(question)).content

    @task
    async def ask_billing(question: str) -> str:
        result = await billing.ainvoke({"messages": [HumanMessage(question)]})
        return result["messages"][-1].content

    @task
    async def ask_tech(question: str) -> str:
        result = await tech.ainvoke({"messages": [HumanMessage(question)]})
        return result["messages"][-1].content

    @task
    async def write(parts: list[str]) -> str:
        return (await writer.ainvoke(" ".join(parts))).content

    @entrypoint()
    async def workflow(question: str) -> str:
        steps = await plan(question)
        parts = await asyncio.gather(ask_billing(steps), ask_tech(steps))
        return await write(list(parts))

    trace = atraced(workflow, "Refund me and reset my password.")
    # plan (1, 1), then billing (3, 3) and tech (4, 4) at once, then write (2, 2):
    # plan → billing, plan → tech, billing → write, tech → write.
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["plan", "billing", "tech", "write"],
        4,
        False,
        {"plan": (1, 1, 1), "billing": (1, 3, 3), "tech": (1, 4, 4), "write": (1, 2, 2)},
    )


# -- 2. swarms and supervisors inside each other --------------------------------------------------


def test_swarm_nested_in_a_supervisor() -> None:
    """create_swarm([alice, bob]).compile(name="swarm_team") as a member of create_supervisor;
    inside the team alice asks bob, bob hands back, alice answers."""
    alice = _react(
        "alice",
        scripted(
            "alice-model",
            reply(tools=[("transfer_to_bob", {})], tokens=(1, 1)),
            reply("Thanks, Bob says 42.", tokens=(5, 5)),
        ),
        [swarm_handoff_tool(agent_name="bob")],
    )
    bob = _react(
        "bob",
        scripted("bob-model", reply(tools=[("transfer_to_alice", {})], tokens=(2, 2))),
        [swarm_handoff_tool(agent_name="alice")],
    )
    team = create_swarm([alice, bob], default_active_agent="alice").compile(name="swarm_team")
    graph = create_supervisor(
        [team],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_swarm_team", {})], tokens=(3, 3)),
            reply("The answer is 42.", tokens=(4, 4)),
        ),
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph)
    # supervisor (3, 3) → alice (1, 1) → bob (2, 2) → alice (5, 5) → supervisor (4, 4):
    # 4 handoffs; alice → bob → alice is a bounce of two peers (the supervisor is not in it).
    assert metrics(trace, ["supervisor", "swarm_team", "alice", "bob"]) == truth(
        ["supervisor", "alice", "bob", "alice", "supervisor"],
        4,
        True,
        {"supervisor": (2, 7, 7), "alice": (2, 6, 6), "bob": (1, 2, 2)},
    )
    assert teams(trace, "swarm_team", "swarm_team > alice", "swarm_team > bob") == {
        "swarm_team": (3, 8, 8),
        "swarm_team > alice": (2, 6, 6),
        "swarm_team > bob": (1, 2, 2),
    }


def test_supervisor_as_a_swarm_member() -> None:
    """A swarm whose second member is a create_supervisor team: alice hands the request to
    support_team, whose team_supervisor sends it to billing and answers."""
    alice = create_agent(
        scripted("alice-model", reply(tools=[("transfer_to_support_team", {})], tokens=(1, 1))),
        [swarm_handoff_tool(agent_name="support_team")],
        name="alice",
    )
    billing = create_agent(
        scripted("bill-model", reply("Refunded.", tokens=(2, 2))), [], name="billing"
    )
    team = create_supervisor(
        [billing],
        model=scripted(
            "team-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(3, 3)),
            reply("Your refund is done.", tokens=(4, 4)),
        ),
        supervisor_name="team_supervisor",
    ).compile(name="support_team")
    graph = create_swarm([alice, team], default_active_agent="alice").compile()
    trace = traced(graph)
    # alice (1, 1) → team_supervisor (3, 3) → billing (2, 2) → team_supervisor (4, 4):
    # 3 handoffs; billing returns to team_supervisor by the team's fixed edge (a coordinator).
    assert metrics(trace, ["alice", "support_team", "billing"]) == truth(
        ["alice", "team_supervisor", "billing", "team_supervisor"],
        3,
        False,
        {"alice": (1, 1, 1), "team_supervisor": (2, 7, 7), "billing": (1, 2, 2)},
    )
    assert teams(trace, "support_team") == {"support_team": (3, 9, 9)}


def test_supervisor_of_create_agent_members_with_tools_and_forward_message() -> None:
    """create_supervisor over create_agent(name=...) members that call their own tools; the
    supervisor ends by forwarding tech's answer with create_forward_message_tool."""

    @tool
    def refund(invoice: str) -> str:
        """Refund an invoice."""
        return f"refunded {invoice}"

    @tool
    def restart(device: str) -> str:
        """Restart a device."""
        return f"restarted {device}"

    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "INV-1"})], tokens=(5, 1)),
            reply("Refunded INV-1.", tokens=(7, 2)),
        ),
        [refund],
        name="billing",
    )
    tech = create_agent(
        scripted(
            "tech-model",
            reply(tools=[("restart", {"device": "phone"})], tokens=(6, 1)),
            reply("Restarted your phone.", tokens=(8, 2)),
        ),
        [restart],
        name="tech",
    )
    graph = create_supervisor(
        [billing, tech],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
            reply(tools=[("transfer_to_tech", {})], tokens=(11, 1)),
            reply(tools=[("forward_message", {"from_agent": "tech"})], tokens=(12, 1)),
        ),
        tools=[create_forward_message_tool("supervisor")],
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph)
    # supervisor → billing (refund, answer) → supervisor → tech (restart, answer) →
    # supervisor, which forwards tech's message and ends: 4 handoffs, no bounce.
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["supervisor", "billing", "supervisor", "tech", "supervisor"],
        4,
        False,
        {"supervisor": (3, 33, 3), "billing": (2, 12, 3), "tech": (2, 14, 3)},
    )
    kinds = {t.name: t.kind for t in trace.tool_calls}
    assert (kinds["refund"], kinds["restart"]) == ("tool", "tool")


def test_two_levels_of_last_message_supervisors() -> None:
    """A top supervisor over two create_supervisor teams, output_mode="last_message" at both
    levels, the members create_agent agents (billing with a tool)."""

    @tool
    def refund(invoice: str) -> str:
        """Refund an invoice."""
        return "refunded"

    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "1"})], tokens=(1, 1)),
            reply("Refunded.", tokens=(2, 2)),
        ),
        [refund],
        name="billing",
    )
    account = create_agent(
        scripted("acct-model", reply("Account fine.", tokens=(3, 3))), [], name="account"
    )
    tech = create_agent(scripted("tech-model", reply("Fixed.", tokens=(4, 4))), [], name="tech")
    money = create_supervisor(
        [billing, account],
        model=scripted(
            "money-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
            reply(tools=[("transfer_to_account", {})], tokens=(11, 1)),
            reply("Money matters done.", tokens=(12, 1)),
        ),
        supervisor_name="money_supervisor",
        output_mode="last_message",
    ).compile(name="money_team")
    tech_team = create_supervisor(
        [tech],
        model=scripted(
            "techsup-model",
            reply(tools=[("transfer_to_tech", {})], tokens=(20, 1)),
            reply("Tech matters done.", tokens=(21, 1)),
        ),
        supervisor_name="tech_supervisor",
        output_mode="last_message",
    ).compile(name="tech_team")
    graph = create_supervisor(
        [money, tech_team],
        model=scripted(
            "top-model",
            reply(tools=[("transfer_to_money_team", {})], tokens=(30, 1)),
            reply(tools=[("transfer_to_tech_team", {})], tokens=(31, 1)),
            reply("All done.", tokens=(32, 1)),
        ),
        supervisor_name="top",
        output_mode="last_message",
    ).compile()
    trace = traced(graph)
    # top → money_supervisor → billing → money_supervisor → account → money_supervisor →
    # top → tech_supervisor → tech → tech_supervisor → top: 10 handoffs, every return to a
    # supervisor by its graph's fixed edge.
    in_money = ["money_supervisor", "billing", "money_supervisor", "account", "money_supervisor"]
    path = ["top", *in_money, "top", "tech_supervisor", "tech", "tech_supervisor", "top"]
    assert metrics(trace, ["money_team", "tech_team", "billing", "tech"]) == truth(
        path,
        10,
        False,
        {
            "top": (3, 93, 3),
            "money_supervisor": (3, 33, 3),
            "billing": (2, 3, 3),
            "account": (1, 3, 3),
            "tech_supervisor": (2, 41, 2),
            "tech": (1, 4, 4),
        },
    )
    assert teams(trace, "money_team", "tech_team", "money_team > billing") == {
        "money_team": (6, 39, 9),
        "tech_team": (3, 45, 6),
        "money_team > billing": (2, 3, 3),
    }


# -- 3. networks: Command.PARENT tools, Command nodes, structured-output routers ------------------


def _parent_handoff(agent_name: str, tool_name: str) -> Any:
    """The LangGraph docs' handoff tool: Command(goto=agent, graph=Command.PARENT)."""

    @tool(tool_name)
    def handoff_to_agent(
        state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> Command:
        """Ask another agent for help."""
        message = {
            "role": "tool",
            "content": f"Successfully transferred to {agent_name}",
            "name": tool_name,
            "tool_call_id": tool_call_id,
        }
        return Command(
            goto=agent_name,
            graph=Command.PARENT,
            update={"messages": state["messages"] + [message]},
        )

    return handoff_to_agent


def test_network_of_react_agents_handing_off_by_parent_command() -> None:
    """The docs' multi-agent network: unnamed react agents run by node functions, handing
    off with tools (not called transfer_*) that return Command(graph=Command.PARENT)."""

    @tool
    def get_travel_recommendations() -> str:
        """Recommend a destination."""
        return "aruba"

    travel = create_react_agent(
        scripted(
            "travel-model",
            reply(tools=[("get_travel_recommendations", {})], tokens=(1, 1)),
            reply(tools=[("ask_hotels", {})], tokens=(2, 2)),
            reply("Aruba, at the Hilton.", tokens=(5, 5)),
        ),
        [get_travel_recommendations, _parent_handoff("hotel_advisor", "ask_hotels")],
    )
    hotel = create_react_agent(
        scripted("hotel-model", reply(tools=[("ask_travel", {})], tokens=(3, 3))),
        [_parent_handoff("travel_advisor", "ask_travel")],
    )

    def call_travel(state: MessagesState) -> Command[Literal["hotel_advisor", "__end__"]]:
        return travel.invoke(state)

    def call_hotel(state: MessagesState) -> Command[Literal["travel_advisor", "__end__"]]:
        return hotel.invoke(state)

    graph = (
        StateGraph(MessagesState)
        .add_node("travel_advisor", call_travel)
        .add_node("hotel_advisor", call_hotel)
        .add_edge(START, "travel_advisor")
        .compile()
    )
    trace = traced(graph)
    # travel (tool, then hand-off) → hotel (hand-back) → travel answers: 2 handoffs, a bounce.
    assert metrics(trace, ["travel_advisor", "hotel_advisor"]) == truth(
        ["travel_advisor", "hotel_advisor", "travel_advisor"],
        2,
        True,
        {"travel_advisor": (3, 8, 8), "hotel_advisor": (1, 3, 3)},
    )
    assert [t.kind for t in trace.tool_calls] == ["tool", "handoff", "handoff"]


def test_agents_handing_off_by_command_from_their_nodes() -> None:
    """The docs' agent handoffs how-to: node functions call a model bound to transfer tools
    that never run, and return Command(goto=...) when it asks for one."""

    @tool
    def transfer_to_multiplication_expert() -> None:
        """Ask the multiplication agent for help."""

    @tool
    def transfer_to_addition_expert() -> None:
        """Ask the addition agent for help."""

    add_model = scripted(
        "add-model",
        reply("3 + 5 = 8", tools=[("transfer_to_multiplication_expert", {})], tokens=(1, 1)),
        reply("So the answer is 96.", tokens=(3, 3)),
    )
    mul_model = scripted(
        "mul-model",
        reply("8 × 12 = 96", tools=[("transfer_to_addition_expert", {})], tokens=(2, 2)),
    )

    def expert(model: Any, handoff: Any, other: str) -> Any:
        def node(state: MessagesState) -> Command:
            answer = model.bind_tools([handoff]).invoke(state["messages"])
            if not answer.tool_calls:
                return Command(goto=END, update={"messages": [answer]})
            done = {
                "role": "tool",
                "content": "Successfully transferred",
                "tool_call_id": answer.tool_calls[-1]["id"],
            }
            return Command(goto=other, update={"messages": [answer, done]})

        return node

    graph = (
        StateGraph(MessagesState)
        .add_node(
            "addition_expert",
            expert(add_model, transfer_to_multiplication_expert, "multiplication_expert"),
            destinations=("multiplication_expert", END),
        )
        .add_node(
            "multiplication_expert",
            expert(mul_model, transfer_to_addition_expert, "addition_expert"),
            destinations=("addition_expert", END),
        )
        .add_edge(START, "addition_expert")
        .compile()
    )
    trace = traced(graph)
    # addition (1, 1) → multiplication (2, 2) → addition (3, 3): a bounce between peers.
    assert metrics(trace, ["addition_expert", "multiplication_expert"]) == truth(
        ["addition_expert", "multiplication_expert", "addition_expert"],
        2,
        True,
        {"addition_expert": (2, 4, 4), "multiplication_expert": (1, 2, 2)},
    )


def test_create_agent_nodes_handing_off_by_parent_command() -> None:
    """LangChain's handoffs between agent subgraphs: create_agent(name=...) agents added under
    node names of their own, tools returning Command(goto=<node>, graph=Command.PARENT)."""

    def handoff(node: str, name: str) -> Any:
        @tool(name)
        def go(runtime: ToolRuntime) -> Command:
            """Hand the conversation over."""
            done = ToolMessage(content=f"Transferred to {node}", tool_call_id=runtime.tool_call_id)
            return Command(
                goto=node,
                update={"messages": [*runtime.state["messages"], done]},
                graph=Command.PARENT,
            )

        return go

    sales = create_agent(
        scripted(
            "sales-model",
            reply(tools=[("to_support", {})], tokens=(1, 1)),
            reply("Sold.", tokens=(3, 3)),
        ),
        [handoff("support", "to_support")],
        name="sales_agent",
    )
    support = create_agent(
        scripted("support-model", reply(tools=[("to_sales", {})], tokens=(2, 2))),
        [handoff("sales", "to_sales")],
        name="support_agent",
    )
    graph = (
        StateGraph(MessagesState)
        .add_node("sales", sales)
        .add_node("support", support)
        .add_edge(START, "sales")
        .compile()
    )
    trace = traced(graph)
    # sales_agent (1, 1) → support_agent (2, 2) → sales_agent (3, 3): a bounce between peers.
    assert metrics(trace, ["sales_agent", "support_agent"]) == truth(
        ["sales_agent", "support_agent", "sales_agent"],
        2,
        True,
        {"sales_agent": (2, 4, 4), "support_agent": (1, 2, 2)},
    )


class _Router(TypedDict):
    """Worker to route to next."""

    next: Literal["researcher", "coder", "FINISH"]


class _RoutedState(MessagesState):
    next: str


def test_structured_output_supervisor_routing_by_command() -> None:
    """The LangGraph agent-supervisor tutorial: a supervisor node picks the next worker with
    model.with_structured_output(Router) and returns Command(goto=...); each worker node runs
    an unnamed react agent and returns Command(goto="supervisor")."""
    llm = scripted(
        "sup-model",
        reply(tools=[("_Router", {"next": "researcher"})], tokens=(10, 1)),
        reply(tools=[("_Router", {"next": "coder"})], tokens=(11, 1)),
        reply(tools=[("_Router", {"next": "FINISH"})], tokens=(12, 1)),
    )
    router = llm.with_structured_output(_Router)
    research_agent = create_react_agent(scripted("res-model", reply("GDP is 1", tokens=(3, 3))), [])
    code_agent = create_react_agent(scripted("code-model", reply("Chart done", tokens=(4, 4))), [])

    def supervisor(state: _RoutedState) -> Command[Literal["researcher", "coder", "__end__"]]:
        goto = router.invoke(state["messages"])["next"]
        goto = END if goto == "FINISH" else goto
        return Command(goto=goto, update={"next": goto})

    def worker(agent: Any, name: str) -> Any:
        def node(state: _RoutedState) -> Command[Literal["supervisor"]]:
            result = agent.invoke(state)
            text = result["messages"][-1].content
            return Command(
                update={"messages": [HumanMessage(content=text, name=name)]}, goto="supervisor"
            )

        return node

    graph = (
        StateGraph(_RoutedState)
        .add_node("supervisor", supervisor)
        .add_node("researcher", worker(research_agent, "researcher"))
        .add_node("coder", worker(code_agent, "coder"))
        .add_edge(START, "supervisor")
        .compile()
    )
    # Whether this supervisor is a coordinator without being declared is left open by the
    # contract (workers return by a single-destination Command, not by an edge); declared, as
    # `coordinators: [supervisor]` in the spec does, its return trips are no bounce.
    trace = traced(graph, coordinators=["supervisor"])
    # supervisor (10, 1) → researcher (3, 3) → supervisor (11, 1) → coder (4, 4) →
    # supervisor (12, 1): 4 handoffs.
    assert metrics(trace, ["researcher", "coder"]) == truth(
        ["supervisor", "researcher", "supervisor", "coder", "supervisor"],
        4,
        False,
        {"supervisor": (3, 33, 3), "researcher": (1, 3, 3), "coder": (1, 4, 4)},
    )


class _Route(TypedDict):
    """Pick the specialist."""

    agent: Literal["billing", "tech"]


class _RouteState(MessagesState):
    route: str


def test_structured_output_router_then_peer_handoff_tools() -> None:
    """A router node picks the first specialist with with_structured_output and a
    conditional edge; the specialists (react agents) then hand off to each other with
    langgraph-swarm's handoff tools (Command.PARENT)."""
    structured = scripted(
        "router-model", reply(tools=[("_Route", {"agent": "billing"})], tokens=(9, 1))
    ).with_structured_output(_Route)

    def router(state: _RouteState) -> dict:
        return {"route": structured.invoke(state["messages"])["agent"]}

    billing = _react(
        "billing",
        scripted(
            "bill-model",
            reply(tools=[("transfer_to_tech", {})], tokens=(1, 1)),
            reply("Refunded, and tech says it is fixed.", tokens=(3, 3)),
        ),
        [swarm_handoff_tool(agent_name="tech")],
    )
    tech = _react(
        "tech",
        scripted("tech-model", reply(tools=[("transfer_to_billing", {})], tokens=(2, 2))),
        [swarm_handoff_tool(agent_name="billing")],
    )
    graph = (
        StateGraph(_RouteState)
        .add_node("router", router)
        .add_node(billing, destinations=("tech",))
        .add_node(tech, destinations=("billing",))
        .add_edge(START, "router")
        .add_conditional_edges("router", lambda s: s["route"], ["billing", "tech"])
        .compile()
    )
    trace = traced(graph)
    # router (9, 1) → billing (1, 1) → tech (2, 2) → billing (3, 3): 3 handoffs. Billing and
    # tech hand off to each other by tools; nobody returns to billing by an edge, so the
    # billing → tech → billing exchange is a specialist bounce.
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["router", "billing", "tech", "billing"],
        3,
        True,
        {"router": (1, 9, 1), "billing": (2, 4, 4), "tech": (1, 2, 2)},
    )


# -- 4. agents streamed, run in parallel, hooked, nested ------------------------------------------


def _router_graph(billing: Any, tech: Any, node_for: Any, *, is_async: bool = False) -> Any:
    """router → billing_node | tech_node → router …, the router's model naming the next."""
    router_model = scripted(
        "router-model",
        reply("billing", tokens=(9, 1)),
        reply("tech", tokens=(9, 2)),
        reply("FINISH", tokens=(9, 3)),
    )

    def route(state: MessagesState) -> dict:
        return {"messages": [router_model.invoke(state["messages"])]}

    async def aroute(state: MessagesState) -> dict:
        return {"messages": [await router_model.ainvoke(state["messages"])]}

    def pick(state: MessagesState) -> str:
        chosen = state["messages"][-1].content
        return END if chosen == "FINISH" else f"{chosen}_node"

    return (
        StateGraph(MessagesState)
        .add_node("router", aroute if is_async else route)
        .add_node("billing_node", node_for(billing))
        .add_node("tech_node", node_for(tech))
        .add_edge(START, "router")
        .add_conditional_edges("router", pick, ["billing_node", "tech_node", END])
        .add_edge("billing_node", "router")
        .add_edge("tech_node", "router")
        .compile()
    )


def _streamed(agent: Any) -> Any:
    def node(state: MessagesState) -> dict:
        last = None
        for chunk in agent.stream(state, stream_mode="values"):
            last = chunk
        return {"messages": last["messages"][-1:]}

    return node


def _streamed_tokens(agent: Any) -> Any:
    def node(state: MessagesState) -> dict:
        text = ""
        for token, meta in agent.stream(state, stream_mode="messages"):
            if meta.get("langgraph_node") == "model":
                text += token.content
        return {"messages": [{"role": "assistant", "content": text}]}

    return node


def _astreamed(agent: Any) -> Any:
    async def node(state: MessagesState) -> dict:
        last = None
        async for chunk in agent.astream(state, stream_mode="values"):
            last = chunk
        return {"messages": last["messages"][-1:]}

    return node


@pytest.mark.parametrize("mode", ["stream", "stream_messages", "astream"])
def test_agents_streamed_inside_nodes(mode: str) -> None:
    """Nodes run named create_agent agents with .stream (values or message tokens) or
    .astream; billing calls a tool."""

    @tool
    def lookup(query: str) -> str:
        """Look an invoice up."""
        return "INV-1"

    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("lookup", {"query": "x"})], tokens=(1, 1)),
            reply("Refunded.", tokens=(2, 2)),
        ),
        [lookup],
        name="billing",
    )
    tech = create_agent(scripted("tech-model", reply("Fixed.", tokens=(3, 3))), [], name="tech")
    wrap = {"stream": _streamed, "stream_messages": _streamed_tokens, "astream": _astreamed}[mode]
    graph = _router_graph(billing, tech, wrap, is_async=mode == "astream")
    trace = atraced(graph) if mode == "astream" else traced(graph)
    # router → billing (tool, answer) → router → tech → router: 4 handoffs, the router a
    # coordinator (both return to it by a fixed edge).
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["router", "billing", "router", "tech", "router"],
        4,
        False,
        {"router": (3, 27, 6), "billing": (2, 3, 3), "tech": (1, 3, 3)},
    )


class _FanState(TypedDict):
    messages: Annotated[list[Any], add_messages]


def _fan_out_graph(billing: Any, tech: Any, *, tech_usage: bool = True) -> Any:
    router_model = scripted("router-model", reply("both", tokens=(9, 1)))
    writer_model = scripted("writer-model", reply("All done.", tokens=(7, 7)))

    async def router(state: _FanState) -> dict:
        return {"messages": [await router_model.ainvoke(state["messages"])]}

    async def writer(state: _FanState) -> dict:
        return {"messages": [await writer_model.ainvoke(state["messages"])]}

    async def call_billing(state: _FanState) -> dict:
        return {"messages": (await billing.ainvoke(state))["messages"][-1:]}

    async def call_tech(state: _FanState) -> dict:
        return {"messages": (await tech.ainvoke(state))["messages"][-1:]}

    return (
        StateGraph(_FanState)
        .add_node("router", router)
        .add_node("billing", call_billing)
        .add_node("tech", call_tech)
        .add_node("writer", writer)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router", lambda s: [Send("billing", s), Send("tech", s)], ["billing", "tech"]
        )
        .add_edge("billing", "writer")
        .add_edge("tech", "writer")
        .add_edge("writer", END)
        .compile()
    )


def test_async_send_to_agents_that_call_tools() -> None:
    """An async router sends the request to two create_agent agents at once; each calls its
    own async tools (tech twice), their calls interleaving; a writer joins them."""

    @tool
    async def refund(invoice: str) -> str:
        """Refund an invoice."""
        await asyncio.sleep(0.03)
        return "refunded"

    @tool
    async def restart(device: str) -> str:
        """Restart a device."""
        await asyncio.sleep(0.01)
        return "restarted"

    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "1"})], tokens=(1, 1)),
            reply("Refunded.", tokens=(2, 2)),
            delay_s=0.02,
        ),
        [refund],
        name="billing",
    )
    tech = create_agent(
        scripted(
            "tech-model",
            reply(tools=[("restart", {"device": "a"})], tokens=(3, 3)),
            reply(tools=[("restart", {"device": "b"})], tokens=(4, 4)),
            reply("Fixed.", tokens=(5, 5)),
            delay_s=0.005,
        ),
        [restart],
        name="tech",
    )
    trace = atraced(_fan_out_graph(billing, tech))
    # router → {billing ∥ tech} → writer: 2 out and 2 back, all parallel, no bounce.
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["router", "billing", "tech", "writer"],
        4,
        False,
        {"router": (1, 9, 1), "billing": (2, 3, 3), "tech": (3, 12, 12), "writer": (1, 7, 7)},
    )
    assert all(h.parallel for h in trace.handoffs)


def test_agent_without_usage_in_a_parallel_branch() -> None:
    """The same fan-out, tech's model reporting no usage: its tokens, the request's totals
    and the cost are unknown; the others' are not."""
    billing = create_agent(
        scripted("bill-model", reply("Refunded.", tokens=(2, 2))), [], name="billing"
    )
    tech = create_agent(scripted("tech-model", reply("Fixed.")), [], name="tech")
    trace = atraced(_fan_out_graph(billing, tech))
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["router", "billing", "tech", "writer"],
        4,
        False,
        {"router": (1, 9, 1), "billing": (1, 2, 2), "tech": (1, None, None), "writer": (1, 7, 7)},
    )


def test_react_agent_with_model_hooks_calling_a_model() -> None:
    """A supervised create_react_agent with a pre_model_hook that summarises the history with
    a model of its own (the docs' summarisation hook) and a post_model_hook."""

    @tool
    def refund(invoice: str) -> str:
        """Refund an invoice."""
        return "refunded"

    summariser = scripted(
        "summary-model", reply("summary 1", tokens=(50, 5)), reply("summary 2", tokens=(60, 6))
    )

    def pre_model_hook(state: dict) -> dict:
        summary = summariser.invoke(state["messages"])
        return {"llm_input_messages": [summary, *state["messages"][-1:]]}

    def post_model_hook(state: dict) -> dict:
        return {}

    billing = _react(
        "billing",
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "1"})], tokens=(1, 1)),
            reply("Refunded.", tokens=(2, 2)),
        ),
        [refund],
        pre_model_hook=pre_model_hook,
        post_model_hook=post_model_hook,
    )
    graph = create_supervisor(
        [billing],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(3, 3)),
            reply("Done.", tokens=(4, 4)),
        ),
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph)
    # The hook's summaries are billing's steps: billing made 4 model calls, 50+1+60+2 in.
    assert metrics(trace, ["billing"]) == truth(
        ["supervisor", "billing", "supervisor"],
        2,
        False,
        {"supervisor": (2, 7, 7), "billing": (4, 113, 14)},
    )


def test_create_agent_with_a_middleware_calling_a_model() -> None:
    """A supervised create_agent whose @before_model middleware checks the input with a model
    of its own (a guardrail): the checks are billing's steps."""

    @tool
    def refund(invoice: str) -> str:
        """Refund an invoice."""
        return "refunded"

    checker = scripted("check-model", reply("ok", tokens=(40, 4)), reply("ok", tokens=(41, 4)))

    @before_model
    def guard(state: Any, runtime: Any) -> None:
        checker.invoke(state["messages"])

    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "1"})], tokens=(1, 1)),
            reply("Refunded.", tokens=(2, 2)),
        ),
        [refund],
        name="billing",
        middleware=[guard],
    )
    graph = create_supervisor(
        [billing],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(3, 3)),
            reply("Done.", tokens=(4, 4)),
        ),
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph)
    assert metrics(trace, ["billing"]) == truth(
        ["supervisor", "billing", "supervisor"],
        2,
        False,
        {"supervisor": (2, 7, 7), "billing": (4, 84, 11)},
    )


def test_nested_agents_as_tools() -> None:
    """A create_agent supervisor calls research as a tool, and research calls web as a tool."""
    web = create_agent(
        scripted("web-model", reply("The web says 42.", tokens=(1, 1))), [], name="web"
    )

    @tool
    def ask_web(query: str) -> str:
        """Search the web."""
        return _ask(web, query)

    research = create_agent(
        scripted(
            "research-model",
            reply(tools=[("ask_web", {"query": "x"})], tokens=(2, 2)),
            reply("Research: 42.", tokens=(3, 3)),
        ),
        [ask_web],
        name="research",
    )

    @tool
    def ask_research(query: str) -> str:
        """Ask the research agent."""
        return _ask(research, query)

    graph = create_agent(
        scripted(
            "sup-model",
            reply(tools=[("ask_research", {"query": "y"})], tokens=(4, 4)),
            reply("It is 42.", tokens=(5, 5)),
        ),
        [ask_research],
        name="supervisor",
    )
    trace = traced(graph)
    # supervisor → research → web → research → supervisor: 4 handoffs; research and the
    # supervisor call agents as tools (coordinators), so nothing bounces.
    assert metrics(trace, ["research", "web"]) == truth(
        ["supervisor", "research", "web", "research", "supervisor"],
        4,
        False,
        {"supervisor": (2, 9, 9), "research": (2, 5, 5), "web": (1, 1, 1)},
    )
    assert teams(trace, "supervisor > research", "supervisor > research > web") == {
        "supervisor > research": (3, 6, 6),
        "supervisor > research > web": (1, 1, 1),
    }


class _Draft(TypedDict):
    query: str
    notes: str
    answer: str


def test_subgraph_with_its_own_state_behind_a_node_function() -> None:
    """A node function maps the parent's messages to a subgraph with another state schema
    (query/notes/answer), whose plan and write nodes call models, and maps the answer back."""
    plan_model = scripted("plan-model", reply("notes", tokens=(1, 1)))
    write_model = scripted("write-model", reply("The answer.", tokens=(2, 2)))

    def plan(state: _Draft) -> dict:
        return {"notes": plan_model.invoke(state["query"]).content}

    def write(state: _Draft) -> dict:
        return {"answer": write_model.invoke(state["notes"]).content}

    research_graph = (
        StateGraph(_Draft)
        .add_node("plan", plan)
        .add_node("write", write)
        .add_edge(START, "plan")
        .add_edge("plan", "write")
        .add_edge("write", END)
        .compile()
    )
    router_model = scripted("router-model", reply("research", tokens=(9, 9)))

    def router(state: MessagesState) -> dict:
        return {"messages": [router_model.invoke(state["messages"])]}

    def research(state: MessagesState) -> dict:
        out = research_graph.invoke({"query": state["messages"][0].content})
        return {"messages": [{"role": "assistant", "content": out["answer"]}]}

    graph = (
        StateGraph(MessagesState)
        .add_node("router", router)
        .add_node("research", research)
        .add_edge(START, "router")
        .add_edge("router", "research")
        .add_edge("research", END)
        .compile()
    )
    trace = traced(graph)
    # router → plan → write; the research node runs an unnamed graph of two model-calling
    # nodes: a team "research" (rule 3 at both levels).
    assert metrics(trace, ["research", "plan", "write"]) == truth(
        ["router", "plan", "write"],
        2,
        False,
        {"router": (1, 9, 9), "plan": (1, 1, 1), "write": (1, 2, 2)},
    )
    assert teams(trace, "research", "research > plan") == {
        "research": (2, 3, 3),
        "research > plan": (1, 1, 1),
    }


def test_node_running_two_named_agents_in_turn() -> None:
    """A writing node runs a drafter agent, then a reviewer agent on its draft."""
    drafter = _react("drafter", scripted("draft-model", reply("Draft.", tokens=(1, 1))))
    reviewer = create_agent(
        scripted("review-model", reply("Reviewed.", tokens=(2, 2))), [], name="reviewer"
    )
    router_model = scripted("router-model", reply("go", tokens=(9, 9)), reply("end", tokens=(8, 8)))

    def router(state: MessagesState) -> dict:
        return {"messages": [router_model.invoke(state["messages"])]}

    def writing(state: MessagesState) -> dict:
        draft = drafter.invoke(state)
        review = reviewer.invoke({"messages": draft["messages"]})
        return {"messages": review["messages"][-1:]}

    graph = (
        StateGraph(MessagesState)
        .add_node("router", router)
        .add_node("writing", writing)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router", lambda s: "writing" if s["messages"][-1].content == "go" else END
        )
        .add_edge("writing", "router")
        .compile()
    )
    trace = traced(graph)
    # router → drafter → reviewer → router: 3 handoffs (whether "writing" is a team around
    # the two is left open by the contract, so only leaf figures are held here).
    assert metrics(trace, ["drafter", "reviewer"]) == truth(
        ["router", "drafter", "reviewer", "router"],
        3,
        False,
        {"router": (2, 17, 17), "drafter": (1, 1, 1), "reviewer": (1, 2, 2)},
    )


# -- 5. parallel tool calls run by one ToolNode task ----------------------------------------------


def _tool_node_supervisor(calls: list[str], billing_replies: int) -> Any:
    """The LangGraph docs' hand-built agent: an "agent" node and a ToolNode "tools" node
    joined by tools_condition, compiled as "supervisor"; its tools run named react agents.
    All tool calls of one model turn run inside the one "tools" task."""
    billing = _react(
        "billing",
        scripted(
            "bill-model", *[reply(f"refund {i}", tokens=(3, 1)) for i in range(billing_replies)]
        ),
    )
    tech = _react("tech", scripted("tech-model", reply("reset", tokens=(4, 1))))

    @tool
    def ask_billing(question: str) -> str:
        """Ask the billing agent."""
        return _ask(billing, question)

    @tool
    def ask_tech(question: str) -> str:
        """Ask the tech agent."""
        return _ask(tech, question)

    model = scripted(
        "sup-model",
        reply(tools=[(name, {"question": name}) for name in calls], tokens=(9, 2)),
        reply("Refunded and reset.", tokens=(12, 4)),
    )

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    return (
        StateGraph(MessagesState)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([ask_billing, ask_tech]))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition)
        .add_edge("tools", "agent")
        .compile(name="supervisor")
    )


def test_parallel_agent_tools_run_by_one_tool_node() -> None:
    graph = _tool_node_supervisor(["ask_billing", "ask_tech"], 1)
    trace = traced(graph, config={"max_concurrency": 1})
    # One model turn asked both agents at once: parallel tool calls are parallel branches
    # at any concurrency, as create_agent's Send per tool call gives: 2 out and 2 back.
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["supervisor", "billing", "tech", "supervisor"],
        4,
        False,
        {"supervisor": (2, 21, 6), "billing": (1, 3, 1), "tech": (1, 4, 1)},
    )


def test_parallel_agent_tools_run_by_one_tool_node_never_bounce() -> None:
    graph = _tool_node_supervisor(["ask_billing", "ask_tech", "ask_billing"], 2)
    trace = traced(graph, config={"max_concurrency": 1})
    found = metrics(trace, ["billing", "tech"])
    assert found["ping_pong"] is False
    assert ("billing", "tech") not in {(s, t) for s, t, _ in hops(trace)}


def test_parallel_agents_in_one_node_with_asyncio_gather() -> None:
    """One node runs two named agents at once with asyncio.gather (their calls overlap)."""
    billing = create_agent(
        scripted("bill-model", reply("Refunded.", tokens=(3, 3)), delay_s=0.02), [], name="billing"
    )
    tech = create_agent(
        scripted("tech-model", reply("Reset.", tokens=(4, 4)), delay_s=0.01), [], name="tech"
    )
    router_model = scripted("router-model", reply("go", tokens=(9, 9)), reply("end", tokens=(8, 8)))

    async def router(state: MessagesState) -> dict:
        return {"messages": [await router_model.ainvoke(state["messages"])]}

    async def experts(state: MessagesState) -> dict:
        b, t = await asyncio.gather(billing.ainvoke(state), tech.ainvoke(state))
        return {"messages": [b["messages"][-1], t["messages"][-1]]}

    graph = (
        StateGraph(MessagesState)
        .add_node("router", router)
        .add_node("experts", experts)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router", lambda s: "experts" if s["messages"][-1].content == "go" else END
        )
        .add_edge("experts", "router")
        .compile()
    )
    trace = atraced(graph)
    assert metrics(trace, ["billing", "tech"]) == truth(
        ["router", "billing", "tech", "router"],
        4,
        False,
        {"router": (2, 17, 17), "billing": (1, 3, 3), "tech": (1, 4, 4)},
    )


# -- 6. retries -----------------------------------------------------------------------------------


class _InvalidRouteError(Exception):
    pass


def _retried_router_graph(router_model: Any, retry_on: Any) -> Any:
    billing = _react("billing", scripted("bill-model", reply("Refunded.", tokens=(2, 2))))

    def router(state: MessagesState) -> dict:
        answer = router_model.invoke(state["messages"])
        if answer.content != "billing":
            raise _InvalidRouteError(answer.content)
        return {"messages": [answer]}

    return (
        StateGraph(MessagesState)
        .add_node(
            "router", router, retry_policy=RetryPolicy(initial_interval=0.01, retry_on=retry_on)
        )
        .add_node("billing", billing)
        .add_edge(START, "router")
        .add_edge("router", "billing")
        .add_edge("billing", END)
        .compile()
    )


def test_node_retry_after_an_invalid_route() -> None:
    """RetryPolicy on a router node whose model names an unknown route the first time: the
    node raises, LangGraph runs it again, the model answers "billing"."""
    model = scripted(
        "router-model", reply("bilingg", tokens=(9, 1)), reply("billing", tokens=(9, 2))
    )
    trace = traced(_retried_router_graph(model, _InvalidRouteError))
    # Both router calls answered (both count): router (9, 1), router (9, 2), billing (2, 2).
    # The router ran once more, not in parallel: router → billing, 1 handoff.
    assert metrics(trace, ["billing"]) == truth(
        ["router", "billing"], 1, False, {"router": (2, 18, 3), "billing": (1, 2, 2)}
    )


def test_node_retry_after_a_model_error() -> None:
    """RetryPolicy(retry_on=ConnectionError) on a router node whose first model call raises."""
    model = scripted(
        "router-model", ConnectionError("reset by peer"), reply("billing", tokens=(9, 1))
    )
    trace = traced(_retried_router_graph(model, ConnectionError))
    # The first call raised: no reply, no usage, nothing the model logged. The retry's call
    # (9, 1) and billing's (2, 2) are the request's calls; router → billing is 1 handoff.
    assert metrics(trace, ["billing"]) == truth(
        ["router", "billing"], 1, False, {"router": (1, 9, 1), "billing": (1, 2, 2)}
    )


def test_model_retry_middleware_after_a_model_error() -> None:
    """A supervised create_agent with ModelRetryMiddleware whose first model call raises."""
    billing = create_agent(
        scripted("bill-model", ConnectionError("reset by peer"), reply("Refunded.", tokens=(2, 2))),
        [],
        name="billing",
        middleware=[
            ModelRetryMiddleware(max_retries=2, initial_delay=0.01, retry_on=(ConnectionError,))
        ],
    )
    graph = create_supervisor(
        [billing],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(3, 3)),
            reply("Done.", tokens=(4, 4)),
        ),
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph)
    # supervisor (3, 3) → billing: its first call raised (nothing logged), its retry (2, 2)
    # answered → supervisor (4, 4).
    assert metrics(trace, ["billing"]) == truth(
        ["supervisor", "billing", "supervisor"],
        2,
        False,
        {"supervisor": (2, 7, 7), "billing": (1, 2, 2)},
    )
