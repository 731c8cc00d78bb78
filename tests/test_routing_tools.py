"""Tools that route by what they do, whatever their name: langgraph-supervisor's
``forward_message`` (its Command ends the run with another agent's answer) and the
``return_direct`` transfer tools of the functional-API network in LangGraph's docs (the loop
reads the call and runs the agent it names) are handoffs, not work; a ``return_direct`` tool
whose result goes back to a supervisor stays work.

Each graph is built as its docs build it and driven by scripted models; the figures are
worked out by hand from the script, written next to each assertion.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from fakes import reply, scripted
from forms.network import (
    functional_network,
    transfer_to_hotel_advisor,
    transfer_to_travel_advisor,
)
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph_supervisor import create_supervisor
from langgraph_supervisor.handoff import create_forward_message_tool

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.handoffs import handoff_chain_length
from agenteval_cli.evaluators.soundness import unnecessary_steps
from agenteval_cli.trace.attribution import graph_coordinators
from agenteval_cli.trace.recorder import TraceRecorder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

pytestmark = pytest.mark.filterwarnings(
    "ignore::langgraph.warnings.LangGraphDeprecationWarning",
    "ignore::DeprecationWarning",
)


def traced(graph: Any, inputs: Any) -> Trace:
    recorder = TraceRecorder(coordinators=graph_coordinators(graph))
    graph.invoke(inputs, config={"callbacks": [recorder]})
    return recorder.trace()


def kinds(trace: Trace) -> list[tuple[str, str, str | None]]:
    return [(t.name, t.kind, t.target) for t in trace.tool_calls]


def wasted(trace: Trace, expected_tools: list[str]) -> float:
    return unnecessary_steps()({"expected_tools": expected_tools}, trace)["score"]


@tool
def refund(invoice: str) -> str:
    """Refund an invoice."""
    return f"refunded {invoice}"


@tool
def restart(device: str) -> str:
    """Restart a device."""
    return f"restarted {device}"


def test_forward_message_ends_the_turn_with_another_agents_answer() -> None:
    """langgraph-supervisor's own ``create_forward_message_tool``: the supervisor ends the run
    by forwarding tech's answer. Its call passes control (to the end), so it is routing: no
    wasted step, while the members' tools stay work."""
    billing = create_agent(
        scripted(
            "bill-model",
            reply(tools=[("refund", {"invoice": "INV-1"})], tokens=(5, 1)),
            reply("Refunded INV-1.", tokens=(7, 2)),
        ),
        [refund],
        name="billing",
    )
    tech = create_agent(
        scripted(
            "tech-model",
            reply(tools=[("restart", {"device": "phone"})], tokens=(6, 1)),
            reply("Restarted your phone.", tokens=(8, 2)),
        ),
        [restart],
        name="tech",
    )
    graph = create_supervisor(
        [billing, tech],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
            reply(tools=[("transfer_to_tech", {})], tokens=(11, 1)),
            reply(tools=[("forward_message", {"from_agent": "tech"})], tokens=(12, 1)),
        ),
        tools=[create_forward_message_tool("supervisor")],
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph, {"messages": [HumanMessage("Refund INV-1 and fix my phone.")]})
    called = {name: kind for name, kind, _ in kinds(trace)}
    assert (called["refund"], called["restart"], called["forward_message"]) == (
        "tool",
        "tool",
        "handoff",
    )
    # the only work is refund and restart, both expected: nothing wasted
    assert wasted(trace, ["refund", "restart"]) == 0.0
    # supervisor → billing → supervisor → tech → supervisor: forwarding adds no handoff
    assert handoff_chain_length()(trace)[0]["score"] == 4.0


@tool
def get_travel_recommendations() -> str:
    """Get recommendations for travel destinations."""
    return "aruba"


def test_return_direct_transfers_a_loop_acts_on_are_handoffs() -> None:
    """LangGraph's functional-API network: ``create_react_agent`` advisors (no names) with
    ``return_direct`` transfer tools, each run in a ``@task``; the ``@entrypoint`` loop reads
    the last tool call and runs the advisor it names. Travel looks a destination up (work),
    transfers to hotel; hotel transfers back; travel answers."""
    travel = create_react_agent(
        scripted(
            "travel-model",
            reply(tools=[("get_travel_recommendations", {})], tokens=(10, 2)),
            reply(tools=[("transfer_to_hotel_advisor", {})], tokens=(12, 2)),
            reply("Go to Aruba and stay at the Hilton.", tokens=(30, 5)),
        ),
        [get_travel_recommendations, transfer_to_hotel_advisor],
        prompt="You are a general travel expert.",
    )
    hotel = create_react_agent(
        scripted("hotel-model", reply(tools=[("transfer_to_travel_advisor", {})], tokens=(20, 3))),
        [transfer_to_travel_advisor],
        prompt="You are a hotel expert.",
    )

    workflow = functional_network(travel, hotel)

    trace = traced(workflow, [{"role": "user", "content": "A warm trip and a hotel."}])
    travel_agent, hotel_agent = "call_travel_advisor", "call_hotel_advisor"
    assert trace.agent_path == [travel_agent, hotel_agent, travel_agent]
    assert kinds(trace) == [
        ("get_travel_recommendations", "tool", None),
        ("transfer_to_hotel_advisor", "handoff", hotel_agent),
        ("transfer_to_travel_advisor", "handoff", travel_agent),
    ]
    assert [(h.source, h.target, h.tool, h.via) for h in trace.handoffs] == [
        (travel_agent, hotel_agent, "transfer_to_hotel_advisor", "tool"),
        (hotel_agent, travel_agent, "transfer_to_travel_advisor", "tool"),
    ]
    # the lookup was the one expected step; the two transfers are routing, not waste
    assert wasted(trace, ["get_travel_recommendations"]) == 0.0


def test_a_return_direct_tool_whose_result_a_supervisor_takes_back_is_work() -> None:
    """A worker's ``return_direct`` lookup ends its turn, and control goes back to the
    supervisor by the graph's design: the lookup did the work the supervisor answers from."""

    @tool(return_direct=True)
    def lookup_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return f"{invoice}: paid"

    billing = create_react_agent(
        scripted("bill-model", reply(tools=[("lookup_invoice", {"invoice": "INV-1"})])),
        [lookup_invoice],
        name="billing",
    )
    graph = create_supervisor(
        [billing],
        model=scripted(
            "sup-model",
            reply(tools=[("transfer_to_billing", {})]),
            reply("INV-1 is paid."),
        ),
        supervisor_name="supervisor",
    ).compile()
    trace = traced(graph, {"messages": [HumanMessage("Is INV-1 paid?")]})
    assert trace.agent_path == ["supervisor", "billing", "supervisor"]
    called = {name: kind for name, kind, _ in kinds(trace)}
    assert called["lookup_invoice"] == "tool"
    assert wasted(trace, ["lookup_invoice"]) == 0.0
