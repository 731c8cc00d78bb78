"""Forms whose requests fail or pause part way, and forms whose tool calls fail: a
langgraph-supervisor that sends a request to one agent until the recursion limit, a swarm of
``create_react_agent`` peers doing the same, a tool that raises with no error handling, a
model that raises after the handoffs, a specialist still running at the timeout,
``interrupt()`` inside a sub-agent's tool, ``HumanInTheLoopMiddleware`` in a sub-agent,
a deep agent with ``interrupt_on``, tools that answer ``status="error"`` themselves, a
``ToolStrategy`` answer that fails validation and is given again, parallel tool calls of
which one fails, and a graph whose last node loses the connection once.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal

from deepagents import SubAgent, create_deep_agent
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode
from langgraph.types import Command, interrupt
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm
from pydantic import BaseModel

from forms.deep import delegating
from forms.model import form_model
from forms.policy import (
    GREETING,
    RESULTS,
    call,
    called,
    needed,
    question,
    results,
    specialist,
    supervisor,
    transfer,
)
from forms.stopped import RUNAWAY, runaway
from forms.tools import TOOL_OF, lookup_invoice

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

AGENTS = ("billing", "tech")
BROKEN = "broken"  # a request on which the tech side breaks (its tool or its model)
SLOW = "slowly"  # a request on which the tech model takes longer than the timeout
TECH_DOWN = "diagnostics backend crashed"
PROVIDER_DOWN = "provider overloaded (529)"


def _react(graph: str, name: str, policy: Any, tools: Any, **model: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(form_model(graph, name, policy, **model), tools, name=name)


def _supervise(graph: str, members: list[Any], policy: Any, **compile_kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            members,
            model=form_model(graph, "supervisor", policy, large=True),
            supervisor_name="supervisor",
        )
    return workflow.compile(**compile_kw)


# -- a supervisor that sends one request to billing until the recursion limit -------------


def looping_supervisor_policy(messages: list[BaseMessage]) -> AIMessage:
    """The supervisor on a "forever" request hands it to billing every time."""
    if RUNAWAY in question(messages).lower():
        return call(transfer("billing"))
    return supervisor(AGENTS)(messages)


def build_looping_supervisor(graph: str) -> Any:
    members = [_react(graph, n, specialist(n), [TOOL_OF[n]]) for n in AGENTS]
    return _supervise(graph, members, looping_supervisor_policy)


# -- a swarm of create_react_agent peers handing a request back and forth -----------------


def build_react_runaway_swarm(graph: str) -> Any:
    agents = []
    for name in AGENTS:
        [other] = [p for p in AGENTS if p != name]
        agents.append(
            _react(
                graph,
                name,
                runaway(name, other),
                [TOOL_OF[name], create_handoff_tool(agent_name=other)],
            )
        )
    return create_swarm(agents, default_active_agent="billing").compile()


# -- a tool that raises, nothing handling it -----------------------------------------------


@tool("run_diagnostics")
def crashing_diagnostics(app: str) -> str:
    """Diagnose an app crash and fix it."""
    raise RuntimeError(TECH_DOWN)


def build_crashing_supervisor(graph: str) -> Any:
    """tech's ``ToolNode`` has no error handling: its tool's error ends the request."""
    billing = _react(graph, "billing", specialist("billing"), [TOOL_OF["billing"]])
    tech = _react(
        graph,
        "tech",
        specialist("tech"),
        ToolNode([crashing_diagnostics], handle_tool_errors=False),
    )
    return _supervise(graph, [billing, tech], supervisor(AGENTS))


# -- a model that raises after the handoffs -------------------------------------------------


def failing_provider(name: str) -> Any:
    ordinary = specialist(name)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if BROKEN in question(messages).lower():
            raise RuntimeError(PROVIDER_DOWN)
        return ordinary(messages)

    return policy


def build_provider_error_supervisor(graph: str) -> Any:
    billing = _react(graph, "billing", specialist("billing"), [TOOL_OF["billing"]])
    tech = _react(graph, "tech", failing_provider("tech"), [TOOL_OF["tech"]])
    return _supervise(graph, [billing, tech], supervisor(AGENTS))


# -- a specialist still running when the request's time is up -------------------------------


def build_slow_supervisor(graph: str) -> Any:
    billing = _react(graph, "billing", specialist("billing"), [TOOL_OF["billing"]])
    tech = _react(
        graph,
        "tech",
        specialist("tech"),
        [TOOL_OF["tech"]],
        delay_for=lambda q: 30.0 if SLOW in q.lower() else 0.0,
    )
    return _supervise(graph, [billing, tech], supervisor(AGENTS))


# -- interrupt() inside a sub-agent's tool ----------------------------------------------------


@tool("lookup_invoice")
def approved_lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice and refund it once a human approves."""
    answer = interrupt({"approve_refund": invoice_id})
    return RESULTS["billing"] if answer else "refund declined"


