"""Forms without a supervisor: a langgraph-swarm of peers, and ``Command`` networks whose
nodes are plain functions that call the model and pick the next node themselves.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from langgraph_swarm import create_handoff_tool, create_swarm

from forms.model import form_model
from forms.policy import network_node, next_of, specialist
from forms.tools import TOOL_OF

PEERS = ("billing", "tech")


def build_swarm(graph: str) -> Any:
    """The swarm README's form: ``create_agent`` peers with ``create_handoff_tool``s."""
    agents = []
    for name in PEERS:
        others = [p for p in PEERS if p != name]
        agents.append(
            create_agent(
                form_model(graph, name, specialist(name, peers=others)),
                [TOOL_OF[name], *(create_handoff_tool(agent_name=o) for o in others)],
                system_prompt=f"You are {name}; hand other parts to your peers.",
                name=name,
            )
        )
    return create_swarm(agents, default_active_agent="billing").compile()


def build_network(graph: str, *, coordinator: bool = False) -> Any:
    """Nodes ``triage``, ``billing`` and ``tech``, each a function that calls its model and
    returns ``Command(goto=...)``. With ``coordinator`` the specialists hand back to triage
    (a hand-rolled supervisor the graph cannot declare), except for billing's question to
    tech on a "check with tech first" request."""
    builder = StateGraph(MessagesState)
    names = ("triage", "billing", "tech")
    for name in names:
        policy = network_node(name, back_to="triage" if coordinator and name != "triage" else None)
        model = form_model(graph, name, policy, large=name == "triage")
        builder.add_node(name, _node(model), destinations=(*[n for n in names if n != name], END))
    builder.add_edge(START, "triage")
    return builder.compile()


def _node(model: Any) -> Any:
    def node(state: MessagesState) -> Command:
        reply = model.invoke(state["messages"])
        goto = next_of(reply)
        return Command(goto=END if goto == "END" else goto, update={"messages": [reply]})

    return node


swarm = build_swarm("swarm")
network = build_network("network")
coordinated_network = build_network("coordinated_network", coordinator=True)
