"""Graphs of other people's libraries that ``langgraph dev`` serves in the remote-target
tests, and that the same tests run in-process: a langgraph-supervisor team and a
langgraph-swarm pair over ``create_agent`` agents.

A server builds each graph once and runs every example on it, so their chat model cannot
replay a script by position: :class:`RuleModel` answers from the conversation it is given
(the same conversation, the same reply, in any process), and reports usage a test can work
out by hand: ``input_tokens`` = 10 per message given, ``output_tokens`` = 1 per word of its
text + 5 per tool call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

from agenteval_cli.demo import supervisor as demo_supervisor
from agenteval_cli.demo import swarm as demo_swarm

Rule = Callable[[list[BaseMessage]], tuple[str, list[tuple[str, dict[str, Any]]]]]


class RuleModel(BaseChatModel):
    """A chat model whose reply is ``rule(messages)``: its text and tool calls."""

    rule: Rule
    model_name: str

    @property
    def _llm_type(self) -> str:
        return "rule-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        text, calls = self.rule(messages)
        seed = hashlib.sha256(repr([m.content for m in messages]).encode()).hexdigest()[:12]
        reply = AIMessage(
            content=text,
            tool_calls=[
                {"name": name, "args": args, "id": f"call_{seed}_{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(calls)
            ],
            usage_metadata={
                "input_tokens": 10 * len(messages),
                "output_tokens": len(text.split()) + 5 * len(calls),
                "total_tokens": 10 * len(messages) + len(text.split()) + 5 * len(calls),
            },
            response_metadata={"model_name": self.model_name},
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _question(messages: list[BaseMessage]) -> str:
    return next(str(m.content).lower() for m in messages if isinstance(m, HumanMessage))


def _done(messages: list[BaseMessage], tool_name: str) -> bool:
    return any(isinstance(m, ToolMessage) and m.name == tool_name for m in messages)


@tool
def lookup_invoice(number: str) -> str:
    """Look up an invoice."""
    return f"invoice {number}: 49.00 USD, refunded"


@tool
def check_status(service: str) -> str:
    """Check a service's status."""
    return f"service {service}: degraded, engineers on it"


def _supervisor_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Billing for a refund, tech for an outage, each once, then a summary."""
    question = _question(messages)
    for word, agent in (("refund", "billing"), ("outage", "tech")):
        if word in question and not _done(messages, f"transfer_to_{agent}"):
            return f"Sending this to {agent}.", [(f"transfer_to_{agent}", {})]
    return "All done: " + question, []


def _billing_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if not _done(messages, "lookup_invoice"):
        return "", [("lookup_invoice", {"number": "INV-7"})]
    return "Invoice INV-7 is refunded.", []


def _tech_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if not _done(messages, "check_status"):
        return "", [("check_status", {"service": "api"})]
    return "The api is degraded; engineers are on it.", []


def build_supervisor() -> Any:
    billing = create_agent(
        RuleModel(rule=_billing_rule, model_name="rule-small"),
        [lookup_invoice],
        name="billing",
    )
    tech = create_agent(
        RuleModel(rule=_tech_rule, model_name="rule-small"), [check_status], name="tech"
    )
    return create_supervisor(
        [billing, tech], model=RuleModel(rule=_supervisor_rule, model_name="rule-large")
    ).compile(name="team")


def _alice_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Alice hands a refund to Bob; anything else she answers."""
    if "refund" in _question(messages) and not _done(messages, "transfer_to_bob"):
        return "Bob does refunds.", [("transfer_to_bob", {})]
    return "Alice here: nothing to refund.", []


def _bob_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if not _done(messages, "lookup_invoice"):
        return "", [("lookup_invoice", {"number": "INV-9"})]
    return "Bob refunded invoice INV-9.", []


def build_swarm() -> Any:
    alice = create_agent(
        RuleModel(rule=_alice_rule, model_name="rule-large"),
        [create_handoff_tool(agent_name="bob", description="Transfer to Bob, for refunds")],
        name="alice",
    )
    bob = create_agent(
        RuleModel(rule=_bob_rule, model_name="rule-small"),
        [lookup_invoice, create_handoff_tool(agent_name="alice", description="To Alice")],
        name="bob",
    )
    return create_swarm([alice, bob], default_active_agent="alice").compile()


def _broken_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    raise ValueError("the model is down")


supervisor = build_supervisor()
swarm = build_swarm()
# an agent whose model raises: the run fails on the server
broken = create_agent(RuleModel(rule=_broken_rule, model_name="rule-small"), [], name="broken")


@tool
def refund_invoice(number: str) -> str:
    """Refund an invoice."""
    raise ValueError(f"the refund system rejected {number}")


def _refunder_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    return "", [("refund_invoice", {"number": "INV-3"})]


# an agent whose tool raises: the run fails on the server after a model call, in the tool
refunder = create_agent(
    RuleModel(rule=_refunder_rule, model_name="rule-small"), [refund_invoice], name="refunder"
)


def _forgiving_rule(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if not _done(messages, "refund_invoice"):
        return "", [("refund_invoice", {"number": "INV-4"})]
    return "Sorry, the refund did not go through.", []


def build_forgiving() -> Any:
    """A hand-built agent whose ToolNode turns the tool's exception into an error
    ToolMessage (``handle_tool_errors=True``): the run goes on and answers."""
    model = RuleModel(rule=_forgiving_rule, model_name="rule-small")

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([refund_invoice], handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(name="forgiving")


forgiving = build_forgiving()

# The demo's teams as a conversation needs them (tools that ask for confirmation through
# interrupt()), with no checkpointer of their own: the server keeps every thread's state.
conversational_supervisor = demo_supervisor.build_graph(conversational=True).copy(
    update={"checkpointer": None}
)
conversational_swarm = demo_swarm.build_graph(conversational=True).copy(
    update={"checkpointer": None}
)
