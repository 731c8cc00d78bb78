"""Agents whose tools run other agents, found in the graph when the target is loaded.

Such an agent (deepagents' main agent with its ``task`` tool, a ``create_agent`` supervisor
whose ``@tool`` functions invoke sub-agents) regains control by design: it is a coordinator in
every request of the target, the ones it answers alone included, which one request's trace
cannot tell.

A tool runs an agent when what it holds reaches one: its function's closure, the globals its
code names, its default arguments, a bound method's object, a ``functools.partial``'s
arguments, the tool object's own fields, and the dicts, lists, functions and objects' fields
among those, a few levels down. An agent there is a compiled graph the trace counts as an
agent of its own: one with a name (``create_agent(name=...)``, ``compile(name=...)``, a
binding's ``lc_agent_name`` as deepagents gives a ``CompiledSubAgent``), or a graph of several
agents. Tool names never matter.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

from agenteval_cli.trace.attribution import DEFAULT_GRAPH_NAME, is_step_node

__all__ = [
    "agent_tool_coordinators",
    "agents_run_by",
    "as_agent",
    "graph_name",
    "graph_nodes",
    "graphs_run_by",
    "is_graph",
    "node_subgraphs",
    "search",
]

_DEPTH = 4  # how far below a tool (or a function target) its agents are looked for
_ITEMS = 200  # items of one dict, list or object looked at
_BUDGET = 5000  # values looked at from one tool, at most
_Found = TypeVar("_Found")


def agent_tool_coordinators(graph: Any, own: str) -> list[str]:
    """The agents of ``graph`` (and of the agents its tools run, and of its subgraphs) whose
    tools run other agents, named as the trace names them; ``own`` is the name of the
    target's own agent where the graph gives it none (the target's name)."""
    found: dict[str, None] = {}
    _visit(graph, graph_name(graph) or own, found, set())
    return list(found)


def graphs_run_by(function: Any) -> list[Any]:
    """The graphs a function target holds (the graph it invokes), nearest first."""
    return search(function, lambda value: value if is_graph(value) else None)


def _visit(graph: Any, name: str | None, found: dict[str, None], seen: set[int]) -> None:
    if id(graph) in seen:
        return
    seen.add(id(graph))
    nodes = graph_nodes(graph)
    if all(is_step_node(n) for n in nodes):  # one agent: its steps hold its tools
        held = [agent for tools in nodes.values() for agent in agents_run_by(tools)]
        if held and name:
            found.setdefault(name, None)
        for agent, agent_name in held:
            _visit(agent, agent_name, found, seen)
        return
    edges = set(getattr(getattr(graph, "builder", None) or graph, "edges", set()) or set())
    for node, runnable in nodes.items():
        if is_step_node(node):  # a tools node among agents: its agent is where it returns to
            if agents_run_by(runnable):
                for source, target in edges:
                    if source == node and target in nodes and not is_step_node(target):
                        found.setdefault(target, None)
            continue
        for sub in [runnable] if is_graph(runnable) else node_subgraphs(graph, node):
            _visit(sub, graph_name(sub) or node, found, seen)


def graph_nodes(graph: Any) -> dict[str, Any]:
    """A graph's nodes (``__start__`` left out): name -> the runnable it runs."""
    builder = getattr(graph, "builder", None) or graph  # compiled, or a StateGraph
    nodes = getattr(builder, "nodes", None)
    if not isinstance(nodes, dict):
        return {}
    return {
        name: getattr(spec, "runnable", None) or getattr(spec, "bound", None)
        for name, spec in nodes.items()
        if not str(name).startswith("__")
    }


def node_subgraphs(graph: Any, node: str) -> list[Any]:
    compiled = getattr(graph, "nodes", {}).get(node)
    return list(getattr(compiled, "subgraphs", None) or [])


def graph_name(graph: Any) -> str | None:
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name and name != DEFAULT_GRAPH_NAME else None


def agents_run_by(runnable: Any) -> list[tuple[Any, str | None]]:
    """The agents the tools of a node (a ``ToolNode``) run: (graph, its name)."""
    tools = getattr(runnable, "tools_by_name", None)
    if not isinstance(tools, dict):
        return []
    return [agent for tool in tools.values() for agent in _agents_in(tool)]


def _agents_in(tool: Any) -> list[tuple[Any, str | None]]:
    return search(tool, as_agent)


def search(start: Any, match: Callable[[Any], _Found | None]) -> list[_Found]:
    """What ``match`` finds among the values ``start`` holds, a few levels down, nearest
    first (breadth first, so what one path reaches deep down is not left unexplored when
    another reaches it sooner); a value found is not looked into."""
    found: list[_Found] = []
    seen: set[int] = set()
    level = [start]
    for _ in range(_DEPTH + 1):
        below: list[Any] = []
        for value in level:
            if value is None or id(value) in seen or len(seen) >= _BUDGET:
                continue
            seen.add(id(value))
            hit = match(value)
            if hit is not None:
                found.append(hit)
            else:
                below += _held(value)
        level = below
    return found


def _held(value: Any) -> list[Any]:
    """What a function, partial, bound method, container or object (a tool's fields)
    holds."""
    if isinstance(value, str | bytes | int | float | bool | type | types.ModuleType):
        return []
    if isinstance(value, dict):
        return list(value.values())[:_ITEMS]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)[:_ITEMS]
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    if isinstance(value, types.MethodType):
        return [value.__func__, value.__self__]
    if isinstance(value, types.FunctionType):
        code = value.__code__
        cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
        names = [value.__globals__[n] for n in code.co_names if n in value.__globals__]
        return [*cells, *names, *(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
    fields = getattr(value, "__dict__", None)  # a tool's func and coroutine among them
    return list(fields.values())[:_ITEMS] if isinstance(fields, dict) else []


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def as_agent(value: Any) -> tuple[Any, str | None] | None:
    """(graph, name) when ``value`` is an agent the trace counts as one of its own: a compiled
    graph with a name (its own, or an ``lc_agent_name`` given by ``with_config``, on the graph
    or on a binding of it), or a graph of several agents."""
    named = _lc_agent_name(value)
    while hasattr(value, "bound") and isinstance(getattr(value, "config", None), dict):
        value = value.bound
        named = named or _lc_agent_name(value)
    if not is_graph(value):
        return None
    named = named or graph_name(value)
    if named is None and all(is_step_node(n) for n in graph_nodes(value)):
        return None  # an unnamed single agent: its calls are its caller's
    return value, named


def _lc_agent_name(value: Any) -> str | None:
    config = getattr(value, "config", None)
    metadata = config.get("metadata") if isinstance(config, dict) else None
    name = metadata.get("lc_agent_name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def is_graph(value: Any) -> bool:
    """A LangGraph graph (compiled, or a ``StateGraph``), known without importing LangGraph."""
    return any(c.__name__ in ("Pregel", "StateGraph") for c in type(value).__mro__) and bool(
        graph_nodes(value)
    )
