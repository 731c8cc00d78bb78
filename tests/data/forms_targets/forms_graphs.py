"""Graphs of every state shape, for targets declared with ``input:``, ``output:`` and
``config:`` (forms.yaml), and a function returning an OpenAI-format trajectory.

- ``qa_graph``: a TypedDict state without messages; answers in ``answer`` and says the
  type the customer id arrived as, so a test can see it was not turned into text.
- ``nested_graph``: a dataclass state whose answer is ``result["text"]``.
- ``memory_graph``: ``MessagesState`` compiled with an ``InMemorySaver``; each reply counts
  the messages the graph saw and repeats the ``user_id`` and ``recursion_limit`` of its
  config, so a test can see that examples never share a thread and that the config arrived.
- ``openai_target``: the trajectory of the openevals README, tool call without an id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph


class QAState(TypedDict, total=False):
    question: str
    customer: Any
    answer: str


def _answer(state: QAState) -> dict:
    customer = state["customer"]
    return {"answer": f"{type(customer).__name__} {customer} asked: {state['question']}"}


_qa = StateGraph(QAState)
_qa.add_node("answer", _answer)
_qa.add_edge(START, "answer")
qa_graph = _qa.compile()


@dataclass
class NestedState:
    query: str = ""
    tags: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


def _nested(state: NestedState) -> dict:
    return {"result": {"text": f"{state.query} [{', '.join(state.tags)}]"}}


_nested_builder = StateGraph(NestedState)
_nested_builder.add_node("answer", _nested)
_nested_builder.add_edge(START, "answer")
nested_graph = _nested_builder.compile()


def _remember(state: MessagesState, config: RunnableConfig) -> dict:
    seen = len(state["messages"])
    user = config["configurable"]["user_id"]
    limit = config["recursion_limit"]
    return {"messages": [AIMessage(f"{user} saw {seen} message(s), limit {limit}")]}


_memory = StateGraph(MessagesState)
_memory.add_node("remember", _remember)
_memory.add_edge(START, "remember")
memory_graph = _memory.compile(checkpointer=InMemorySaver())


def openai_target(inputs: dict) -> dict:
    return {
        "messages": [
            {"role": "user", "content": inputs["question"]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "function": {
                            "name": "get_weather",
                            "arguments": json.dumps({"city": "SF"}),
                        }
                    }
                ],
            },
            {"role": "tool", "content": "It's 80 degrees and sunny in SF."},
            {"role": "assistant", "content": "The weather in SF is 80 degrees and sunny."},
        ]
    }