def build_tool_interrupt_supervisor(graph: str) -> Any:
    billing = _react(graph, "billing", specialist("billing"), [approved_lookup_invoice])
    tech = _react(graph, "tech", specialist("tech"), [TOOL_OF["tech"]])
    return _supervise(graph, [billing, tech], supervisor(AGENTS), checkpointer=InMemorySaver())


# -- HumanInTheLoopMiddleware in a supervisor's sub-agent -----------------------------------


def build_hitl_sub_agent_supervisor(graph: str) -> Any:
    billing = create_agent(
        form_model(graph, "billing", specialist("billing")),
        [lookup_invoice],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"lookup_invoice": True})],
        name="billing",
    )
    tech = _react(graph, "tech", specialist("tech"), [TOOL_OF["tech"]])
    return _supervise(graph, [billing, tech], supervisor(AGENTS), checkpointer=InMemorySaver())


# -- a deep agent whose sub-agent's tool needs approval (interrupt_on) ----------------------


def build_deep_interrupting(graph: str, main: str) -> Any:
    subagents: list[Any] = [
        SubAgent(
            name=name,
            description=f"Handles {name} questions.",
            system_prompt=f"You are the {name} specialist.",
            tools=[TOOL_OF[name]],
            model=form_model(graph, name, specialist(name)),
            **({"interrupt_on": {"lookup_invoice": True}} if name == "billing" else {}),
        )
        for name in AGENTS
    ]
    return create_deep_agent(
        model=form_model(graph, main, delegating(AGENTS), large=True),
        subagents=subagents,
        system_prompt="Answer the customer; hand billing and tech parts to their agents.",
        checkpointer=InMemorySaver(),
    )


# -- a tool that answers status="error" itself, and the model's second try -----------------


