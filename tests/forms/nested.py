"""Forms where agents sit inside other agents or under other node names: a supervisor of
supervisors (langgraph-supervisor's multi-level hierarchy), a supervisor that calls its
agents as tools (the pattern langgraph-supervisor's README now recommends), and a named
subgraph added to a router graph under a node name of its own.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph_supervisor import create_supervisor

from forms.model import form_model, text_of
from forms.policy import agent_tools_supervisor, route_of, router, specialist, supervisor
from forms.supervisors import react_specialist
from forms.tools import TOOL_OF

TEAMS = {"money_team": ("billing", "account"), "tech_team": ("tech", "network")}
TEAM_SUPERVISORS = {"money_team": "money_supervisor", "tech_team": "tech_supervisor"}
TOP = "top_supervisor"


def _create_supervisor(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_supervisor(*args, **kwargs)


def build_hierarchy(graph: str, *, compile_name: str | None = None) -> Any:
    """Teams are ``create_supervisor(...).compile(name=<team>)`` with their own
    ``supervisor_name``, managed by a top-level supervisor."""
    teams = []
    for team, members in TEAMS.items():
        boss = TEAM_SUPERVISORS[team]
        teams.append(
            _create_supervisor(
                [react_specialist(graph, name) for name in members],
                model=form_model(graph, boss, supervisor(members), large=True),
                supervisor_name=boss,
            ).compile(name=team)
        )
    workflow = _create_supervisor(
        teams,
        model=form_model(graph, TOP, supervisor(tuple(TEAMS), teams=TEAMS), large=True),
        supervisor_name=TOP,
    )
    return workflow.compile(name=compile_name) if compile_name else workflow.compile()


def build_tool_supervisor(graph: str) -> Any:
    """``create_agent(model, tools=[ask_billing, ask_tech], name="supervisor")``; each tool
    runs a ``create_agent(..., name=<agent>)`` and returns its last message."""
    billing = create_agent(
        form_model(graph, "billing", specialist("billing")), [TOOL_OF["billing"]], name="billing"
    )
    tech = create_agent(
        form_model(graph, "tech", specialist("tech")), [TOOL_OF["tech"]], name="tech"
    )

    @tool
    def ask_billing(query: str) -> str:
        """Ask the billing agent about invoices and refunds."""
        result = billing.invoke({"messages": [{"role": "user", "content": query}]})
        return text_of(result["messages"][-1])

    @tool
    def ask_tech(query: str) -> str:
        """Ask the tech agent about crashes and errors."""
        result = tech.invoke({"messages": [{"role": "user", "content": query}]})
        return text_of(result["messages"][-1])

    return create_agent(
        form_model(graph, "supervisor", agent_tools_supervisor(("billing", "tech")), large=True),
        tools=[ask_billing, ask_tech],
        system_prompt="Answer the customer; ask billing or tech for their parts.",
        name="supervisor",
    )


def build_renamed(graph: str) -> Any:
    """A router node and two named agents added under node names of their own:
    ``create_react_agent(name="billing")`` as ``billing_node``, ``create_agent(name="tech")``
    as ``tech_node``. Each goes back to the router, which picks the next or ends."""
    tech = create_agent(
        form_model(graph, "tech", specialist("tech")), [TOOL_OF["tech"]], name="tech"
    )
    route_model = form_model(graph, "router", router(("billing", "tech")), large=True)

    def route(state: MessagesState) -> dict:
        return {"messages": [route_model.invoke(state["messages"])]}

    def next_node(state: MessagesState) -> str:
        chosen = route_of(state["messages"][-1])
        return f"{chosen[0]}_node" if chosen else END

    builder = StateGraph(MessagesState)
    builder.add_node("router", route)
    builder.add_node("billing_node", react_specialist(graph, "billing"))
    builder.add_node("tech_node", tech)
    builder.add_edge(START, "router")
    builder.add_conditional_edges("router", next_node, ["billing_node", "tech_node", END])
    builder.add_edge("billing_node", "router")
    builder.add_edge("tech_node", "router")
    return builder.compile()


hierarchy = build_hierarchy("hierarchy")
hierarchy_named = build_hierarchy("hierarchy_named", compile_name=TOP)  # as the README does
tool_supervisor = build_tool_supervisor("tool_supervisor")
renamed = build_renamed("renamed")
