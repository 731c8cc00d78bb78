"""Forms whose inputs or outputs are not a ``messages`` state: a graph over
``{"query", "answer"}``, and a function that returns OpenAI-format messages whose tool calls
carry no ``id`` (openevals' README trajectory).
"""

from __future__ import annotations

import json
import threading
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from forms.model import form_model, text_of
from forms.policy import GREETING, call, called, needed, question, specialist


class QueryState(TypedDict, total=False):
    query: str
    answer: str


def build_query_graph(graph: str) -> Any:
    """``classifier`` reads ``query`` and sends it to the first specialist it names (or
    answers itself); each specialist adds its part to ``answer`` and passes on to the next."""
    agents = ("billing", "tech")
    classify = form_model(graph, "classifier", _classifier, large=True)
    models = {a: form_model(graph, a, specialist(a, use_tool=False)) for a in agents}

    def classifier(state: QueryState) -> Command:
        reply = classify.invoke([HumanMessage(state["query"])])
        want = needed(state["query"], agents)
        if want:
            return Command(goto=want[0])
        return Command(goto=END, update={"answer": text_of(reply)})

    def node(name: str) -> Any:
        def run(state: QueryState) -> Command:
            reply = models[name].invoke([HumanMessage(state["query"])])
            answer = " ".join(p for p in (state.get("answer"), text_of(reply)) if p)
            want = needed(state["query"], agents)
            rest = want[want.index(name) + 1 :]
            return Command(goto=rest[0] if rest else END, update={"answer": answer})

        return run

    builder = StateGraph(QueryState)
    builder.add_node("classifier", classifier, destinations=(*agents, END))
    for name in agents:
        builder.add_node(name, node(name), destinations=(*agents, END))
    builder.add_edge(START, "classifier")
    return builder.compile()


def _classifier(messages: list[BaseMessage]) -> AIMessage:
    want = needed(question(messages), ("billing", "tech"))
    return AIMessage("ROUTE: " + ",".join(want) if want else GREETING)


query_graph = build_query_graph("query_graph")


# -- openevals' README trajectory ---------------------------------------------------------

WEATHER = "It's 80 degrees and sunny in {city}."


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return WEATHER.format(city=city)


def _weather(messages: list[BaseMessage]) -> AIMessage:
    asked = question(messages)
    if "weather" not in asked.lower():
        return AIMessage("Hello! Ask me about the weather.")
    city = "SF" if "SF" in asked else "NYC"
    if not called(messages, "get_weather"):
        return call("get_weather", {"city": city})
    return AIMessage(f"The weather in {city} is 80 degrees and sunny.")


weather_agent = create_agent(
    form_model("openai_trajectory", "weather", _weather), [get_weather], name="weather"
)

RETURNED: dict[str, list[dict[str, Any]]] = {}  # question -> the messages the function returned
_returned_lock = threading.Lock()


def openai_without_ids(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """OpenAI-format messages as openevals' README writes them: no ids anywhere."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, HumanMessage):
            out.append({"role": "user", "content": text_of(m)})
        elif isinstance(m, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": text_of(m)}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {"function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                    for c in m.tool_calls
                ]
            out.append(entry)
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "content": text_of(m)})
    return out


def openai_trajectory(inputs: dict) -> dict:
    """Runs the weather agent and returns its conversation in OpenAI form, ids left out."""
    result = weather_agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    messages = openai_without_ids(result["messages"])
    with _returned_lock:
        RETURNED[inputs["question"]] = messages
    return {"messages": messages}
