"""The swarm pattern: specialists hand the conversation to each other, no central router.

Built with ``langgraph_swarm.create_swarm``; ``account`` is the front desk every request
reaches first. Top-level nodes are ``billing``, ``tech_support`` and ``account``.

    graph.invoke({"messages": [HumanMessage(question)], "resolution_notes": []})

``conversational_graph`` is the same swarm for multi-turn conversations: compiled with a
checkpointer, so the agent active at the end of a turn (``active_agent``) takes the next
one on the same ``thread_id``, and with the account agent's ``cancel_subscription``, which
interrupts to ask the customer first (answered with ``Command(resume="yes")``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import InjectedState
from langgraph.pregel import Pregel
from langgraph.types import Command
from langgraph_swarm import create_handoff_tool, create_swarm

from agenteval_cli.demo.agents import make_specialist
from agenteval_cli.demo.model import ModelChoice, model_for
from agenteval_cli.demo.rules import AGENTS
from agenteval_cli.demo.state import DemoSwarmState

FRONT_DESK = "account"

_DESCRIPTIONS = {
    "billing": "Transfer to the billing specialist: payments, payment methods, invoices, refunds.",
    "tech_support": "Transfer to technical support: SSO/SAML, MFA, error codes, outages.",
    "account": "Transfer to the account specialist: plans, upgrades, seats, profile, manager.",
}


def handoff_to(agent: str) -> BaseTool:
    """``create_handoff_tool`` for ``agent``, also carrying ``resolution_notes`` forward.

    A handoff leaves the current agent's subgraph through ``Command(graph=PARENT)``, and
    the parent then sees only the command's update. The stock tool updates ``messages``
    and ``active_agent`` only, which would drop the notes the agent just wrote.
    """
    base = create_handoff_tool(agent_name=agent, description=_DESCRIPTIONS[agent])
    assert isinstance(base, StructuredTool) and base.func is not None  # made with @tool
    base_func = base.func

    @tool(base.name, description=base.description)
    def handoff(
        state: Annotated[Any, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        command = base_func(state=state, tool_call_id=tool_call_id)
        notes = state.get("resolution_notes") or []
        return dataclasses.replace(command, update={**command.update, "resolution_notes": notes})

    handoff.metadata = dict(base.metadata or {})
    return handoff


def build_graph(
    model: ModelChoice | None = None, *, conversational: bool = False
) -> CompiledStateGraph:
    """Compile the swarm; ``model`` as in ``model_for`` (default: scripted, all small).

    ``conversational``: an ``InMemorySaver`` checkpointer and the confirmed tools, as in
    ``conversational_graph``.
    """
    agents: list[Pregel] = [
        make_specialist(
            name,
            model_for(name, model),
            handoffs=[handoff_to(peer) for peer in AGENTS if peer != name],
            front_desk=name == FRONT_DESK,
            confirmed=conversational,
        )
        for name in AGENTS
    ]
    workflow = create_swarm(agents, default_active_agent=FRONT_DESK, state_schema=DemoSwarmState)
    if conversational:
        return workflow.compile(checkpointer=InMemorySaver(), name="swarm_conversation_demo")
    return workflow.compile(name="swarm_demo")


graph = build_graph()


@functools.cache
def _conversational_graph() -> CompiledStateGraph:
    return build_graph(conversational=True)


def __getattr__(name: str) -> CompiledStateGraph:
    """``conversational_graph``, built on first use: the single-turn demo does not pay for it."""
    if name == "conversational_graph":
        return _conversational_graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
