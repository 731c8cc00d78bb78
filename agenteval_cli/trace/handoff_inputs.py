"""What a model call was given, as text: enough to tell whether a handoff carried the
user's request (its human message, the facts a row lists) to the agent that received it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


def inputs_text(messages: Sequence[BaseMessage]) -> str:
    """Every message's text and every tool call's arguments, one per line."""
    parts: list[str] = []
    for message in messages:
        parts.append(_text(message))
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                parts.extend(_values(call.get("args")))
    return "\n".join(p for p in parts if p)


def last_human(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the last human message given, or None without one."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message) or None
    return None


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
    return "\n".join(texts)


def _values(args: Any) -> list[str]:
    """The strings in a tool call's arguments, nested ones included."""
    if isinstance(args, str):
        return [args]
    if isinstance(args, dict):
        return [v for value in args.values() for v in _values(value)]
    if isinstance(args, list):
        return [v for value in args for v in _values(value)]
    return [] if args is None else [str(args)]
