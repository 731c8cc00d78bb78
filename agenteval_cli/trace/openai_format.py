"""LangChain messages in OpenAI chat format, as ``convert_to_openai_messages`` gives them.

Every traced request stores its conversation this way, and a graph target's outputs hold
its final messages this way. langchain_core's converter handles every content-block
dialect, at some 5 µs a message; the messages graphs pass around are nearly all plain
text, which :func:`to_openai_messages` converts directly, leaving the rest to it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)

__all__ = ["to_openai_messages"]

# json.dumps(value, ensure_ascii=False), without building an encoder per call.
_json_text = json.JSONEncoder(ensure_ascii=False).encode

# Exact types only: subclasses (chunks, say) may carry what the converter looks at.
_ROLES: dict[type, str] = {
    HumanMessage: "user",
    AIMessage: "assistant",
    ToolMessage: "tool",
    SystemMessage: "system",
}


def to_openai_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """``convert_to_openai_messages(messages)``, the same dicts with keys in the same order.

    Messages may be message-likes (dicts, tuples) too, which the converter takes as ever.
    """
    converted: list[dict[str, Any]] = []
    for message in messages:
        role = _ROLES.get(type(message))  # None for anything else, dicts and tuples too
        if role is None or not _plain(message):
            converted.extend(convert_to_openai_messages([message]))
            continue
        content = message.content
        oai: dict[str, Any] = {"role": role}
        if message.name:
            oai["name"] = message.name
        if isinstance(message, AIMessage) and message.tool_calls:
            oai["tool_calls"] = [
                {
                    "type": "function",
                    "id": call["id"],
                    "function": {
                        "name": call["name"],
                        "arguments": _json_text(call["args"]),
                    },
                }
                for call in message.tool_calls
            ]
        elif isinstance(message, ToolMessage):
            oai["tool_call_id"] = message.tool_call_id
        oai["content"] = content
        converted.append(oai)
    return converted


def _plain(message: BaseMessage) -> bool:
    """Text content, and none of the extras the converter maps (refusal, a custom role)."""
    extra = message.additional_kwargs
    return type(message.content) is str and not (
        extra and ("refusal" in extra or "__openai_role__" in extra)
    )
