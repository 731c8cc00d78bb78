"""A ``Send`` fan-out: a router sends the request to every open agent at once, the agents
(``create_react_agent`` subgraphs) run in parallel and both go back to the router.

The agents' models sleep a little before each call: the agent a request names first sleeps
longest (so on one request billing finishes first, on another tech does), plus a random bit,
so the branches finish in varying order from request to request and run to run.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

from forms.model import form_model
from forms.policy import needed, route_of, router, specialist
from forms.tools import TOOL_OF

BRANCHES = ("billing", "tech")  # the order the router sends them in


def build_fanout(graph: str) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

    route_model = form_model(graph, "router", router(BRANCHES, all_at_once=True), large=True)

    async def route(state: MessagesState) -> dict:
        return {"messages": [await route_model.ainvoke(state["messages"])]}

    def fan_out(state: MessagesState) -> Any:
        chosen = route_of(state["messages"][-1])
        return [Send(name, state) for name in BRANCHES if name in chosen] or END

    builder = StateGraph(MessagesState)
    builder.add_node("router", route)
    for name in BRANCHES:
        model = form_model(
            graph, name, specialist(name), delay_for=_named_first_waits(name), jitter_s=0.002
        )
        builder.add_node(name, create_react_agent(model, [TOOL_OF[name]], name=name))
        builder.add_edge(name, "router")
    builder.add_edge(START, "router")
    builder.add_conditional_edges("router", fan_out, [*BRANCHES, END])
    return builder.compile()


def _named_first_waits(agent: str) -> Any:
    def delay(question: str) -> float:
        want = needed(question, BRANCHES)
        return 0.015 if want[:1] == [agent] else 0.001

    return delay


def finishing_order(calls: list[Any]) -> list[str]:
    """The branches of one request in the order their last model call was made."""
    last = {c.agent: c.seq for c in calls if c.agent in BRANCHES}
    return sorted(last, key=last.__getitem__)


fanout = build_fanout("fanout")