@tool("lookup_invoice")
def checked_lookup_invoice(
    invoice_id: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage | str:
    """Look up an invoice by its full id (INV-...) and refund it."""
    if not invoice_id.startswith("INV-"):
        return ToolMessage(
            f"unknown invoice {invoice_id!r}", tool_call_id=tool_call_id, status="error"
        )
    return RESULTS["billing"]


def second_try_policy(messages: list[BaseMessage]) -> AIMessage:
    """Asks for invoice ``42`` first, then (told it is unknown) for ``INV-42``."""
    if "billing" not in needed(question(messages)):
        return AIMessage(GREETING)
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    if not answers:
        return call("lookup_invoice", {"invoice_id": "42"})
    if all(m.status == "error" for m in answers):
        return call("lookup_invoice", {"invoice_id": "INV-42"})
    return AIMessage("billing done: " + " ".join(results(messages)))


def error_answered(name: str, args: dict[str, Any]) -> bool:
    return name == "lookup_invoice" and not str(args.get("invoice_id", "")).startswith("INV-")


second_try_agent = create_agent(
    form_model("second_try_agent", "billing", second_try_policy),
    [checked_lookup_invoice],
    name="billing",
)


# -- ToolStrategy: an answer that fails validation, then the model's corrected one ----------


class Answer(BaseModel):
    summary: str
    domains: list[Literal["billing", "tech"]]


def revalidated_policy(messages: list[BaseMessage]) -> AIMessage:
    """Each domain's tool, then an ``Answer`` naming a domain the schema refuses; told so
    (ToolStrategy's error message), the ``Answer`` again, valid."""
    want = [d for d in needed(question(messages)) if d in AGENTS]
    for domain in want:
        name, args = {"billing": ("lookup_invoice", {"invoice_id": "INV-42"})}.get(
            domain, ("run_diagnostics", {"app": "mobile"})
        )
        if not called(messages, name):
            return call(name, args)
    summary = " ".join(results(messages)) or GREETING
    refused = any(isinstance(m, ToolMessage) and m.name == "Answer" for m in messages)
    domains = want if refused else [*want, "sales"]
    return AIMessage(
        "",
        tool_calls=[
            {"name": "Answer", "args": {"summary": summary, "domains": domains}, "id": None}
        ],
    )


def answer_text(calls: Any) -> str:
    """The structured answer's summary is the answer (the last call's Answer arguments)."""
    import json

    for c in reversed(list(calls)):
        for name, args in c.tools:
            if name == "Answer":
                return str(json.loads(args)["summary"])
    return ""


revalidated_agent = create_agent(
    form_model("revalidated_agent", "support", revalidated_policy),
    [TOOL_OF[d] for d in AGENTS],
    response_format=ToolStrategy(Answer),
    name="support",
)


# -- parallel tool calls, one of which fails ------------------------------------------------


def parallel_policy(messages: list[BaseMessage]) -> AIMessage:
    """Both domains' tools in one turn, then the answer."""
    want = [d for d in needed(question(messages)) if d in AGENTS]
    if not want:
        return AIMessage(GREETING)
    if not any(isinstance(m, ToolMessage) for m in messages):
        work = {"billing": ("lookup_invoice", {"invoice_id": "INV-42"})}
        work["tech"] = ("run_diagnostics", {"app": "mobile"})
        calls = [{"name": work[d][0], "args": work[d][1], "id": None} for d in want]
        return AIMessage("", tool_calls=calls)
    found = results(messages)
    if "tech" in want and RESULTS["tech"] not in found:
        found.append("Diagnostics are unavailable right now.")
    return AIMessage(" ".join(found))


def parallel_fails(name: str, args: dict[str, Any]) -> bool:
    return name == "run_diagnostics"


parallel_failing_agent = _react(
    "parallel_failing_agent",
    "support",
    parallel_policy,
    ToolNode([lookup_invoice, crashing_diagnostics], handle_tool_errors=True),
)


# -- a graph whose last node loses the connection once per request --------------------------

LOST_ONCE: set[str] = set()


def build_flaky_graph(graph: str) -> Any:
    """``triage`` routes with ``Command(goto=...)`` to a react specialist node, which goes on
    to ``deliver``; ``deliver`` raises ConnectionError the first time it sees a request."""
    triage_model = form_model(graph, "triage", _triage_policy, large=True)
    specialists = {n: _react(graph, n, specialist(n), [TOOL_OF[n]]) for n in AGENTS}

    def triage(state: MessagesState) -> Command[Literal["billing", "tech", "deliver"]]:
        reply = triage_model.invoke(state["messages"])
        text = reply.content if isinstance(reply.content, str) else ""
        goto = text.removeprefix("ROUTE: ") if text.startswith("ROUTE: ") else "deliver"
        return Command(goto=goto, update={"messages": [reply]})

    def deliver(state: MessagesState) -> dict[str, Any]:
        asked = question(state["messages"])
        if asked not in LOST_ONCE:
            LOST_ONCE.add(asked)
            raise ConnectionError("connection reset by peer")
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage)
    for name, agent in specialists.items():
        builder.add_node(name, agent)
        builder.add_edge(name, "deliver")
    builder.add_node("deliver", deliver)
    builder.add_edge(START, "triage")
    builder.add_edge("deliver", END)
    return builder.compile()


def _triage_policy(messages: list[BaseMessage]) -> AIMessage:
    want = [d for d in needed(question(messages)) if d in AGENTS]
    return AIMessage(f"ROUTE: {want[0]}" if want else GREETING)


looping_supervisor = build_looping_supervisor("looping_supervisor")
react_runaway_swarm = build_react_runaway_swarm("react_runaway_swarm")
crashing_supervisor = build_crashing_supervisor("crashing_supervisor")
provider_error_supervisor = build_provider_error_supervisor("provider_error_supervisor")
slow_supervisor = build_slow_supervisor("slow_supervisor")
tool_interrupt_supervisor = build_tool_interrupt_supervisor("tool_interrupt_supervisor")
hitl_sub_agent_supervisor = build_hitl_sub_agent_supervisor("hitl_sub_agent_supervisor")
deep_interrupting = build_deep_interrupting("deep_interrupting", "deep_interrupting")
flaky_graph = build_flaky_graph("flaky_graph")


