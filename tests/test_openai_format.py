"""Messages are stored in OpenAI chat format exactly as langchain_core converts them:
outputs' messages and a trace's conversation alike."""

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

from agenteval_cli.targets.outputs import stored_messages
from agenteval_cli.trace.conversation import Conversation
from agenteval_cli.trace.openai_form import openai_messages

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
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_stored_message_is_langchains_conversion(message: Any) -> None:
    expected = convert_to_openai_messages([message])
    converted = stored_messages([message])
    assert converted == expected
    # Key order too: stored traces are JSON text, compared across runs.
    assert json.dumps(converted) == json.dumps(expected)


def test_message_likes_and_openai_dicts_among_message_objects() -> None:
    mixed = [*MESSAGES, {"role": "user", "content": "a dict"}, ("assistant", "a tuple")]
    assert stored_messages(mixed) == convert_to_openai_messages(mixed)
    assert stored_messages([]) == []


def test_a_traced_conversation_is_stored_as_langchain_converts_it() -> None:
    turns = [
        HumanMessage("Where is my refund?", id="m1"),
        AIMessage("", tool_calls=[CALL], name="billing", id="m2"),
        ToolMessage("Invoice INV-7: paid", tool_call_id="c1", name="lookup_invoice", id="m3"),
        AIMessage("It was paid on Monday.", name="billing", id="m4"),
    ]
    conversation = Conversation()
    conversation.merge(turns)
    assert conversation.openai_messages() == convert_to_openai_messages(turns)


def test_tool_calls_keep_non_ascii_arguments_and_a_missing_id() -> None:
    no_id = {"name": "lookup_invoice", "args": {"note": "café ✓"}, "id": None}
    [converted] = stored_messages([AIMessage("", tool_calls=[no_id])])
    [call] = converted["tool_calls"]
    assert call["function"]["arguments"] == '{"note": "café ✓"}'
    assert call["id"] is None


def test_a_mixed_conversation_is_converted_as_langchain_converts_it_whole() -> None:
    # plain messages written directly, between runs of others LangChain converts
    mixed = [*MESSAGES, HumanMessage("¿dónde?", id="h2"), *reversed(MESSAGES)]
    expected = convert_to_openai_messages(mixed)
    converted = openai_messages(mixed)
    assert converted == expected
    assert json.dumps(converted) == json.dumps(expected)
    assert openai_messages([]) == []


def test_a_message_langchain_refuses_fails_as_in_the_whole_list() -> None:
    broken = HumanMessage([{"type": "image_url"}])  # an image block without its image
    messages = [HumanMessage("hi"), AIMessage("ok"), broken]
    with pytest.raises(ValueError) as expected:
        convert_to_openai_messages(messages)
    with pytest.raises(ValueError) as raised:
        openai_messages(messages)
    assert "messages[2]" in str(expected.value)
    assert str(raised.value) == str(expected.value)
