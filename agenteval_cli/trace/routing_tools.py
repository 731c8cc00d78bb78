"""Tools that route by what they do, whatever they are called.

- **A tool that ends the turn**: its ``Command`` goes to the end of the graph
  (langgraph-supervisor's ``forward_message``, which ends the run with another agent's
  answer). It passes control: routing, not work.
- **A tool after which its agent stops and another agent runs**: the agent's graph ended
  right after the tool, with no model call of its own after it (``return_direct`` tools), and
  the next model call is another agent's, not a coordinator's taking control back by design
  (the functional-API network of LangGraph's docs, whose loop reads the transfer call and runs
  the agent it names). It handed off to that agent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from agenteval_cli.core.records import HANDOFF, Handoff, ToolCall
from agenteval_cli.trace.attribution import RunNode

__all__ = ["ends_turn", "name_tool_handoffs", "turn_passing_tools"]

_END = "__end__"  # langgraph.graph.END


def ends_turn(value: Any) -> bool:
    """Whether a tool's ``Command`` (or a list holding Commands) sends control to the end."""
    if isinstance(value, list | tuple):
        return any(ends_turn(item) for item in value)
    if type(value).__name__ != "Command":
        return False
    goto = getattr(value, "goto", None)
    return _END in (goto if isinstance(goto, list | tuple) else [goto])


def turn_passing_tools(
    tools: Iterable[RunNode],
    models: Sequence[RunNode],
    paths: Mapping[int, list[str]],
    coordinators: Collection[str],
) -> dict[int, str]:
    """``id()`` of each tool run after which its agent's graph ended and another agent, not a
    coordinator, made the next model call -> that agent. ``models``: the model runs in the
    order they started."""
    passed: dict[int, str] = {}
    for tool in tools:
        if tool.end is None:
            continue
        graph = _agent_graph(tool)
        if graph is None or graph.parent is None or graph.end is None:
            continue
        first = None  # the first model call after its agent's graph ended
        for model in models:
            if model.seq > graph.end:
                first = model
                break
        if first is None:
            continue
        mine = paths.get(id(tool)) or []
        theirs = paths.get(id(first)) or []
        if not (theirs and mine and theirs[-1] != mine[-1] and theirs[-1] not in coordinators):
            continue
        if not any(m.seq > tool.end and _within(m, graph) for m in models):
            passed[id(tool)] = theirs[-1]  # its agent did not go on after it
    return passed


def name_tool_handoffs(handoffs: Sequence[Handoff], passing: Iterable[ToolCall]) -> None:
    """A handoff the graph's edges seemed to make is that of the ``passing`` tool call (one
    of :func:`turn_passing_tools`) that passed control there: named after it, ``via: tool``
    (each call names one handoff, in order)."""
    passing = [t for t in passing if t.kind == HANDOFF and t.target is not None]
    for handoff in handoffs:
        if handoff.via != "edge" or handoff.tool:
            continue
        for index, call in enumerate(passing):
            if call.agent == handoff.source and call.target == handoff.target:
                handoff.tool, handoff.via = call.name, "tool"
                del passing[index]  # by place: remove() would compare every call before it
                break


def _agent_graph(run: RunNode) -> RunNode | None:
    """The nearest graph run around ``run``: one whose children include its tasks."""
    current = run.parent
    while current is not None:
        for child in current.children:
            if child.is_task:
                return current
        current = current.parent
    return None


def _within(run: RunNode, ancestor: RunNode) -> bool:
    current: RunNode | None = run
    while current is not None:
        if current is ancestor:
            return True
        current = current.parent
    return False
