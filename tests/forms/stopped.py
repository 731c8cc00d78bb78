"""Forms whose requests end without an answer: a swarm whose peers hand a request back and
forth until LangGraph's recursion limit, a ``StateGraph`` whose node calls ``interrupt()``,
and a ``create_agent`` whose tool needs a human's approval (``HumanInTheLoopMiddleware``),
both under an ``InMemorySaver`` checkpointer.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt
from langgraph_swarm import create_handoff_tool, create_swarm

from forms.model import Policy, form_model
from forms.peers import PEERS
from forms.policy import call, question, specialist, transfer
from forms.tools import TOOL_OF, lookup_invoice

RUNAWAY = "forever"  # a request on which the peers never stop handing it on
APPROVAL = "approval"  # a request whose refund waits for a human, or whose graph asks one


def runaway(name: str, other: str) -> Policy:
    """A swarm peer: on a "forever" request it hands the request to its peer every time,
    else it is the ordinary specialist."""
    ordinary = specialist(name, peers=[other])

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if RUNAWAY in question(messages).lower():
            return call(transfer(other))
        return ordinary(messages)

    return policy


def build_runaway_swarm(graph: str) -> Any:
    """The swarm README's form (as :func:`forms.peers.build_swarm`) with runaway peers."""
    agents = []
    for name in PEERS:
        [other] = [p for p in PEERS if p != name]
        agents.append(
            create_agent(
                form_model(graph, name, runaway(name, other)),
                [TOOL_OF[name], create_handoff_tool(agent_name=other)],
                system_prompt=f"You are {name}; hand other parts to your peer.",
                name=name,
            )
        )
    return create_swarm(agents, default_active_agent="billing").compile()


def build_asking_graph(graph: str) -> Any:
    """``triage`` (a model) then ``confirm``, a node that calls ``interrupt()`` on an approval
    request and otherwise answers; a checkpointer keeps the paused thread."""
    model = form_model(graph, "triage", specialist("billing", use_tool=False))

    def triage(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def confirm(state: MessagesState) -> dict[str, Any]:
        if APPROVAL in question(state["messages"]).lower():
            answer = interrupt({"question": "Refund INV-42?", "options": ["yes", "no"]})
            return {"messages": [AIMessage(f"Refund confirmed: {answer}.")]}
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "triage")
    builder.add_edge("triage", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=InMemorySaver(), name="asking")


def build_approval_agent(graph: str) -> Any:
    """LangChain 1.x's human-in-the-loop agent: ``lookup_invoice`` needs approval on an
    approval request; other requests use no tool that does."""
    ordinary = specialist("billing", use_tool=False)

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if APPROVAL in question(messages).lower():
            return call("lookup_invoice", {"invoice_id": "INV-42"})
        return ordinary(messages)

    return create_agent(
        form_model(graph, "billing", policy),
        [lookup_invoice],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"lookup_invoice": True})],
        checkpointer=InMemorySaver(),
        name="billing",
    )


runaway_swarm = build_runaway_swarm("runaway_swarm")
asking_graph = build_asking_graph("asking_graph")
approval_agent = build_approval_agent("approval_agent")