# -- a router answering with_structured_output(method="function_calling", include_raw=True) --


class Route(BaseModel):
    """The worker to route to next, or FINISH."""

    next: Literal["billing", "tech", "FINISH"]


def build_raw_router(graph: str) -> Any:
    """LangGraph's supervisor tutorial with the router's raw reply kept: the supervisor node
    reads ``result["parsed"]``; each worker is a react agent whose tool may fail, under
    ``ToolNode(handle_tool_errors=True)``, and which tries again."""
    from forms.work import router_policy, strict_lookup_invoice

    llm = form_model(graph, "supervisor", _route_policy(router_policy), large=True)
    router = llm.with_structured_output(Route, method="function_calling", include_raw=True)

    def supervise(state: MessagesState) -> Command[Literal["billing", "tech", "__end__"]]:
        goto = router.invoke(state["messages"])["parsed"].next
        return Command(goto=END if goto == "FINISH" else goto)

    tools = {"billing": strict_lookup_invoice, "tech": TOOL_OF["tech"]}

    def worker(name: str) -> Any:
        agent = _react(
            graph, name, _second_try(name), ToolNode([tools[name]], handle_tool_errors=True)
        )

        def node(state: MessagesState) -> Command[Literal["supervisor"]]:
            result = agent.invoke(state)
            return Command(update={"messages": result["messages"][-1:]}, goto="supervisor")

        return node

    builder = StateGraph(MessagesState)
    builder.add_node("supervisor", supervise)
    for name in AGENTS:
        builder.add_node(name, worker(name))
    builder.add_edge(START, "supervisor")
    return builder.compile()


def _route_policy(policy: Any) -> Any:
    """The tutorial's router policy with its call named after the ``Route`` schema."""

    def route(messages: list[BaseMessage]) -> AIMessage:
        reply = policy(messages)
        [chosen] = reply.tool_calls
        return call("Route", chosen["args"])

    return route


def _second_try(name: str) -> Any:
    """billing asks for invoice ``42`` first (refused by its strict tool), then ``INV-42``."""
    ordinary = specialist(name)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if name == "billing" and "billing" in needed(question(messages)):
            mine = [m for m in messages if isinstance(m, ToolMessage)]
            if not mine:
                return call("lookup_invoice", {"invoice_id": "42"})
            if all(m.status == "error" for m in mine) and len(mine) < 2:
                return call("lookup_invoice", {"invoice_id": "INV-42"})
        return ordinary(messages)

    return policy


def raw_router_fails(name: str, args: dict[str, Any]) -> bool:
    return name == "lookup_invoice" and not str(args.get("invoice_id", "")).startswith("INV-")


# -- the docs' network: handoff tools returning Command(graph=Command.PARENT) ----------------


