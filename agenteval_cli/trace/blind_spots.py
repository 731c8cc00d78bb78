"""Forms that switch agents without naming them, found by their signature so a trace says
so instead of scoring one agent where there were several.

- **Handoffs by state, undeclared**: a tool's ``Command(update={key: value})`` sets a state
  key other than the messages, and the next model call of the same agent gets another system
  prompt or another tool set (middleware read the key). Declaring
  ``active_agent: {key: ...}`` in the target names the agents.
- **Unnamed sub-agents**: a tool whose call runs a chat model inside a graph that no agent
  name marks (a ``task(agent_name, ...)`` dispatcher over ``create_agent`` graphs built
  without ``name=``): the sub-agent's calls would be counted as the caller's own.

Each gives the reason, with what to declare, that ``Trace.unattributed`` carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.trace.attribution import RunNode

__all__ = ["ModelSeen", "ToolSeen", "blind_spot", "model_prompt", "model_tools", "state_keys_set"]


@dataclass(frozen=True)
class ModelSeen:
    """A model run with what it was given: its system prompt and the tools bound to it."""

    run: RunNode
    prompt: str | None
    tools: tuple[str, ...]


@dataclass
class ToolSeen:
    """A tool run, the model run that asked for it (if any), and the state keys its
    ``Command`` set (other than the messages) with their values."""

    name: str
    run: RunNode
    origin: RunNode | None
    keys: dict[str, str] = field(default_factory=dict)


def state_keys_set(output: Any) -> dict[str, str]:
    """The state keys a tool's ``Command(update=...)`` sets to a text, messages left out."""
    if type(output).__name__ != "Command":
        return {}
    update = getattr(output, "update", None)
    if isinstance(update, list | tuple):  # Command(update=[(key, value), ...])
        update = dict(item for item in update if isinstance(item, tuple) and len(item) == 2)
    if not isinstance(update, Mapping):
        return {}
    return {
        str(key): value
        for key, value in update.items()
        if key != "messages" and not str(key).startswith("__") and isinstance(value, str)
    }


def model_prompt(messages: Sequence[Any]) -> str | None:
    """The text of the system message a model call opened with, if any."""
    for message in messages:
        if getattr(message, "type", None) == "system":
            content = getattr(message, "content", "")
            return content if isinstance(content, str) else repr(content)
    return None


def model_tools(params: Any) -> tuple[str, ...]:
    """The names of the tools bound to a model call (its invocation parameters' ``tools``,
    OpenAI's ``{"function": {"name"}}`` form or a plain ``{"name"}``), sorted."""
    tools = params.get("tools") if isinstance(params, Mapping) else None
    names: set[str] = set()
    for tool in tools if isinstance(tools, list | tuple) else ():
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            if isinstance(name, str):
                names.add(name)
    return tuple(sorted(names))


def blind_spot(
    models: Sequence[ModelSeen],
    tools: Sequence[ToolSeen],
    paths: Mapping[int, list[str]],
    delegations: Mapping[int, str],
    *,
    declared_key: str | None,
) -> str | None:
    """Why the agents of a request cannot be told apart, with what to declare; None when
    nothing says they switched unseen. ``paths`` and ``delegations`` are the attribution's
    (by ``id()`` of a run)."""
    for tool in tools:
        key = _state_handoff(tool, models, paths, declared_key) if tool.keys else None
        if key is not None:
            return (
                f"tool {tool.name!r} sets the state key {key!r} and the model's system prompt "
                f"or tools change with it; declare it in the target: active_agent: {{key: {key}}}"
            )
    for tool in tools:
        if id(tool.run) not in delegations and _runs_unnamed_agent(tool.run, paths):
            return (
                f"tool {tool.name!r} runs a chat model in a graph with no agent name; name the "
                "sub-agents it runs (create_agent(name=...), create_react_agent(name=...))"
            )
    return None


def _state_handoff(
    tool: ToolSeen,
    models: Sequence[ModelSeen],
    paths: Mapping[int, list[str]],
    declared_key: str | None,
) -> str | None:
    """The key through which ``tool`` switched its agent's role, if it did: the next model
    call of the agent that asked for it was given another prompt or tool set."""
    keys = [key for key in tool.keys if key != declared_key]
    if not keys or tool.origin is None or tool.run.end is None:
        return None
    asking = next((m for m in models if m.run is tool.origin), None)
    if asking is None:
        return None
    path = paths.get(id(asking.run))
    after = (m for m in models if m.run.seq > (tool.run.end or 0) and paths.get(id(m.run)) == path)
    following = min(after, key=lambda m: m.run.seq, default=None)
    if following is None:
        return None
    if (following.prompt, following.tools) == (asking.prompt, asking.tools):
        return None
    return keys[0]


def _runs_unnamed_agent(tool: RunNode, paths: Mapping[int, list[str]]) -> bool:
    """A model call inside a graph run within ``tool`` that opened no agent level of its
    own (its agent path is the tool's)."""
    mine = paths.get(id(tool))
    stack = [(child, False) for child in tool.children]
    while stack:
        run, in_graph = stack.pop()
        if run.kind == "model" and in_graph and paths.get(id(run)) == mine:
            return True
        if not in_graph:
            for child in run.children:
                if child.is_task:  # a graph's run: its children include its tasks
                    in_graph = True
                    break
        stack.extend([(child, in_graph) for child in run.children])
    return False
