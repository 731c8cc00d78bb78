"""Skills a request loaded, and the agent a state key names: what a target declares
(``skill_tools:``, ``active_agent:``) read off what the recorder saw.

A *skill* is loaded by a call of a declared skill tool (LangChain's ``load_skill`` pattern:
one agent pulls a skill's instructions into its context on demand); the skill is the value
of the argument the target names for that tool, else of the call's first argument. Only a
call that succeeded loads its skill.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.records import ToolCall

__all__ = ["ActiveAgent", "active_value", "skills_loaded", "updated_value"]


@dataclass(frozen=True)
class ActiveAgent:
    """Where a target's agent at work is read from: a state ``key``, and the agent meant
    while the state does not hold it (``default``, None: the target's own agent)."""

    key: str
    default: str | None = None


def skills_loaded(calls: Iterable[ToolCall], tools: Mapping[str, str | None]) -> list[str]:
    """The skills the declared skill tools' calls named, in call order, each once. A call
    that failed or never ran loaded nothing."""
    found: dict[str, None] = {}
    for call in calls:
        if call.name not in tools or not call.succeeded:
            continue
        argument = tools[call.name]
        if argument is not None:
            value = call.args.get(argument)
        else:
            value = next(iter(call.args.values()), None)
        if isinstance(value, str) and value.strip():
            found.setdefault(value.strip(), None)
    return list(found)


def active_value(state: Any, key: str) -> str | None:
    """The agent a node's input state names under ``key``. create_agent's tool node gets
    each call with the state beside it (``{"__type": "tool_call_with_context", "state":
    ...}``): the key is read there."""
    if not isinstance(state, Mapping):
        return None
    if key not in state and isinstance(state.get("state"), Mapping):
        state = state["state"]
    value = state.get(key)
    return value if isinstance(value, str) and value else None


def updated_value(output: Any, key: str) -> str | None:
    """The agent a tool's ``Command(update={key: ...})`` (or state update) names."""
    update = getattr(output, "update", None) if type(output).__name__ == "Command" else output
    if isinstance(update, list | tuple):  # Command(update=[(key, value), ...])
        pairs = [item for item in update if isinstance(item, tuple) and len(item) == 2]
        update = dict(pairs)
    return active_value(update, key) if isinstance(update, Mapping) else None
