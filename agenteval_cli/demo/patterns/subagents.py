"""Subagents: a main agent calls each domain's agent as a tool, as LangChain's docs build it.

Each subagent is a ``create_agent`` of its own (its prompt the domain's notes), wrapped in a
``@tool`` that invokes it with the main agent's query and returns its last message. The
subagents start fresh on every call; the main agent keeps the conversation on its
checkpointer thread. "Buy milk" costs four model calls: main, milk (``buy_milk``), milk's
reply, main's reply.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from agenteval_cli.demo.patterns.knowledge import DESCRIPTIONS, DOMAINS, MILK, assistant_prompt
from agenteval_cli.demo.patterns.knowledge import notes as notes_of
from agenteval_cli.demo.patterns.model import pattern_model
from agenteval_cli.demo.patterns.policy import text_of
from agenteval_cli.demo.patterns.tools import buy_milk

MAIN_PROMPT = (
    "You are the main agent. "
    + assistant_prompt()
    + "\nHand each part of a request to its subagent with the *_subagent tools, all at once "
    "when there are several, then answer from what they report."
)


def subagent_prompt(domain: str) -> str:
    return f"You are the {domain} agent. Answer the request from your notes.\n\n{notes_of(domain)}"


def as_tool(domain: str) -> BaseTool:
    """The docs' wrapper: a tool that runs the domain's subagent and returns its answer."""
    agent = create_agent(
        pattern_model(domain),
        [buy_milk] if domain == MILK else [],
        system_prompt=subagent_prompt(domain),
        name=domain,
    )

    @tool(f"{domain}_subagent", description=f"Ask the subagent for {DESCRIPTIONS[domain]}.")
    def call_subagent(query: str) -> str:
        result = agent.invoke({"messages": [HumanMessage(query)]})
        return text_of(result["messages"][-1])

    return call_subagent


def build_graph() -> CompiledStateGraph:
    return create_agent(
        pattern_model("main"),
        [as_tool(domain) for domain in DOMAINS],
        system_prompt=MAIN_PROMPT,
        checkpointer=InMemorySaver(),
        name="main",
    )


graph = build_graph()
