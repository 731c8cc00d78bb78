"""Messages in OpenAI chat format, as ``Trace.messages`` stores them.

LangChain's ``convert_to_openai_messages`` turns each message into its dicts on its own; on
a plain message (a human, AI or tool message of text) it reads half a dozen attributes,
yet it pays for a generic pass (coercion, type checks, a JSON encoder built for each tool
call). Plain messages are written here as it writes them; any other message, in runs of
consecutive ones, is left to LangChain, so each message's dicts are LangChain's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)

__all__ = ["openai_messages"]

# The exact types written here (a subclass, a system message, may be converted otherwise).
_ROLES: dict[type, str] = {HumanMessage: "user", AIMessage: "assistant", ToolMessage: "tool"}
# What json.dumps(args, ensure_ascii=False) uses, built once instead of at each call.
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False)


def openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """What ``convert_to_openai_messages(messages)`` returns (or raises: a message it
    refuses is refused as it would refuse it in the whole list)."""
    try:
        return _converted(messages)
    except Exception:  # raise LangChain's error, with the index it gives in the whole list
        return convert_to_openai_messages(messages)


def _converted(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    others: list[BaseMessage] = []  # consecutive messages that are not plain
    for message in messages:
        role = _ROLES.get(type(message))
        content = message.content
        if role is None or type(content) is not str or message.additional_kwargs.get("refusal"):
            others.append(message)
            continue
        if others:
            converted += convert_to_openai_messages(others)
            others = []
        # the keys in LangChain's order: role, name, tool_calls, tool_call_id, content
        form: dict[str, Any] = {"role": role}
        if message.name:
            form["name"] = message.name
        if role == "assistant":
            calls = message.tool_calls  # type: ignore[attr-defined]
            if calls:
                form["tool_calls"] = [_tool_call(call) for call in calls]
        elif role == "tool":
            form["tool_call_id"] = message.tool_call_id  # type: ignore[attr-defined]
        form["content"] = content
        converted.append(form)
    if others:
        converted += convert_to_openai_messages(others)
    return converted


def _tool_call(call: Any) -> dict[str, Any]:
    args = call["args"]
    # a call without arguments (a handoff tool's, most often) is "{}" as JSON
    arguments = "{}" if type(args) is dict and not args else _ARGUMENTS.encode(args)
    return {
        "type": "function",
        "id": call["id"],
        "function": {"name": call["name"], "arguments": arguments},
    }
