"""The names a target answers to, read from its compiled graph before any call: the agents
its trace can name, the tools its tool nodes hold and the skills its declared skill tools
can load. A dataset's ``expected_agents``, ``required_tools`` or ``expected_skills`` are
checked against them, so a misspelt name is said rather than scored as a miss.

Agents are named as the trace names them (``docs/agents.md``): a node of a graph that
coordinates agents, a named compiled graph (``create_agent(name=...)``,
``create_react_agent(name=...)``, ``compile(name=...)``, langgraph-supervisor's and
langgraph-swarm's members), a graph bound with an ``lc_agent_name`` (deepagents' sub-agents),
the agents a tool runs (deepagents' ``task`` tool, a ``@tool`` invoking an agent), at every
level; a single agent invoked directly is its graph's name, else the target's. Tools are
those of the graph's tool nodes and every tool a node holds (one it runs itself, a
``ToolStrategy`` response format's). A name read here may never run; a name not read here
never does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agenteval_cli.trace.agent_tools import (
    agents_run_by,
    as_agent,
    graph_name,
    graph_nodes,
    is_graph,
    node_subgraphs,
    search,
)
from agenteval_cli.trace.attribution import is_step_node

__all__ = ["SystemNames", "graph_names"]


@dataclass(frozen=True)
class SystemNames:
    """What a target can name; None where it cannot be read before the run (a function,
    a Runnable, a served graph, agents a state key names, skills no schema lists)."""

    agents: frozenset[str] | None = None
    tools: frozenset[str] | None = None
    skills: frozenset[str] | None = None


def graph_names(
    graph: Any, own: str, skill_tools: Mapping[str, str | None] | None = None
) -> SystemNames:
    """The names of ``graph``'s agents and tools, and the skills its ``skill_tools`` list in
    their arguments' schema; ``own`` is the target's name, its agent's where the graph has
    none."""
    walk = _Walk()
    root = graph_name(graph)
    walk.graph(graph, (root or own) if _single_agent(graph) else None)
    skills = _skills(walk.tools, skill_tools) if skill_tools else None
    return SystemNames(frozenset(walk.agents), frozenset(walk.tools), skills)


class _Walk:
    """One pass down a graph: agents by name, tools by name (to their objects)."""

    def __init__(self) -> None:
        self.agents: set[str] = set()
        self.tools: dict[str, Any] = {}
        self._seen: set[int] = set()

    def graph(self, graph: Any, name: str | None) -> None:
        if name:
            self.agents.add(name)
        if id(graph) in self._seen:
            return
        self._seen.add(id(graph))
        for node, runnable in graph_nodes(graph).items():
            self._tools_of(runnable)
            for tool_name, tool in search(runnable, _as_tool):  # the node's own, a response format
                self.tools.setdefault(tool_name, tool)
            if is_step_node(node):
                continue
            self.agents.add(node)
            for sub, sub_name in self._graphs_of(graph, node, runnable):
                self.graph(sub, sub_name)

    def _tools_of(self, runnable: Any) -> None:
        """The tools of a tool node, and the agents they run."""
        tools = getattr(runnable, "tools_by_name", None)
        if not isinstance(tools, dict):
            return
        for tool_name, tool in tools.items():
            self.tools.setdefault(str(tool_name), tool)
        for agent, agent_name in agents_run_by(runnable):
            self.graph(agent, agent_name)

    def _graphs_of(self, graph: Any, node: str, runnable: Any) -> list[tuple[Any, str | None]]:
        """The graphs a node runs: itself a graph, its compiled subgraphs, and the named
        agents its function holds (a node invoking ``create_agent(name=...)``)."""
        found: list[tuple[Any, str | None]] = []
        agent = as_agent(runnable)
        if agent is not None:
            found.append(agent)
        elif is_graph(runnable):
            found.append((runnable, graph_name(runnable)))
        with contextlib.suppress(Exception):
            found += [(sub, graph_name(sub)) for sub in node_subgraphs(graph, node)]
        if not found:
            found += search(runnable, as_agent)
        return found


def _as_tool(value: Any) -> tuple[str, Any] | None:
    """(name, value) when ``value`` is a LangChain tool (a name, an argument schema,
    ``invoke``) or a structured-output schema a model calls as one (``ToolStrategy``'s)."""
    name = getattr(value, "name", None)
    if not isinstance(name, str) or isinstance(value, type):
        return None
    if hasattr(value, "args_schema") and hasattr(value, "invoke"):
        return name, value
    if isinstance(getattr(value, "json_schema", None), dict):
        return name, None
    return None


def _single_agent(graph: Any) -> bool:
    """A graph of one agent's own steps (``model``, ``tools``, middleware hooks)."""
    return all(is_step_node(node) for node in graph_nodes(graph))


def _skills(
    tools: Mapping[str, Any], skill_tools: Mapping[str, str | None]
) -> frozenset[str] | None:
    """The skills the declared skill tools can load, read from the choices their skill
    argument's schema lists (a ``Literal`` or an enum); None when one lists none."""
    found: set[str] = set()
    for tool_name, argument in skill_tools.items():
        choices = _choices(tools.get(tool_name), argument)
        if choices is None:
            return None
        found |= choices
    return frozenset(found)


def _choices(tool: Any, argument: str | None) -> set[str] | None:
    try:
        properties = getattr(tool, "args", None)
    except Exception:  # a tool whose schema cannot be built lists nothing
        return None
    if not isinstance(properties, dict) or not properties:
        return None
    schema = properties.get(argument) if argument else next(iter(properties.values()))
    values = _enum(schema) if isinstance(schema, dict) else None
    return {str(v) for v in values} if values else None


def _enum(schema: Mapping[str, Any]) -> Iterable[Any] | None:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            values = [
                v for option in options if isinstance(option, dict) for v in _enum(option) or []
            ]
            return values or None
    return None
