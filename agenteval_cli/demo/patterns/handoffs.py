"""Handoffs: one agent whose ``current_step`` says which domain's agent it is, as
LangChain's docs build it ("single agent with middleware").

``transfer_to_<domain>`` tools set ``current_step`` with ``Command(update=...)``; a
``@wrap_model_call`` middleware gives each step its prompt (the domain's notes) and tools.
The state lives on a checkpointer thread, so a follow-up finds the step the last turn
ended in: "Buy milk again" goes straight to the milk step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, wrap_model_call
from langchain.tools import ToolRuntime
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from agenteval_cli.demo.patterns.knowledge import (
    DESCRIPTIONS,
    DOMAINS,
    LANGUAGES,
    MILK,
    assistant_prompt,
)
from agenteval_cli.demo.patterns.knowledge import notes as notes_of
from agenteval_cli.demo.patterns.model import pattern_model
from agenteval_cli.demo.patterns.tools import buy_milk, record_findings

MAIN = "main"


class HandoffState(AgentState):
    """The agent's messages and the step it is at (``main`` until a transfer)."""

    current_step: NotRequired[str]


def transfer_to(domain: str) -> BaseTool:
    @tool(
        f"transfer_to_{domain}", description=f"Hand over to the agent for {DESCRIPTIONS[domain]}."
    )
    def transfer(runtime: ToolRuntime) -> Command:
        message = ToolMessage(f"Transferred to {domain}.", tool_call_id=runtime.tool_call_id)
        return Command(update={"messages": [message], "current_step": domain})

    return transfer


TRANSFERS = {domain: transfer_to(domain) for domain in DOMAINS}


def step_prompt(step: str) -> str:
    if step == MAIN:
        return (
            "You are the main agent. "
            + assistant_prompt()
            + "\nHand the request to the agent for its first part with a transfer_to_* tool."
        )
    work = "Record your findings, then hand the next part over or answer."
    if step == MILK:
        work = "Do the errand, then answer."
    return f"You are the {step} agent. {work}\n\n{notes_of(step)}"


def step_tools(step: str) -> list[BaseTool]:
    own: list[BaseTool] = [buy_milk] if step == MILK else []
    if step in LANGUAGES:
        own = [record_findings]
    return own + [t for domain, t in TRANSFERS.items() if domain != step]


@wrap_model_call
def apply_step_config(
    request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
) -> ModelResponse:
    """Configure the agent for the current step: its prompt and its tools."""
    step = str(request.state.get("current_step", MAIN))
    tools: list[BaseTool | dict[str, Any]] = list(step_tools(step))
    return handler(request.override(system_message=SystemMessage(step_prompt(step)), tools=tools))


def build_graph() -> CompiledStateGraph:
    return create_agent(
        pattern_model("handoffs"),
        [buy_milk, record_findings, *TRANSFERS.values()],
        state_schema=HandoffState,
        middleware=[apply_step_config],
        checkpointer=InMemorySaver(),
        name="assistant",
    )


graph = build_graph()
