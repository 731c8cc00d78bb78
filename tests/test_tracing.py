"""Traces recorded by callbacks from real langgraph-supervisor and langgraph-swarm graphs."""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Annotated, Any

import pytest
from fakes import ScriptedChatModel, reply, scripted
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm
from openevals.trajectory.match import create_trajectory_match_evaluator
from typing_extensions import TypedDict

from agenteval_cli.core.records import Handoff, Trace
from agenteval_cli.trace.recorder import TraceRecorder, agent_from_metadata, capture, error_text

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

# create_react_agent is deprecated in langgraph 1.x, yet langgraph-supervisor builds on it.
pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look an invoice up."""
    return f"Invoice {invoice_id}: paid"


@tool("get_weather")
def broken_weather(city: str) -> str:
    """Current weather for a city, from a service that is down."""
    raise ValueError(f"weather service down for {city}")


def react_agent(model: ScriptedChatModel, tools: list[Any], name: str) -> Any:
    return create_react_agent(model, tools=tools, name=name, prompt=f"You are {name}.")


def supervisor_graph(*, weather_tool: Any = get_weather, **options: Any) -> Any:
    """Supervisor routes to weather_agent, which calls a tool, answers and is handed back."""
    weather = react_agent(
        scripted(
            "weather-model",
            reply(tools=[("get_weather", {"city": "SF"})], tokens=(10, 5)),
            reply("It is sunny in SF.", tokens=(20, 3)),
        ),
        [weather_tool],
        "weather_agent",
    )
    billing = react_agent(scripted("billing-model"), [lookup_invoice], "billing_agent")
    prefix = options.get("handoff_tool_prefix") or "transfer_to_"
    supervisor = scripted(
        "supervisor-model",
        reply(tools=[(f"{prefix}weather_agent", {})], tokens=(7, 2)),
        reply("Final: sunny in SF.", tokens=(30, 4)),
    )
    return create_supervisor([weather, billing], model=supervisor, **options).compile()


def swarm_graph(*, delay_s: float = 0.0, tag: str = "") -> Any:
    """front_desk -> billing_Bob (looks an invoice up) -> front_desk answers."""
    front = react_agent(
        scripted(
            f"front-model{tag}",
            reply(tools=[("transfer_to_billing_bob", {})], tokens=(3, 1)),
            reply("Your invoice is paid.", tokens=(9, 6)),
            delay_s=delay_s,
        ),
        [create_handoff_tool(agent_name="billing_Bob")],
        "front_desk",
    )
    bob = react_agent(
        scripted(
            f"bob-model{tag}",
            reply(tools=[("lookup_invoice", {"invoice_id": "INV-1"})], tokens=(5, 2)),
            reply(tools=[("transfer_to_front_desk", {})], tokens=(8, 1)),
            delay_s=delay_s,
        ),
        [lookup_invoice, create_handoff_tool(agent_name="front_desk")],
        "billing_Bob",
    )
    return create_swarm([front, bob], default_active_agent="front_desk").compile()


def ask(question: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(question)]}


def roles(trace: Trace) -> list[str]:
    return [m["role"] for m in trace.messages]


SUPERVISOR_ROLES = [
    "user",
    "assistant",  # supervisor -> transfer_to_weather_agent
    "tool",
    "assistant",  # weather_agent -> get_weather (only in the inner conversation)
    "tool",
    "assistant",  # weather_agent answers
    "assistant",  # transfer_back_to_supervisor, synthesized by langgraph-supervisor
    "tool",
    "assistant",  # supervisor's final answer
]


def assert_supervisor_trace(trace: Trace) -> None:
    assert trace.error is None
    assert trace.agent_path == ["supervisor", "weather_agent", "supervisor"]
    assert trace.handoffs == [
        Handoff("supervisor", "weather_agent", "transfer_to_weather_agent"),
        # the supervisor regains control by the graph's edge; the message pair names it
        Handoff("weather_agent", "supervisor", "transfer_back_to_supervisor", "edge", after=[0]),
    ]
    assert [(t.agent, t.name, t.args, t.output) for t in trace.tool_calls] == [
        (
            "supervisor",
            "transfer_to_weather_agent",
            {},
            "Successfully transferred to weather_agent",
        ),
        ("weather_agent", "get_weather", {"city": "SF"}, "Sunny in SF"),
        (
            "weather_agent",
            "transfer_back_to_supervisor",
            {},
            "Successfully transferred back to supervisor",
        ),
    ]
    assert [(c.agent, c.model) for c in trace.model_calls] == [
        ("supervisor", "supervisor-model"),
        ("weather_agent", "weather-model"),
        ("weather_agent", "weather-model"),
        ("supervisor", "supervisor-model"),
    ]
    assert trace.tokens == {
        "supervisor-model": {"input": 37, "output": 6, "total": 43},
        "weather-model": {"input": 30, "output": 8, "total": 38},
    }
    assert roles(trace) == SUPERVISOR_ROLES
    assert trace.messages[-1]["content"] == "Final: sunny in SF."
    assert trace.latency_s > 0


def test_supervisor_graph_with_recorder_in_config() -> None:
    recorder = TraceRecorder()
    result = supervisor_graph().invoke(ask("Weather in SF?"), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert_supervisor_trace(trace)
    # The graph's own final state lost the specialist's tool call; the trace did not.
    assert len(result["messages"]) == 7
    calls = trace.messages[3]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert Trace.from_dict(trace.to_dict()) == trace


def test_supervisor_trace_feeds_openevals_trajectory_match() -> None:
    recorder = TraceRecorder()
    result = supervisor_graph().invoke(ask("Weather in SF?"), config={"callbacks": [recorder]})
    reference = [
        {"role": "user", "content": "Weather in SF?"},
        {"role": "assistant", "tool_calls": [{"name": "transfer_to_weather_agent", "args": {}}]},
        {"role": "tool", "content": "ok"},
        {"role": "assistant", "tool_calls": [{"name": "get_weather", "args": {"city": "SF"}}]},
    ]
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="superset")
    assert evaluator(outputs=recorder.trace().messages, reference_outputs=reference)["score"]
    # The final state alone misses the specialist's get_weather call and fails the match.
    assert not evaluator(outputs=result["messages"], reference_outputs=reference)["score"]


def test_swarm_graph_path_handoffs_and_tools() -> None:
    recorder = TraceRecorder()
    swarm_graph().invoke(ask("Is INV-1 paid?"), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert trace.agent_path == ["front_desk", "billing_Bob", "front_desk"]
    assert trace.handoffs == [
        Handoff("front_desk", "billing_Bob", "transfer_to_billing_bob"),
        Handoff("billing_Bob", "front_desk", "transfer_to_front_desk", after=[0]),
    ]
    assert [(t.agent, t.name, t.args) for t in trace.tool_calls] == [
        ("front_desk", "transfer_to_billing_bob", {}),
        ("billing_Bob", "lookup_invoice", {"invoice_id": "INV-1"}),
        ("billing_Bob", "transfer_to_front_desk", {}),
    ]
    assert trace.tool_calls[1].output == "Invoice INV-1: paid"
    assert len(trace.model_calls) == 4
    assert trace.tokens == {
        "front-model": {"input": 12, "output": 7, "total": 19},
        "bob-model": {"input": 13, "output": 3, "total": 16},
    }
    assert roles(trace) == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert trace.messages[-1] == {
        "role": "assistant",
        "name": "front_desk",
        "content": "Your invoice is paid.",
    }


# -- capture(): plain-function targets that never pass a config ---------------------------


def test_capture_sync_function_calling_invoke() -> None:
    graph = supervisor_graph()

    def supervisor_target(inputs: dict[str, Any]) -> dict[str, Any]:
        result = graph.invoke({"messages": [HumanMessage(inputs["question"])]})
        return {"final_response": result["messages"][-1].content}

    with capture() as recorder:
        outputs = supervisor_target({"question": "Weather in SF?"})
    assert outputs == {"final_response": "Final: sunny in SF."}
    assert_supervisor_trace(recorder.trace())


def test_capture_async_function_calling_ainvoke() -> None:
    graph = supervisor_graph()

    async def supervisor_target(inputs: dict[str, Any]) -> dict[str, Any]:
        result = await graph.ainvoke({"messages": [HumanMessage(inputs["question"])]})
        return {"final_response": result["messages"][-1].content}

    async def run() -> Trace:
        with capture() as recorder:
            await supervisor_target({"question": "Weather in SF?"})
        return recorder.trace()

    assert_supervisor_trace(asyncio.run(run()))


def test_capture_follows_asyncio_to_thread() -> None:
    graph = supervisor_graph()
    threads: set[int] = set()

    def supervisor_target(inputs: dict[str, Any]) -> dict[str, Any]:
        threads.add(threading.get_ident())
        return graph.invoke({"messages": [HumanMessage(inputs["question"])]})

    async def run() -> Trace:
        with capture() as recorder:
            await asyncio.to_thread(supervisor_target, {"question": "Weather in SF?"})
        return recorder.trace()

    assert_supervisor_trace(asyncio.run(run()))
    assert threading.get_ident() not in threads


def test_recorder_in_config_and_capture_records_each_event_once() -> None:
    with capture() as recorder:
        supervisor_graph().invoke(ask("Weather in SF?"), config={"callbacks": [recorder]})
    assert_supervisor_trace(recorder.trace())  # 4 model calls and 3 tool calls, not doubled


def test_capture_stops_at_the_end_of_the_block() -> None:
    with capture() as recorder:
        pass
    swarm_graph().invoke(ask("Is INV-1 paid?"))
    trace = recorder.trace()
    assert (trace.model_calls, trace.tool_calls, trace.messages, trace.error) == ([], [], [], None)


def test_concurrent_captures_in_tasks_do_not_mix() -> None:
    async def one(tag: str) -> Trace:
        graph = swarm_graph(delay_s=0.01, tag=tag)
        with capture() as recorder:
            await graph.ainvoke(ask(f"Is INV-{tag} paid?"))
        return recorder.trace()

    async def both() -> list[Trace]:
        return list(await asyncio.gather(one("A"), one("B")))

    for tag, trace in zip("AB", asyncio.run(both()), strict=True):
        assert sorted(trace.tokens) == [f"bob-model{tag}", f"front-model{tag}"]
        assert trace.agent_path == ["front_desk", "billing_Bob", "front_desk"]
        assert (len(trace.model_calls), len(trace.tool_calls), len(trace.messages)) == (4, 3, 8)
        assert trace.messages[0] == {"role": "user", "content": f"Is INV-{tag} paid?"}


# -- failures -----------------------------------------------------------------------------


def test_raising_tool_is_the_request_error() -> None:
    graph = supervisor_graph(weather_tool=broken_weather)
    with pytest.raises(ValueError), capture() as recorder:
        graph.invoke(ask("Weather in SF?"))
    trace = recorder.trace()
    assert trace.error == "ValueError: weather service down for SF"
    assert trace.agent_path == ["supervisor", "weather_agent"]
    assert [(t.name, t.output) for t in trace.tool_calls] == [
        ("transfer_to_weather_agent", "Successfully transferred to weather_agent"),
        ("get_weather", "ValueError: weather service down for SF"),
    ]


def test_raising_model_is_the_request_error_without_capture() -> None:
    weather = react_agent(
        scripted("weather-model", RuntimeError("rate limited")), [], "weather_agent"
    )
    supervisor = scripted(
        "supervisor-model", reply(tools=[("transfer_to_weather_agent", {})], tokens=(7, 2))
    )
    graph = create_supervisor([weather], model=supervisor).compile()
    recorder = TraceRecorder()
    with pytest.raises(RuntimeError):
        graph.invoke(ask("Weather in SF?"), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert trace.error == "RuntimeError: rate limited"  # from the root run's error event
    assert [(c.agent, c.input_tokens, c.output_tokens) for c in trace.model_calls] == [
        ("supervisor", 7, 2),
        ("weather_agent", None, None),  # it raised: it never said what it used
    ]
    # the failed call shows the agent was reached; it answered nothing, so it costs nothing
    assert [c.failed for c in trace.model_calls] == [False, True]
    assert trace.tokens == {"supervisor-model": {"input": 7, "output": 2, "total": 9}}
    assert trace.handoffs == [Handoff("supervisor", "weather_agent", "transfer_to_weather_agent")]


def test_timeout_is_recorded_with_the_call_in_flight() -> None:
    graph = swarm_graph(delay_s=5.0)

    async def run() -> Trace:
        with pytest.raises(TimeoutError), capture() as recorder:
            await asyncio.wait_for(graph.ainvoke(ask("Is INV-1 paid?")), timeout=0.05)
        return recorder.trace()

    trace = asyncio.run(run())
    assert trace.error == "TimeoutError"
    assert [(c.agent, c.model, c.input_tokens) for c in trace.model_calls] == [
        ("front_desk", "front-model", None)  # cut off: no usage was reported
    ]
    assert trace.model_calls[0].latency_s > 0
    assert roles(trace) == ["user"]


# -- naming agents, handoffs and models ----------------------------------------------------


def test_custom_handoff_prefix_and_supervisor_name() -> None:
    recorder = TraceRecorder()
    graph = supervisor_graph(handoff_tool_prefix="delegate_to_", supervisor_name="triage_lead")
    graph.invoke(ask("Weather in SF?"), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert trace.agent_path == ["triage_lead", "weather_agent", "triage_lead"]
    assert trace.handoffs == [
        Handoff("triage_lead", "weather_agent", "delegate_to_weather_agent"),
        Handoff("weather_agent", "triage_lead", "transfer_back_to_triage_lead", "edge", after=[0]),
    ]


def test_two_delegations_with_reused_tool_call_ids() -> None:
    """Some models reuse tool-call ids; each call, result and handoff-back pair still counts."""
    weather = react_agent(
        scripted(
            "weather-model",
            reply(tools=[("get_weather", {"city": "SF"}, "call_1")]),
            reply("Sunny in SF."),
        ),
        [get_weather],
        "weather_agent",
    )
    billing = react_agent(
        scripted(
            "billing-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "INV-9"}, "call_1")]),
            reply("INV-9 is paid."),
        ),
        [lookup_invoice],
        "billing_agent",
    )
    supervisor = scripted(
        "supervisor-model",
        reply(tools=[("transfer_to_weather_agent", {}, "call_1")]),
        reply(tools=[("transfer_to_billing_agent", {}, "call_1")]),
        reply("Sunny, and INV-9 is paid."),
    )
    graph = create_supervisor([weather, billing], model=supervisor).compile()
    with capture() as recorder:
        graph.invoke(ask("Weather in SF, and is INV-9 paid?"))
    trace = recorder.trace()
    assert trace.agent_path == [
        "supervisor",
        "weather_agent",
        "supervisor",
        "billing_agent",
        "supervisor",
    ]
    assert [(h.source, h.target) for h in trace.handoffs] == [
        ("supervisor", "weather_agent"),
        ("weather_agent", "supervisor"),
        ("supervisor", "billing_agent"),
        ("billing_agent", "supervisor"),
    ]
    assert [(t.name, t.output) for t in trace.tool_calls] == [
        ("transfer_to_weather_agent", "Successfully transferred to weather_agent"),
        ("get_weather", "Sunny in SF"),
        ("transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
        ("transfer_to_billing_agent", "Successfully transferred to billing_agent"),
        ("lookup_invoice", "Invoice INV-9: paid"),
        ("transfer_back_to_supervisor", "Successfully transferred back to supervisor"),
    ]
    delegation = ["assistant", "tool", "assistant", "tool", "assistant", "assistant", "tool"]
    assert roles(trace) == ["user", *delegation, *delegation, "assistant"]


def test_history_in_the_input_is_kept_but_not_counted_again() -> None:
    history = [
        HumanMessage("Weather in LA?"),
        AIMessage(
            "",
            name="supervisor",
            tool_calls=[{"name": "transfer_to_weather_agent", "args": {}, "id": "old-1"}],
        ),
        ToolMessage("Successfully transferred to weather_agent", tool_call_id="old-1"),
        AIMessage("Sunny in LA.", name="supervisor"),
        HumanMessage("And in SF?"),
    ]
    recorder = TraceRecorder()
    supervisor_graph().invoke({"messages": history}, config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert len(trace.handoffs) == 2 and len(trace.tool_calls) == 3
    assert roles(trace) == ["user", "assistant", "tool", "assistant", *SUPERVISOR_ROLES]
    assert [m["content"] for m in trace.messages[:5]] == [
        "Weather in LA?",
        "",
        "Successfully transferred to weather_agent",
        "Sunny in LA.",
        "And in SF?",
    ]


@tool
def transfer_to_savings(amount: int) -> str:
    """Move money to the savings account (a banking tool, not a handoff)."""
    return f"moved {amount}"


@tool
def transfer_to_billing_team() -> str:
    """Hand-written handoff tool without handoff metadata; the graph routes by edges."""
    return "billing team notified"


def test_handoff_target_is_matched_against_agents_seen() -> None:
    front = react_agent(
        scripted(
            "front-model",
            reply(tools=[("transfer_to_savings", {"amount": 5})]),
            reply(tools=[("transfer_to_billing_team", {})]),
            reply("Passing you on."),
        ),
        [transfer_to_savings, transfer_to_billing_team],
        "front_desk",
    )
    billing = react_agent(scripted("billing-model", reply("Billing here.")), [], "billing_team")
    graph = (
        StateGraph(MessagesState)
        .add_node("front_desk", front)
        .add_node("billing_team", billing)
        .add_edge(START, "front_desk")
        .add_edge("front_desk", "billing_team")
        .add_edge("billing_team", END)
        .compile()
    )
    recorder = TraceRecorder()
    graph.invoke(ask("Move 5 to savings, then billing please."), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert trace.agent_path == ["front_desk", "billing_team"]
    assert [(t.name, t.args, t.output) for t in trace.tool_calls] == [
        ("transfer_to_savings", {"amount": 5}, "moved 5"),
        ("transfer_to_billing_team", {}, "billing team notified"),
    ]
    # Both tools are ordinary tools (they return text): the graph's edge passed control,
    # whatever the second tool's name says.
    assert trace.handoffs == [Handoff("front_desk", "billing_team", "", "edge")]
    assert [t.kind for t in trace.tool_calls] == ["tool", "tool"]


class _ParallelState(TypedDict):
    messages: Annotated[list[Any], add_messages]


def test_parallel_branches_of_a_sync_graph() -> None:
    threads: set[int] = set()
    weather_model = scripted(
        "weather-model",
        reply(tools=[("get_weather", {"city": "SF"}), ("get_weather", {"city": "NY"})]),
        reply("SF and NY are sunny.", tokens=(4, 4)),
    )
    weather = react_agent(weather_model, [get_weather], "weather_agent")
    news_model = scripted("news-model", reply("No news.", tokens=(2, 1)))

    def news_desk(state: _ParallelState) -> dict[str, Any]:
        threads.add(threading.get_ident())
        return {"messages": [news_model.invoke(state["messages"])]}

    graph = (
        StateGraph(_ParallelState)
        .add_node("weather_agent", weather)
        .add_node("news_desk", news_desk)
        .add_edge(START, "weather_agent")
        .add_edge(START, "news_desk")
        .compile()
    )
    recorder = TraceRecorder()
    graph.invoke(ask("Weather and news?"), config={"callbacks": [recorder]})
    trace = recorder.trace()
    assert sorted((c.agent, c.model) for c in trace.model_calls) == [
        ("news_desk", "news-model"),
        ("weather_agent", "weather-model"),
        ("weather_agent", "weather-model"),
    ]
    assert sorted((t.args["city"], t.output) for t in trace.tool_calls) == [
        ("NY", "Sunny in NY"),
        ("SF", "Sunny in SF"),
    ]
    assert sorted(roles(trace)) == ["assistant"] * 3 + ["tool"] * 2 + ["user"]
    assert trace.tokens["news-model"] == {"input": 2, "output": 1, "total": 3}


def test_bare_model_call_is_its_own_agent() -> None:
    model = scripted("plain-model", reply("Hello.", tokens=(3, 2)))
    with capture() as recorder:
        model.invoke([HumanMessage("Hi")])
    trace = recorder.trace()
    assert trace.agent_path == ["plain-model"]
    assert trace.messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
    ]
    assert trace.tokens == {"plain-model": {"input": 3, "output": 2, "total": 5}}


def test_model_name_from_response_then_class() -> None:
    reported = AIMessage("a", response_metadata={"model_name": "provider-model-2025"})
    anonymous = ScriptedChatModel(script=[reported, AIMessage("b")], model_name="")
    anonymous.report_model_name = False
    with capture() as recorder:
        anonymous.invoke("one")
        anonymous.invoke("two")
    assert [c.model for c in recorder.trace().model_calls] == [
        "provider-model-2025",
        "ScriptedChatModel",
    ]


def test_swarm_of_langchain_create_agent_agents() -> None:
    from langchain.agents import create_agent

    front = create_agent(
        scripted("front-model", reply(tools=[("transfer_to_billing_bob", {})], tokens=(1, 1))),
        tools=[create_handoff_tool(agent_name="billing_Bob")],
        name="front_desk",
    )
    bob = create_agent(
        scripted("bob-model", reply("Paid.", tokens=(2, 2))),
        tools=[create_handoff_tool(agent_name="front_desk")],
        name="billing_Bob",
    )
    graph = create_swarm([front, bob], default_active_agent="front_desk").compile()
    with capture() as recorder:
        graph.invoke(ask("Is INV-1 paid?"))
    trace = recorder.trace()
    assert trace.agent_path == ["front_desk", "billing_Bob"]
    assert trace.handoffs == [Handoff("front_desk", "billing_Bob", "transfer_to_billing_bob")]
    assert roles(trace) == ["user", "assistant", "tool", "assistant"]


def test_agent_from_metadata() -> None:
    ns = "supervisor:6f1c-1|agent:9a2-2"
    assert agent_from_metadata({"langgraph_checkpoint_ns": ns, "langgraph_node": "agent"}) == (
        "supervisor"
    )
    assert agent_from_metadata({"checkpoint_ns": "billing_Bob:1"}) == "billing_Bob"
    assert agent_from_metadata({"langgraph_node": "news_desk"}) == "news_desk"
    assert agent_from_metadata({"ls_model_name": "gpt"}) is None
    assert agent_from_metadata(None) is None


def test_error_text() -> None:
    assert error_text(TimeoutError()) == "TimeoutError"
    assert error_text(ValueError("bad input")) == "ValueError: bad input"
    assert error_text("TimeoutError: exceeded 30s") == "TimeoutError: exceeded 30s"
