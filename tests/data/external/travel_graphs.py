"""Someone else's multi-agent graphs: a travel desk built with langgraph-supervisor and
langgraph-swarm, with agent names agenteval knows nothing about.

Every model call reports fixed token counts (triage 100 in / 10 out on ``big-model``,
desks 50 in / 5 out on ``small-model``) so the expected totals can be counted by hand.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

DESKS = {"flight": "flights_desk", "hotel": "hotel_desk"}


class RuleModel(BaseChatModel):
    """Decides from the conversation: route each domain named in the question, book, answer."""

    role: str
    swarm: bool = False

    @property
    def _llm_type(self) -> str:
        return "rule-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        question = next(m.content for m in messages if isinstance(m, HumanMessage)).lower()
        wanted = [desk for word, desk in DESKS.items() if word in question]
        called = [
            call["name"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls
        ]
        if self.role == "triage":
            reply = self._triage(wanted, called, messages)
        else:
            reply = self._desk(wanted, called, messages)
        big = self.role == "triage"
        reply.usage_metadata = {
            "input_tokens": 100 if big else 50,
            "output_tokens": 10 if big else 5,
            "total_tokens": 110 if big else 55,
        }
        reply.response_metadata = {"model_name": "big-model" if big else "small-model"}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _triage(
        self, wanted: list[str], called: list[str], messages: list[BaseMessage]
    ) -> AIMessage:
        for desk in wanted:
            if f"transfer_to_{desk}" not in called:
                return _call(f"transfer_to_{desk}", {})
        reports = [
            m.content for m in messages if isinstance(m, AIMessage) and "booked" in m.content
        ]
        return AIMessage("All set: " + " ".join(reports))

    def _desk(self, wanted: list[str], called: list[str], messages: list[BaseMessage]) -> AIMessage:
        booking = "book_flight" if self.role == "flights_desk" else "book_hotel"
        if self.role in wanted and booking not in called:
            return _call(booking, {"city": "Lisbon"})
        if self.swarm:
            # A swarm desk hands on to a desk the question names that has not worked yet.
            for desk in wanted:
                if desk != self.role and f"transfer_to_{desk}" not in called:
                    return _call(f"transfer_to_{desk}", {})
        done = [m.content for m in messages if isinstance(m, ToolMessage) and "booked" in m.content]
        return AIMessage(" and ".join(done) + ".")


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{name}"}])


@tool
def book_flight(city: str) -> str:
    """Book a flight to a city."""
    return f"flight to {city} booked"


@tool
def book_hotel(city: str) -> str:
    """Book a hotel in a city."""
    return f"hotel in {city} booked"


def _desks(swarm: bool) -> list[Any]:
    handoffs = {
        "flights_desk": [create_handoff_tool(agent_name="hotel_desk")] if swarm else [],
        "hotel_desk": [create_handoff_tool(agent_name="flights_desk")] if swarm else [],
    }
    return [
        create_agent(
            RuleModel(role="flights_desk", swarm=swarm),
            [book_flight, *handoffs["flights_desk"]],
            name="flights_desk",
        ),
        create_agent(
            RuleModel(role="hotel_desk", swarm=swarm),
            [book_hotel, *handoffs["hotel_desk"]],
            name="hotel_desk",
        ),
    ]


supervisor_graph = create_supervisor(
    _desks(swarm=False), model=RuleModel(role="triage"), supervisor_name="triage"
).compile()
swarm_graph = create_swarm(_desks(swarm=True), default_active_agent="flights_desk").compile()


def supervisor_target(inputs: dict) -> dict:
    """A common pattern: a plain function that invokes the graph without any config."""
    result = supervisor_graph.invoke({"messages": [HumanMessage(content=inputs["question"])]})
    return {"final_response": result["messages"][-1].content, "resolution_notes": []}
