"""Deep agents and agents called as tools, built as deepagents and LangChain 1.x build them.

``create_deep_agent(model=..., subagents=[...])`` gives a main agent whose ``task`` tool runs
the sub-agents; its graph's nodes are ``model``, ``tools`` and middleware hooks, none of them
an agent. The main agent is left unnamed (so it is the target's own agent, named after the
target: its models log that name) unless the form names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deepagents import CompiledSubAgent, SubAgent, create_deep_agent
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from forms.model import form_model, text_of
from forms.policy import (
    GREETING,
    agent_tools_supervisor,
    called,
    done,
    needed,
    question,
    results,
)
from forms.policy import specialist as specialist_policy
from forms.tools import TOOL_OF

AGENTS = ("billing", "tech")


def delegating(agents: Sequence[str], *, parallel: bool = False) -> Any:
    """The main agent: a ``task`` call per open part, the customer's question as the task's
    description, then the summary. One part at a time in the order the request names them,
    or with ``parallel`` all in one turn, listed in the order of ``agents`` (deepagents runs
    one turn's calls as parallel tasks in the order listed)."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        want = [d for d in needed(question(messages)) if d in agents]
        if not want:
            return AIMessage(GREETING)
        open_parts = [d for d in want if not done(messages, d)]
        if not open_parts:
            return AIMessage("Summary: " + " ".join(results(messages)))
        chosen = [d for d in agents if d in open_parts] if parallel else open_parts[:1]
        calls = [
            {"name": "task", "args": {"description": question(messages), "subagent_type": d}}
            for d in chosen
        ]
        return AIMessage("", tool_calls=[{**c, "id": None} for c in calls])

    return policy


def delegating_once(agent: str) -> Any:
    """A main agent with one sub-agent for every part: one ``task`` call to ``agent`` for a
    request naming any domain, then its answer summed up."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if not needed(question(messages)):
            return AIMessage(GREETING)
        if not called(messages, "task"):
            args = {"description": question(messages), "subagent_type": agent}
            return AIMessage("", tool_calls=[{"name": "task", "args": args, "id": None}])
        answer = next(text_of(m) for m in reversed(messages) if isinstance(m, ToolMessage))
        return AIMessage(f"Summary: {answer}")

    return policy


def sub_agent(graph: str, name: str) -> SubAgent:
    """A declarative sub-agent: deepagents compiles it with ``create_agent(name=name)``."""
    return SubAgent(
        name=name,
        description=f"Handles {name} questions.",
        system_prompt=f"You are the {name} specialist.",
        tools=[TOOL_OF[name]],
        model=form_model(graph, name, specialist_policy(name)),
    )


def compiled_sub_agent(graph: str, name: str, *, named: bool) -> CompiledSubAgent:
    """A sub-agent given as a runnable: a ``create_agent`` graph, named or not (deepagents
    binds ``lc_agent_name`` to it either way)."""
    runnable = create_agent(
        form_model(graph, name, specialist_policy(name)),
        [TOOL_OF[name]],
        name=name if named else None,
    )
    return CompiledSubAgent(name=name, description=f"Handles {name} questions.", runnable=runnable)


def build_deep(
    graph: str,
    main: str,
    *,
    name: str | None = None,
    parallel: bool = False,
    compiled: bool = False,
) -> Any:
    """``create_deep_agent`` over billing and tech; ``main`` is the name the main agent's
    model logs (the target's name, or ``name`` when the agent is given one)."""
    subagents: list[Any] = (
        [
            compiled_sub_agent(graph, "billing", named=False),
            compiled_sub_agent(graph, "tech", named=True),
        ]
        if compiled
        else [sub_agent(graph, agent) for agent in AGENTS]
    )
    return create_deep_agent(
        model=form_model(graph, main, delegating(AGENTS, parallel=parallel), large=True),
        subagents=subagents,
        system_prompt="Answer the customer; hand billing and tech parts to their agents.",
        name=name,
    )


def agent_tool_set(graph: str) -> list[Any]:
    """``ask_billing`` and ``ask_tech``: ``@tool`` functions that each invoke a named
    ``create_agent`` (through a helper that holds them) and return its last message."""
    billing = create_agent(
        form_model(graph, "billing", specialist_policy("billing")),
        [TOOL_OF["billing"]],
        name="billing",
    )
    tech = create_agent(
        form_model(graph, "tech", specialist_policy("tech")), [TOOL_OF["tech"]], name="tech"
    )
    agents = {"billing": billing, "tech": tech}

    def ask(agent: str, query: str) -> str:
        result = agents[agent].invoke({"messages": [{"role": "user", "content": query}]})
        return text_of(result["messages"][-1])

    @tool
    def ask_billing(query: str) -> str:
        """Ask the billing agent about invoices and refunds."""
        return ask("billing", query)

    @tool
    def ask_tech(query: str) -> str:
        """Ask the tech agent about crashes and errors."""
        return ask("tech", query)

    return [ask_billing, ask_tech]


def build_nested(graph: str, main: str) -> Any:
    """A deep agent whose only sub-agent, ``money``, is itself a deep agent (a
    ``CompiledSubAgent``) delegating to billing and tech, or answering alone."""
    money = build_deep(graph, "money")
    return create_deep_agent(
        model=form_model(graph, main, delegating_once("money"), large=True),
        subagents=[CompiledSubAgent(name="money", description="All money.", runnable=money)],
    )


def _state(inputs: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [HumanMessage(inputs["question"])]}


def deep_function(inputs: dict[str, Any]) -> dict[str, Any]:
    """A plain function target that invokes a deep agent itself."""
    result = _function_graph.invoke(_state(inputs))
    return {"final_response": text_of(result["messages"][-1])}


def build_agent_tools(graph: str, main: str) -> Any:
    """An unnamed ``create_agent`` whose tools run agents: agents as tools without
    deepagents."""
    return create_agent(
        form_model(graph, main, agent_tools_supervisor(AGENTS), large=True),
        tools=agent_tool_set(graph),
        system_prompt="Answer the customer; ask billing or tech for their parts.",
    )


def build_tool_node_supervisor(graph: str) -> Any:
    """A hand-written graph: a ``supervisor`` node calling its model and a ``ToolNode``
    named ``tools`` running its agent tools, back to the supervisor after each turn."""
    model = form_model(graph, "supervisor", agent_tools_supervisor(AGENTS), large=True)

    def supervise(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("supervisor", supervise)
    builder.add_node("tools", ToolNode(agent_tool_set(graph)))
    builder.add_edge(START, "supervisor")
    builder.add_conditional_edges("supervisor", tools_condition, ["tools", END])
    builder.add_edge("tools", "supervisor")
    return builder.compile()


# Each graph is a spec target named as its first argument: the main agent's name when unnamed.
deep_agent = build_deep("deep_agent", "deep_agent")
deep_parallel = build_deep("deep_parallel", "deep_parallel", parallel=True)
deep_compiled = build_deep("deep_compiled", "deep_compiled", compiled=True)
orchestrator = build_deep("orchestrator", "orchestrator", name="orchestrator")
agent_tools = build_agent_tools("agent_tools", "agent_tools")
tool_node_supervisor = build_tool_node_supervisor("tool_node_supervisor")
deep_nested = build_nested("deep_nested", "deep_nested")
_function_graph = build_deep("deep_function", "deep_function")
