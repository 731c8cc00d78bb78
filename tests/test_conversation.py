"""Messages found in state updates, and the merged conversation they make."""

from __future__ import annotations

from types import SimpleNamespace

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from agenteval_cli.trace.conversation import Conversation, state_messages


class TaggedAIMessage(AIMessage):
    """A subclass, as providers define: still an AI message."""


def test_a_list_of_messages_only_is_returned_as_it_is() -> None:
    messages = [HumanMessage("hi"), TaggedAIMessage("hello")]
    assert state_messages({"messages": messages}) is messages


def test_other_values_in_a_state_list_are_left_out() -> None:
    question, answer = HumanMessage("hi"), AIMessage("hello")
    found = state_messages({"messages": [question, {"role": "user"}, "text", answer]})
    assert found == [question, answer]


def test_single_message_command_and_list_of_updates() -> None:
    question, result = HumanMessage("hi"), ToolMessage("ok", tool_call_id="c1")
    assert state_messages({"messages": question}) == [question]
    command = type("Command", (), {"update": {"messages": [result]}})()
    assert state_messages(command) == [result]
    updates = [{"messages": [question]}, question, {"messages": [result]}]
    assert state_messages(updates) == [question, result]  # bare messages are no update
    assert state_messages([question, result]) == []
    assert state_messages({"other": 1}) == []
    assert state_messages(SimpleNamespace(update={"messages": [result]})) == []


def test_prompts_are_left_out_and_state_system_messages_kept() -> None:
    conversation = Conversation()
    prompt, kept = SystemMessage("You are billing."), SystemMessage("Policy", id="s1")
    question = HumanMessage("Where is my refund?", id="h1")
    assert conversation.merge([prompt, kept, question]) == [kept, question]
    assert [m["role"] for m in conversation.openai_messages()] == ["system", "user"]


def test_an_id_given_later_makes_copies_known() -> None:
    conversation = Conversation()
    answer = AIMessage("Refund sent.")
    conversation.merge([HumanMessage("refund?", id="h1"), answer])
    answer.id = "a1"  # LangGraph ids a message as it enters the state
    conversation.merge([answer])  # the same object, seen again with its id
    copy = AIMessage("Refund sent.", id="a1")  # another object, known only by that id
    assert conversation.merge([copy]) == []
    later = AIMessage("Anything else?", id="a2")
    assert conversation.merge([copy, later]) == [later]
    assert [m["content"] for m in conversation.openai_messages()] == [
        "refund?",
        "Refund sent.",
        "Anything else?",
    ]