def parent_handoff(agent: str) -> Any:
    """The LangGraph docs' custom handoff tool: a ToolMessage and ``Command(goto=agent,
    graph=Command.PARENT)`` from inside the agent's own graph."""

    @tool(f"transfer_to_{agent}")
    def handoff(
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        """Hand the conversation to another agent."""
        done = ToolMessage(f"Transferred to {agent}", tool_call_id=tool_call_id)
        update = {"messages": [*state["messages"], done]}
        return Command(goto=agent, graph=Command.PARENT, update=update)

    return handoff


def build_parent_command_network(graph: str) -> Any:
    """Two react agents as nodes of a parent graph, each with a handoff tool to the other;
    tech's provider fails on a "broken" request (after billing handed it over)."""
    builder = StateGraph(MessagesState)
    for name in AGENTS:
        [other] = [p for p in AGENTS if p != name]
        policy = specialist(name, peers=[other])
        if name == "tech":
            policy = _fail_on_broken(policy)
        agent = _react(graph, name, policy, [TOOL_OF[name], parent_handoff(other)])
        builder.add_node(name, agent, destinations=(other, END))
    builder.add_edge(START, "billing")
    return builder.compile()


def _fail_on_broken(policy: Any) -> Any:
    def failing(messages: list[BaseMessage]) -> AIMessage:
        if BROKEN in question(messages).lower():
            raise RuntimeError(PROVIDER_DOWN)
        return policy(messages)

    return failing


# -- a sub-agent looping on its own tool until the recursion limit --------------------------


def looping_tool_user(name: str) -> Any:
    """On a "forever" request the agent calls its tool again and again."""
    ordinary = specialist(name)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if RUNAWAY in question(messages).lower():
            return call("lookup_invoice", {"invoice_id": "INV-42"})
        return ordinary(messages)

    return policy


def build_tool_loop_supervisor(graph: str) -> Any:
    billing = _react(graph, "billing", looping_tool_user("billing"), [TOOL_OF["billing"]])
    tech = _react(graph, "tech", specialist("tech"), [TOOL_OF["tech"]])
    return _supervise(graph, [billing, tech], supervisor(AGENTS))


# -- interrupt() in a node of a subgraph ------------------------------------------------------


def build_subgraph_interrupt(graph: str) -> Any:
    """A parent graph whose ``billing`` node is a compiled subgraph: ``work`` (a model) then
    ``confirm``, which calls ``interrupt()`` when the request asks for approval; the parent
    (with a checkpointer) starts at ``triage``."""
    triage_model = form_model(graph, "triage", _triage_policy, large=True)
    # the subgraph's model node is an agent of the team the named subgraph is (as the nodes of
    # LangGraph's hierarchical teams are): it logs as ``work``
    billing_model = form_model(graph, "work", specialist("billing", use_tool=False))

    def work(state: MessagesState) -> dict[str, Any]:
        return {"messages": [billing_model.invoke(state["messages"])]}

    def confirm(state: MessagesState) -> dict[str, Any]:
        from forms.stopped import APPROVAL

        if APPROVAL in question(state["messages"]).lower():
            interrupt({"confirm": "refund INV-42"})
        return {}

    sub = StateGraph(MessagesState)
    sub.add_node("work", work)
    sub.add_node("confirm", confirm)
    sub.add_edge(START, "work")
    sub.add_edge("work", "confirm")
    sub.add_edge("confirm", END)

    def triage(state: MessagesState) -> Command[Literal["billing", "__end__"]]:
        reply = triage_model.invoke(state["messages"])
        text = reply.content if isinstance(reply.content, str) else ""
        goto = "billing" if text.startswith("ROUTE: billing") else END
        return Command(goto=goto, update={"messages": [reply]})

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage)
    builder.add_node("billing", sub.compile(name="billing"))
    builder.add_edge(START, "triage")
    builder.add_edge("billing", END)
    return builder.compile(checkpointer=InMemorySaver())


raw_router = build_raw_router("raw_router")
parent_command_network = build_parent_command_network("parent_command_network")
tool_loop_supervisor = build_tool_loop_supervisor("tool_loop_supervisor")
subgraph_interrupt = build_subgraph_interrupt("subgraph_interrupt")


# -- a fan-out in which one branch raises while the other is still running ------------------


def build_parallel_crash_supervisor(graph: str) -> Any:
    """langgraph-supervisor with ``parallel_tool_calls=True``: both specialists at once;
    tech's tool raises (nothing handles it) while billing's slower model is still running."""
    billing = _react(graph, "billing", specialist("billing"), [TOOL_OF["billing"]], delay_s=1.0)
    tech = _react(
        graph,
        "tech",
        specialist("tech"),
        ToolNode([crashing_diagnostics], handle_tool_errors=False),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            [billing, tech],
            model=form_model(graph, "supervisor", supervisor(AGENTS, parallel=True), large=True),
            supervisor_name="supervisor",
            parallel_tool_calls=True,
        )
    return workflow.compile()


# -- a model that fails over to a fallback after the handoff --------------------------------


def build_fallback_supervisor(graph: str) -> Any:
    """tech's model is ``primary.with_fallbacks([backup])``; the primary's provider fails on a
    "broken" request and the backup answers."""
    primary = form_model(graph, "tech", failing_provider("tech"))
    backup = form_model(graph, "tech", specialist("tech"))
    tech_model = primary.bind_tools([TOOL_OF["tech"]]).with_fallbacks([backup])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tech = create_react_agent(tech_model, [TOOL_OF["tech"]], name="tech")
    billing = _react(graph, "billing", specialist("billing"), [TOOL_OF["billing"]])
    return _supervise(graph, [billing, tech], supervisor(AGENTS))


parallel_crash_supervisor = build_parallel_crash_supervisor("parallel_crash_supervisor")
fallback_supervisor = build_fallback_supervisor("fallback_supervisor")
