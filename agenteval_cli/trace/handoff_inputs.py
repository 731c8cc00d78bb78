"""What a model call was given, as text: enough to tell whether a handoff carried the
user's request (its human message, the facts a row lists) to the agent that received it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


def inputs_text(messages: Sequence[BaseMessage]) -> str:
    """Every message's text and every tool call's arguments, one per line (empty ones left
    out)."""
    parts: list[str] = []
    for message in messages:
        content = message.content
        text = content if type(content) is str else _text(message)
        if text:
            parts.append(text)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = call.get("args")
                if type(args) is not dict or args:  # a call without arguments adds nothing
                    _add_values(args, parts)
    return "\n".join(parts)


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


def _add_values(args: Any, parts: list[str]) -> None:
    """Add the strings in a tool call's arguments, nested ones included, to ``parts``."""
    if isinstance(args, str):
        if args:
            parts.append(args)
    elif isinstance(args, dict):
        for value in args.values():
            _add_values(value, parts)
    elif isinstance(args, list):
        for value in args:
            _add_values(value, parts)
    elif args is not None:
        text = str(args)
        if text:
            parts.append(text)
