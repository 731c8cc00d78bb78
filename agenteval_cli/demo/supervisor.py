"""The supervisor pattern: a central router sends each part of a request to a specialist.

Built with ``langgraph_supervisor.create_supervisor``. Top-level nodes are ``supervisor``,
``billing``, ``tech_support`` and ``account``, so the first segment of a model call's
checkpoint namespace names the agent that made it. ``output_mode="full_history"`` keeps
every specialist message (and the ``transfer_to_*`` / ``transfer_back_to_supervisor``
pairs) in the final state, and makes the supervisor re-read all of it on every turn.

    graph.invoke({"messages": [HumanMessage(question)], "resolution_notes": []})

``conversational_graph`` is the same team for multi-turn conversations: compiled with a
checkpointer (one ``thread_id`` per conversation, only the new message each turn) and with
the account agent's ``cancel_subscription``, which interrupts to ask the customer first.
The supervisor still routes every turn again: that is the pattern.

    config = {"configurable": {"thread_id": "c1"}}
    conversational_graph.invoke({"messages": [HumanMessage("Cancel my subscription")]}, config)
    conversational_graph.invoke(Command(resume="yes"), config)
"""

from __future__ import annotations

import functools
import warnings

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph_supervisor import create_supervisor

from agenteval_cli.demo.agents import (
    SUPERVISOR_CONFIRMED_SUFFIX,
    SUPERVISOR_PROMPT,
    make_specialist,
)
from agenteval_cli.demo.model import ModelChoice, model_for
from agenteval_cli.demo.rules import AGENTS
from agenteval_cli.demo.state import SupervisorState


def build_graph(
    model: ModelChoice | None = None, *, conversational: bool = False
) -> CompiledStateGraph:
    """Compile the supervisor graph; ``model`` as in ``model_for`` (default: scripted).

    ``conversational``: an ``InMemorySaver`` checkpointer and the confirmed tools, as in
    ``conversational_graph``.
    """
    specialists: list[Pregel] = [
        make_specialist(name, model_for(name, model), confirmed=conversational) for name in AGENTS
    ]
    prompt = SUPERVISOR_PROMPT + (SUPERVISOR_CONFIRMED_SUFFIX if conversational else "")
    with warnings.catch_warnings():
        # create_supervisor builds its router with the deprecated create_react_agent.
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            specialists,
            model=model_for("supervisor", model),
            prompt=prompt,
            state_schema=SupervisorState,
            output_mode="full_history",
            supervisor_name="supervisor",
        )
    if conversational:
        return workflow.compile(checkpointer=InMemorySaver(), name="supervisor_conversation_demo")
    return workflow.compile(name="supervisor_demo")


graph = build_graph()


@functools.cache
def _conversational_graph() -> CompiledStateGraph:
    return build_graph(conversational=True)


def __getattr__(name: str) -> CompiledStateGraph:
    """``conversational_graph``, built on first use: the single-turn demo does not pay for it."""
    if name == "conversational_graph":
        return _conversational_graph()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
