"""The supervisor pattern: a central router sends each part of a request to a specialist.

Built with ``langgraph_supervisor.create_supervisor``. Top-level nodes are ``supervisor``,
``billing``, ``tech_support`` and ``account``, so the first segment of a model call's
checkpoint namespace names the agent that made it. ``output_mode="full_history"`` keeps
every specialist message (and the ``transfer_to_*`` / ``transfer_back_to_supervisor``
pairs) in the final state, and makes the supervisor re-read all of it on every turn.

    graph.invoke({"messages": [HumanMessage(question)], "resolution_notes": []})
"""

from __future__ import annotations

import warnings

from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph_supervisor import create_supervisor

from agenteval_cli.demo.agents import SUPERVISOR_PROMPT, make_specialist
from agenteval_cli.demo.model import ModelChoice, model_for
from agenteval_cli.demo.rules import AGENTS
from agenteval_cli.demo.state import SupervisorState


def build_graph(model: ModelChoice | None = None) -> CompiledStateGraph:
    """Compile the supervisor graph; ``model`` as in ``model_for`` (default: scripted)."""
    specialists: list[Pregel] = [make_specialist(name, model_for(name, model)) for name in AGENTS]
    with warnings.catch_warnings():
        # create_supervisor builds its router with the deprecated create_react_agent.
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor(
            specialists,
            model=model_for("supervisor", model),
            prompt=SUPERVISOR_PROMPT,
            state_schema=SupervisorState,
            output_mode="full_history",
            supervisor_name="supervisor",
        )
    return workflow.compile(name="supervisor_demo")


graph = build_graph()
