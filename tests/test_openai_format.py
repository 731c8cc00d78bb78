"""The direct conversion gives exactly what langchain_core's converter gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)

from agenteval_cli.trace.openai_format import to_openai_messages

CALL = {"name": "lookup_invoice", "args": {"invoice_id": "INV-7", "note": "café ✓"}, "id": "c1"}
MESSAGES: list[Any] = [
    HumanMessage("Where is my refund?"),
    HumanMessage("hi", name="customer", id="h1"),
    SystemMessage("You are billing."),
    SystemMessage("be brief", additional_kwargs={"__openai_role__": "developer"}),
    AIMessage("", tool_calls=[CALL], name="billing"),
    AIMessage("Two calls.", tool_calls=[CALL, {**CALL, "id": "c2", "args": {}}]),
    AIMessage("I can't help with that.", additional_kwargs={"refusal": "policy"}),
    AIMessage("plain", additional_kwargs={"refusal": None}),
    AIMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
    AIMessage(["bare", {"type": "text", "text": "block"}]),
    AIMessageChunk(content="streamed"),
    ToolMessage("Invoice INV-7: paid", tool_call_id="c1", name="lookup_invoice"),
    ToolMessage("", tool_call_id="c2"),
    ChatMessage(content="custom", role="critic"),
    {"role": "user", "content": "a dict"},
    ("assistant", "a tuple"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_message_converts_like_langchain(message: Any) -> None:
    expected = convert_to_openai_messages([message])
    converted = to_openai_messages([message])
    assert converted == expected
    # Key order too: stored traces are JSON text, compared across runs.
    assert json.dumps(converted) == json.dumps(expected)


def test_a_whole_conversation_converts_like_langchain() -> None:
    assert to_openai_messages(MESSAGES) == convert_to_openai_messages(MESSAGES)
    assert to_openai_messages([]) == []


def test_tool_call_arguments_keep_non_ascii_text() -> None:
    [converted] = to_openai_messages([AIMessage("", tool_calls=[CALL])])
    assert converted["tool_calls"][0]["function"]["arguments"] == (
        '{"invoice_id": "INV-7", "note": "café ✓"}'
    )
