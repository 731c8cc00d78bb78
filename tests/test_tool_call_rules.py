"""The rules that tell work from the rest, one at a time: what a model's tool call that no
tool ran was (structured output, a handoff its node acted on, or a call that never ran), a
tool call's status, and how the step evaluators read both. tests/test_forms_work.py runs
whole graph forms through the CLI."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import pytest
from fakes import scripted
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import ToolException, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from agenteval_cli.core.records import ToolCall, Trace
from agenteval_cli.evaluators.soundness import required_tools, unnecessary_steps
from agenteval_cli.evaluators.trajectory import trajectory_match
from agenteval_cli.trace.recorder import TraceRecorder


class Route(TypedDict):
    """Pick the specialist."""

    agent: Literal["billing", "tech"]


class RouteState(MessagesState):
    route: str


def route_call(agent: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "Route", "args": {"agent": agent}, "id": "r1"}])


def answer(text: str) -> AIMessage:
    return AIMessage(text)


def traced(graph: Any) -> Trace:
    recorder = TraceRecorder()
    graph.invoke({"messages": [HumanMessage("Refund my invoice.")]}, {"callbacks": [recorder]})
    return recorder.trace()


def routed_graph(router: Any) -> Any:
    """``router`` (state -> update or Command) picks billing or tech; each answers once."""
    builder = StateGraph(RouteState)
    builder.add_node("router", router, destinations=("billing", "tech"))
    for name in ("billing", "tech"):
        model = scripted(f"{name}-model", answer(f"{name} here"))
        builder.add_node(name, lambda s, m=model: {"messages": [m.invoke(s["messages"])]})
        builder.add_edge(name, END)
    builder.add_edge(START, "router")
    builder.add_conditional_edges(
        "router", lambda s: s.get("route") or END, ["billing", "tech", END]
    )
    return builder.compile()


def kinds(trace: Trace) -> list[tuple[str, str, str | None, str]]:
    return [(c.name, c.kind, c.target, c.status) for c in trace.tool_calls]


FORMAT = {"kwargs": {"method": "function_calling"}, "schema": Route}


def test_structured_output_format_alone_makes_a_call_output():
    """A provider's model gets ``ls_structured_output_format``; a node that reads the call by
    hand (no parser) still asked for structured output."""
    model = scripted("router-model", route_call("billing")).bind(ls_structured_output_format=FORMAT)

    def router(state: RouteState) -> dict:
        reply = model.invoke(state["messages"])
        return {"route": reply.tool_calls[0]["args"]["agent"]}

    assert kinds(traced(routed_graph(router))) == [("Route", "output", None, "ok")]


def test_a_call_read_by_hand_and_never_run_is_not_run():
    """No structured-output sign, no tool run, no answer, no Command naming an agent: an
    ordinary call that never ran."""
    model = scripted("router-model", route_call("billing"))

    def router(state: RouteState) -> dict:
        return {"route": model.invoke(state["messages"]).tool_calls[0]["args"]["agent"]}

    assert kinds(traced(routed_graph(router))) == [("Route", "tool", None, "not_run")]


@pytest.mark.parametrize(
    ("wrap", "read"),
    [
        (lambda m: m.with_structured_output(Route, include_raw=True), lambda r: r["parsed"]),
        (lambda m: m.with_structured_output(Route).with_config(run_name="pick"), lambda r: r),
    ],
    ids=["include_raw", "renamed"],
)
def test_a_reply_parsed_for_its_tool_call_is_output(wrap, read):
    """The parser after the model marks it, wherever it sits in the runnable."""
    structured = wrap(scripted("router-model", route_call("tech")))

    def router(state: RouteState) -> dict:
        return {"route": read(structured.invoke(state["messages"]))["agent"]}

    trace = traced(routed_graph(router))
    assert kinds(trace) == [("Route", "output", None, "ok")]
    assert trace.agent_path == ["router", "tech"]


def test_a_call_the_node_acts_on_by_its_arguments_is_a_handoff():
    """A router read by hand whose choice the node sends control to with ``Command``."""
    model = scripted("router-model", route_call("tech"))

    def router(state: RouteState) -> Command[Literal["billing", "tech"]]:
        return Command(goto=model.invoke(state["messages"]).tool_calls[0]["args"]["agent"])

    assert kinds(traced(routed_graph(router))) == [("Route", "handoff", "tech", "ok")]


@tool
def refund(invoice_id: str) -> str:
    """Refund an invoice."""
    raise ToolException("refunds are closed today")


refund.handle_tool_error = True


def test_a_tool_reporting_its_own_failure_is_an_error():
    """A ``ToolException`` the tool handles itself answers ``status="error"``: the call
    failed, so the required tool is not used."""
    model = scripted(
        "agent-model",
        AIMessage("", tool_calls=[{"name": "refund", "args": {"invoice_id": "7"}, "id": "c1"}]),
        answer("Sorry, no refund today."),
    )
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    trace = traced(builder.compile())
    assert kinds(trace) == [("refund", "tool", None, "error")]
    verdict = required_tools(tools=["refund"])({}, trace)
    assert (verdict["score"], verdict["comment"]) == (False, "failed every time ['refund']")


def test_statuses_are_stored_and_old_traces_read_ok():
    trace = Trace(tool_calls=[ToolCall("a", "lookup", status="error")])
    assert Trace.from_dict(trace.to_dict()).tool_calls[0].status == "error"
    old = {"tool_calls": [{"agent": "a", "name": "lookup", "args": {}, "kind": "tool"}]}
    assert Trace.from_dict(old).tool_calls[0].status == "ok"


def _calls(*specs: tuple[str, str]) -> Trace:
    """Calls of ``(name, status)``, all with the same arguments."""
    return Trace(tool_calls=[ToolCall("a", n, {"id": 1}, status=s) for n, s in specs])


@pytest.mark.parametrize(
    ("calls", "used", "wasted"),
    [
        ((("lookup", "error"), ("lookup", "ok")), True, 0.0),  # a retry after a failure
        ((("lookup", "ok"), ("lookup", "ok")), True, 1.0),  # a repeat of a success
        ((("lookup", "error"), ("lookup", "error")), False, 0.0),  # failed every time
        ((("lookup", "not_run"),), False, 0.0),  # asked for, never run
    ],
)
def test_required_and_unnecessary_read_statuses(calls, used, wasted):
    trace = _calls(*calls)
    assert required_tools(tools=["lookup"])({}, trace)["score"] is used
    assert unnecessary_steps()({}, trace)["score"] == wasted


def test_output_calls_are_no_steps_unless_the_shorthand_names_them():
    trace = Trace(
        tool_calls=[ToolCall("a", "lookup", {"id": 1}), ToolCall("a", "Answer", kind="output")],
        messages=[
            {"role": "assistant", "content": "", "tool_calls": [_openai("lookup", '{"id": 1}')]},
            {"role": "assistant", "content": "", "tool_calls": [_openai("Answer", "{}")]},
        ],
    )
    match = trajectory_match(tool_args="ignore")
    assert match({}, {"expected_tools": ["lookup"]}, trace)["score"] is True
    assert match({}, {"expected_tools": ["lookup", "Answer"]}, trace)["score"] is True
    assert unnecessary_steps()({"expected_tools": ["lookup"]}, trace)["score"] == 0.0


def _openai(name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_judge_sees_which_calls_failed():
    from agenteval_cli.evaluators.judge import trace_view

    view = trace_view(_calls(("lookup", "error"), ("lookup", "ok")))
    assert [c.get("status") for c in view["tool_calls"]] == ["error", None]


def test_a_call_that_never_ran_takes_the_kind_its_tool_showed():
    """The same agent's handoff tool ran once; its next call, cut off, is a handoff too."""
    from agenteval_cli.trace.unran import same_tool_as_ran

    ran = ToolCall("billing", "transfer_to_tech", kind="handoff", target="tech")
    cut = ToolCall("billing", "transfer_to_tech", status="not_run")
    other = ToolCall("tech", "transfer_to_tech", status="not_run")  # another agent's tool
    same_tool_as_ran([ran, cut, other])
    assert [(c.kind, c.target, c.status) for c in (cut, other)] == [
        ("handoff", "tech", "not_run"),
        ("tool", None, "not_run"),
    ]


def test_the_structured_output_format_covers_only_its_schema_call():
    from agenteval_cli.trace.unran import StructuredOutput

    named = StructuredOutput.of({"ls_structured_output_format": FORMAT})
    assert named is not None and named.covers("Route") and not named.covers("lookup")
    text = {"kwargs": {"method": "json_schema"}, "schema": {"type": "object"}}
    as_text = StructuredOutput.of({"ls_structured_output_format": text})
    assert as_text is not None and not as_text.covers("lookup")  # the answer is no tool call
    assert StructuredOutput.of({"stop": None}) is None
