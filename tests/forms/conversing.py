"""Conversation forms: graphs driven turn by turn, their models acting on the latest user
message and on what happened since it.

- ``swarm``: a langgraph-swarm of billing, account and tech (``create_agent`` peers with
  handoff tools) compiled with a checkpointer: a follow-up starts at the active agent,
  which hands it on mid-conversation when it is another agent's;
- ``supervisor``: a langgraph-supervisor graph over the same specialists, with a
  checkpointer: every turn is routed again;
- ``desk``: one ``create_agent`` agent with a checkpointer whose ``cancel_subscription``
  tool asks the customer first through ``interrupt()``;
- ``own_history``: a plain function keeping each thread's messages and active agent itself,
  around a swarm compiled without a checkpointer;
- ``router``: a ``StateGraph`` of ``Command`` nodes without a checkpointer (triage, then one
  specialist): agenteval sends it the history.

Each model is a :class:`forms.model.FormModel`, so every call is in :data:`forms.model.LOG`;
:mod:`forms.conversation_truth` reads the truth per turn and per conversation from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

from forms.model import Policy, form_model, text_of
from forms.policy import GREETING, RESULTS, TOOLS, call, called, done, needed, results, transfer
from forms.tools import TOOL_OF

SPECIALISTS = ("billing", "account", "tech")
CANCEL = "cancel_subscription"  # the tool that stops at interrupt() until the customer answers
CANCELLED, KEPT = "cancel-result: subscription cancelled.", "cancel-result: subscription kept."


def latest(messages: Sequence[BaseMessage]) -> tuple[str, list[BaseMessage]]:
    """The latest user message's text and the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return text_of(messages[index]), list(messages[index + 1 :])
    return "", list(messages)


def peer(name: str, peers: Sequence[str]) -> Policy:
    """A swarm peer: does its part of the latest request (with its tool), hands on a part of
    a peer's that is still open, else closes with what was found since the request; a
    request naming no part gets the greeting from whoever is active."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        request, since = latest(messages)
        want = needed(request)
        cancelling = "cancel" in request.lower()
        if cancelling and "account" not in want:  # a cancellation is account's part
            want.append("account")
        tool_name, args = TOOLS[name]
        if name == "account" and cancelling and not called(since, CANCEL):
            return call(CANCEL)
        if name in want and not cancelling and not called(since, tool_name):
            return call(tool_name, args)
        for other in want:
            if other != name and other in peers and not done(since, other):
                return call(transfer(other))
        if not want:
            return AIMessage(GREETING)
        return AIMessage(f"{name} done: " + " ".join(results(since)))

    return policy


def worker(name: str) -> Policy:
    """A supervised specialist: its tool, then its result."""
    return peer(name, ())


def boss(agents: Sequence[str]) -> Policy:
    """A supervisor: hands each open part of the latest request to its agent, one at a
    time, then sums up what was found since the request."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        request, since = latest(messages)
        want = [d for d in needed(request) if d in agents]
        if not want:
            return AIMessage(GREETING)
        still = [d for d in want if not done(since, d)]
        if still:
            return call(transfer(still[0]))
        return AIMessage("Summary: " + " ".join(results(since)))

    return policy


def desk_policy(messages: list[BaseMessage]) -> AIMessage:
    """One agent: cancels (asking first) or updates the email, then says what came of it."""
    request, since = latest(messages)
    lowered = request.lower()
    if "cancel" in lowered and not called(since, CANCEL):
        return call(CANCEL)
    if "account" in needed(request) and not called(since, "update_profile"):
        return call(*TOOLS["account"])
    found = [text_of(m) for m in since if m.type == "tool"]
    if not found:
        return AIMessage(GREETING)
    return AIMessage("desk done: " + " ".join(found))


@tool
def cancel_subscription() -> str:
    """Cancel the customer's subscription, once they confirm."""
    answer = interrupt({"question": "Cancel the subscription?", "options": ["yes", "no"]})
    return CANCELLED if str(answer).strip().lower() == "yes" else KEPT


