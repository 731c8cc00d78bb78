"""Graph state for the demo: messages plus ``resolution_notes``.

Notes are merged as an ordered set, not concatenated. A specialist runs as a subgraph
and hands its whole state back to the parent (and the supervisor's handoff tools copy
the whole state forward), so the same notes arrive more than once; ``operator.add``
would duplicate them.
"""

from __future__ import annotations

from typing import Annotated, NotRequired

from langchain.agents import AgentState
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph_swarm import SwarmState
from typing_extensions import TypedDict


def add_notes(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Append the notes in ``right`` that ``left`` does not have yet, keeping order."""
    merged = list(left or [])
    merged.extend(note for note in dict.fromkeys(right or []) if note not in merged)
    return merged


class SpecialistState(AgentState):
    """A specialist agent's state: its messages and the notes its tools wrote."""

    resolution_notes: Annotated[list[str], add_notes]


class SupervisorState(TypedDict):
    """State of the supervisor graph and of its routing agent.

    The routing agent (``create_react_agent``) insists on a ``remaining_steps`` key. It is a
    plain optional value here, not ``RemainingSteps``: ``create_supervisor`` uses this schema
    for the outer graph too, where a managed value would receive the handoff tool's copy of
    the state and LangGraph would log "wrote to unknown channel" on every handoff. Left
    unset, the step check is skipped; the graph's ``recursion_limit`` still stops loops.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    remaining_steps: NotRequired[int]
    resolution_notes: Annotated[list[str], add_notes]


class DemoSwarmState(SwarmState):
    """Swarm state: messages, the active agent and the resolution notes."""

    resolution_notes: Annotated[list[str], add_notes]
