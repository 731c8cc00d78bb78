"""LangGraph's functional-API network, as its docs build it: an ``@entrypoint`` loop runs the
active advisor's ``@task``, reads the last tool call of what it returned and runs the
advisor it names next, until an advisor answers without one. The advisors (any agents taking
``{"messages": ...}``) and their ``return_direct`` transfer tools are the caller's."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.func import entrypoint, task
from langgraph.graph.message import add_messages


@tool(return_direct=True)
def transfer_to_hotel_advisor() -> str:
    """Ask the hotel advisor for help."""
    return "Successfully transferred to hotel advisor"


@tool(return_direct=True)
def transfer_to_travel_advisor() -> str:
    """Ask the travel advisor for help."""
    return "Successfully transferred to travel advisor"


def functional_network(travel: Any, hotel: Any) -> Any:
    """The docs' loop over the travel and hotel advisors, travel first."""

    @task
    def call_travel_advisor(messages: list) -> list:
        return travel.invoke({"messages": messages})["messages"]

    @task
    def call_hotel_advisor(messages: list) -> list:
        return hotel.invoke({"messages": messages})["messages"]

    @entrypoint()
    def workflow(messages: list) -> list:
        messages = add_messages([], messages)
        call_active_agent = call_travel_advisor
        while True:
            agent_messages = call_active_agent(messages).result()
            messages = add_messages(messages, agent_messages)
            last = next(m for m in reversed(agent_messages) if isinstance(m, AIMessage))
            if not last.tool_calls:
                return messages
            if last.tool_calls[-1]["name"] == "transfer_to_travel_advisor":
                call_active_agent = call_travel_advisor
            else:
                call_active_agent = call_hotel_advisor

    return workflow