def build_swarm(graph: str, *, checkpointer: Any = None) -> Any:
    agents = []
    for name in SPECIALISTS:
        others = [p for p in SPECIALISTS if p != name]
        agents.append(
            create_agent(
                form_model(graph, name, peer(name, others)),
                [
                    TOOL_OF[name],
                    *([cancel_subscription] if name == "account" else []),
                    *(create_handoff_tool(agent_name=o) for o in others),
                ],
                system_prompt=f"You are {name}; hand other parts to your peers.",
                name=name,
            )
        )
    return create_swarm(agents, default_active_agent="billing").compile(checkpointer=checkpointer)


def build_supervisor(graph: str) -> Any:
    agents = [
        create_agent(
            form_model(graph, name, worker(name)),
            [TOOL_OF[name]],
            system_prompt=f"You are {name}.",
            name=name,
        )
        for name in SPECIALISTS
    ]
    model = form_model(graph, "supervisor", boss(SPECIALISTS), large=True)
    workflow = create_supervisor(agents, model=model, supervisor_name="supervisor")
    return workflow.compile(checkpointer=InMemorySaver())


def build_desk(graph: str) -> Any:
    return create_agent(
        form_model(graph, "desk", desk_policy),
        [cancel_subscription, TOOL_OF["account"]],
        system_prompt="You are the service desk.",
        name="desk",
        checkpointer=InMemorySaver(),
    )


def build_router(graph: str) -> Any:
    """``triage`` routes the latest request to the specialist of its first part (or greets
    and ends); the specialist answers and the graph ends."""
    triage_model = form_model(graph, "triage", _triage, large=True)

    def triage(state: MessagesState) -> Command:
        reply = triage_model.invoke(state["messages"])
        text = text_of(reply)
        goto = text.removeprefix("ROUTE: ") if text.startswith("ROUTE: ") else END
        return Command(goto=goto, update={"messages": [reply]})

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage, destinations=(*SPECIALISTS, END))
    for name in SPECIALISTS:
        builder.add_node(name, _answering(form_model(graph, name, _answer(name))))
        builder.add_edge(name, END)
    builder.add_edge(START, "triage")
    return builder.compile()


def _triage(messages: list[BaseMessage]) -> AIMessage:
    want = [d for d in needed(latest(messages)[0]) if d in SPECIALISTS]
    return AIMessage(f"ROUTE: {want[0]}" if want else GREETING)


def _answer(name: str) -> Policy:
    return lambda messages: AIMessage(f"{name} done: {RESULTS[name]}")


def _answering(model: Any) -> Any:
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return node


swarm = build_swarm("conv_swarm", checkpointer=InMemorySaver())
supervisor = build_supervisor("conv_supervisor")
desk = build_desk("conv_desk")
router = build_router("conv_router")

_inner_swarm = build_swarm("conv_own_history")
OWN_THREADS: dict[str, dict[str, Any]] = {}  # thread_id -> the messages and active agent kept
SEEN: list[dict[str, Any]] = []  # what own_history was given, turn by turn


async def own_history(inputs: dict[str, Any]) -> dict[str, Any]:
    """A function target keeping its own history: each thread's messages and active agent,
    sent back to a swarm that has no checkpointer."""
    SEEN.append({key: value for key, value in inputs.items()})
    kept = OWN_THREADS.setdefault(inputs["thread_id"], {"messages": [], "active_agent": "billing"})
    state = await _inner_swarm.ainvoke(
        {
            "messages": [*kept["messages"], HumanMessage(inputs["question"])],
            "active_agent": kept["active_agent"],
        }
    )
    kept["messages"], kept["active_agent"] = state["messages"], state["active_agent"]
    return {"final_response": text_of(state["messages"][-1])}


def customer(transcript: list[dict[str, Any]], *, inputs: dict[str, Any], turn: int) -> str | None:
    """A scripted simulated user that reads the answers: it asks the row's ``plan`` in
    order, thanks the agent once the plan is done, and is done when it is greeted back."""
    plan = list(inputs["plan"])
    if turn > 1 and GREETING in str(transcript[-1]["content"]):
        return None
    return plan[turn - 1] if turn <= len(plan) else "Thanks!"
