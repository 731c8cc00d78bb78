"""Conversations run turn by turn: a checkpointer graph on one thread, a graph without one
given the history, interrupts resumed or left, functions given the history and thread id,
retries of the whole conversation, a turn's own time-out; and the merged trace."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from fakes import ScriptedChatModel, reply, scripted
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt
from langgraph_swarm import create_handoff_tool, create_swarm

from agenteval_cli.core.records import Example, Handoff, ModelCall, Result, ToolCall, Trace
from agenteval_cli.core.retry import RetryPolicy
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.targets import adapt
from agenteval_cli.trace.turns import merge_turn_traces

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")


def converse(
    target: Any,
    turns: list[Any],
    *,
    retry: RetryPolicy | None = None,
    timeout_s: float = 30.0,
    repetition: int = 0,
    **options: Any,
) -> Result:
    """One conversation of ``turns`` with ``target`` (adapted with ``options``), run as the
    runner runs any work item."""
    adapted = adapt(target, name="t", import_path="x:t", **options)
    runner = Runner(
        targets=[adapted],
        evaluators=[],
        settings=RunSettings(retry=retry or RetryPolicy(), timeout_s=timeout_s),
    )
    item = WorkItem(adapted, Example("c1", {"turns": turns}), repetition)
    return asyncio.run(runner.run_one(item))


def texts(messages: list[Any]) -> list[tuple[str, str]]:
    """(type, text) of message objects, system prompts left out."""
    return [(m.type, str(m.content)) for m in messages if m.type != "system"]


def threads_of(saver: InMemorySaver) -> set[str]:
    return {c.config["configurable"]["thread_id"] for c in saver.list(None)}


# --- a swarm with a checkpointer: one thread, the active agent kept ------------------------


def support_swarm(saver: InMemorySaver) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    """front_desk hands the first question to billing, which answers it and the follow-up."""
    front = scripted("front-model", reply(tools=[("transfer_to_billing", {})], tokens=(3, 1)))
    billing = scripted(
        "billing-model",
        reply("INV-1 is paid.", tokens=(9, 4)),
        reply("It was paid on May 2.", tokens=(12, 5)),
    )
    agents = [
        create_react_agent(
            front, [create_handoff_tool(agent_name="billing")], name="front_desk", prompt="f"
        ),
        create_react_agent(billing, [], name="billing", prompt="b"),
    ]
    graph = create_swarm(agents, default_active_agent="front_desk").compile(checkpointer=saver)
    return graph, front, billing


def test_a_swarm_with_a_checkpointer_answers_the_follow_up_where_the_first_turn_ended():
    saver = InMemorySaver()
    graph, front, billing = support_swarm(saver)
    result = converse(graph, ["Is INV-1 paid?", "When was it paid?"])

    assert (result.status, result.error, result.attempts) == ("ok", None, 1)
    assert [t.trace.agent_path for t in result.turns] == [["front_desk", "billing"], ["billing"]]
    assert [len(t.trace.model_calls) for t in result.turns] == [2, 1]
    assert [c.model for c in result.turns[1].trace.model_calls] == ["billing-model"]
    assert (front.calls, billing.calls) == (1, 2)
    assert [t.outputs["final_response"] for t in result.turns] == [
        "INV-1 is paid.",
        "It was paid on May 2.",
    ]
    assert result.outputs == result.turns[1].outputs
    assert result.turns[1].outputs["active_agent"] == "billing"
    # one thread: the checkpointer had the first turn, so only the new question was sent
    assert len(threads_of(saver)) == 1
    assert texts(billing.received[1]) == [
        ("human", "Is INV-1 paid?"),
        ("ai", ""),
        ("tool", "Successfully transferred to billing"),
        ("ai", "INV-1 is paid."),
        ("human", "When was it paid?"),
    ]
    # the conversation's trace: both turns in order, the transcript once
    trace = result.trace
    assert trace.agent_path == ["front_desk", "billing"]
    assert [(h.source, h.target) for h in trace.handoffs] == [("front_desk", "billing")]
    assert [c.model for c in trace.model_calls] == ["front-model", "billing-model", "billing-model"]
    assert [(m["role"], m["content"]) for m in trace.messages] == [
        ("user", "Is INV-1 paid?"),
        ("assistant", ""),
        ("tool", "Successfully transferred to billing"),
        ("assistant", "INV-1 is paid."),
        ("user", "When was it paid?"),
        ("assistant", "It was paid on May 2."),
    ]
    assert result.latency_s == pytest.approx(sum(t.latency_s for t in result.turns))
    assert trace.latency_s == pytest.approx(result.latency_s)


def test_each_repetition_of_a_conversation_has_a_thread_of_its_own():
    saver = InMemorySaver()
    graph, front, billing = support_swarm(saver)
    front.script += [reply(tools=[("transfer_to_billing", {})])]
    billing.script += [reply("INV-1 is paid."), reply("It was paid on May 2.")]
    adapted = adapt(graph, name="swarm", import_path="x:swarm")
    runner = Runner([adapted], [], RunSettings(repetitions=2, concurrency=1))
    example = Example("c1", {"turns": ["Is INV-1 paid?", "When was it paid?"]})
    results: list[Result] = []
    asyncio.run(runner.run(runner.work([example]), lambda item, r: results.append(r)))
    assert [(r.repetition, r.status) for r in results] == [(0, "ok"), (1, "ok")]
    assert len(threads_of(saver)) == 2
    # the second repetition started at the front desk again: nothing carried over
    assert [[t.trace.agent_path for t in r.turns] for r in results] == [
        [["front_desk", "billing"], ["billing"]]
    ] * 2
    assert (front.calls, billing.calls) == (2, 4)


# --- a graph without a checkpointer: the history is sent ---------------------------------


def echo_graph(model: ScriptedChatModel, **compile: Any) -> Any:
    async def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(**compile)


def test_a_graph_without_a_checkpointer_is_sent_the_previous_turns_messages():
    model = scripted("m", reply("Paid."), reply("On May 2."), reply("Yes."))
    result = converse(echo_graph(model), ["Is INV-1 paid?", "When?", "Sure?"])
    assert result.status == "ok"
    assert texts(model.received[1]) == [
        ("human", "Is INV-1 paid?"),
        ("ai", "Paid."),
        ("human", "When?"),
    ]
    assert texts(model.received[2]) == [
        ("human", "Is INV-1 paid?"),
        ("ai", "Paid."),
        ("human", "When?"),
        ("ai", "On May 2."),
        ("human", "Sure?"),
    ]
    # each turn's answer is its own, not an earlier one found in the history
    assert [t.outputs["final_response"] for t in result.turns] == ["Paid.", "On May 2.", "Yes."]
    assert [(m["role"], m["content"]) for m in result.trace.messages] == [
        ("user", "Is INV-1 paid?"),
        ("assistant", "Paid."),
        ("user", "When?"),
        ("assistant", "On May 2."),
        ("user", "Sure?"),
        ("assistant", "Yes."),
    ]


def test_a_graph_returning_no_messages_is_sent_the_questions_and_its_answers():
    from typing_extensions import TypedDict

    class Answer(TypedDict):
        answer: str

    model = scripted("m", reply("Paid."), reply("On May 2."))

    async def answer(state: MessagesState) -> dict[str, Any]:
        message = await model.ainvoke(state["messages"])
        return {"messages": [message], "answer": message.content}

    class State(MessagesState):
        answer: str

    builder = StateGraph(State, output_schema=Answer)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    result = converse(builder.compile(), ["Is INV-1 paid?", "When?"])
    assert result.status == "ok"
    assert [t.outputs["final_response"] for t in result.turns] == ["Paid.", "On May 2."]
    assert texts(model.received[1]) == [
        ("human", "Is INV-1 paid?"),
        ("ai", "Paid."),
        ("human", "When?"),
    ]


def lookup_graph(**compile: Any) -> Any:
    """A graph of plain fields, given each turn's inputs as they are: no messages."""
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        query: str
        answer: str
        asked: int

    def look_up(state: State) -> dict[str, Any]:
        asked = state.get("asked", 0) + 1
        return {"answer": f"{state['query']} (question {asked})", "asked": asked}

    builder = StateGraph(State)
    builder.add_node("look_up", look_up)
    builder.add_edge(START, "look_up")
    return builder.compile(**compile)


def test_a_graph_of_plain_fields_keeps_a_conversation_only_with_a_checkpointer():
    turns = [{"query": "INV-1"}, {"query": "INV-2"}]
    kept = converse(lookup_graph(checkpointer=InMemorySaver()), turns)
    assert [t.outputs["final_response"] for t in kept.turns] == [
        "INV-1 (question 1)",
        "INV-2 (question 2)",  # the thread's state: 'asked' carried over
    ]
    # the initial state opens the thread; later turns do not reset it
    graph = lookup_graph(checkpointer=InMemorySaver())
    started = converse(graph, turns, initial_state={"asked": 10})
    assert [t.outputs["asked"] for t in started.turns] == [11, 12]
    lost = converse(lookup_graph(), turns)
    assert lost.error == (
        "turn 2: ValueError: the graph has no checkpointer and its input has no 'messages' to "
        "carry the conversation's history: compile it with a checkpointer, or give it messages"
    )
    assert [t.status for t in lost.turns] == ["ok", "error"]


# --- interrupts ---------------------------------------------------------------------------


def refund_graph(model: ScriptedChatModel, **compile: Any) -> Any:
    """Asks for approval with interrupt(), then answers with the approval in the messages."""

    async def approve(state: MessagesState) -> dict[str, Any]:
        decision = interrupt({"question": "Refund INV-42?"})
        asked = [*state["messages"], AIMessage(f"approval: {decision}")]
        return {"messages": [await model.ainvoke(asked)]}

    builder = StateGraph(MessagesState)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    return builder.compile(**compile)


def test_an_interrupt_is_resumed_by_the_next_turn_on_the_same_thread():
    saver = InMemorySaver()
    model = scripted("m", reply("Refunded INV-42."))
    result = converse(refund_graph(model, checkpointer=saver), ["Refund INV-42", {"resume": "yes"}])
    assert (result.status, result.error, result.interrupt) == ("ok", None, None)
    first, second = result.turns
    assert (first.status, json.loads(first.interrupt)) == (
        "interrupted",
        {"question": "Refund INV-42?"},
    )
    assert (second.inputs, second.status) == ({"resume": "yes"}, "ok")
    assert second.outputs["final_response"] == "Refunded INV-42."
    assert texts(model.received[0]) == [("human", "Refund INV-42"), ("ai", "approval: yes")]
    assert [len(t.trace.model_calls) for t in result.turns] == [0, 1]
    assert len(threads_of(saver)) == 1


@pytest.mark.parametrize(
    "turns",
    [["Refund INV-42"], ["Refund INV-42", "And INV-43?"]],
    ids=["last turn", "a message follows"],
)
def test_an_interrupt_no_resume_answers_ends_the_conversation_interrupted(turns):
    model = scripted("m", reply("never sent"))
    result = converse(refund_graph(model, checkpointer=InMemorySaver()), turns)
    assert (result.status, result.error) == ("interrupted", None)
    assert json.loads(result.interrupt) == {"question": "Refund INV-42?"}
    assert [t.inputs for t in result.turns] == [{"question": "Refund INV-42"}]
    assert model.calls == 0


def test_a_resume_after_a_turn_that_did_not_stop_at_an_interrupt_is_the_conversations_error():
    model = scripted("m", reply("Hello."), reply("Refunds take a day."))
    result = converse(
        echo_graph(model, checkpointer=InMemorySaver()), ["Hi", "Refund?", {"resume": "yes"}]
    )
    # the scripted model answered turns 1 and 2; turn 3 was never sent
    assert result.error == "turn 3 is a resume, but turn 2 did not stop at interrupt()"
    assert [t.status for t in result.turns] == ["ok", "ok", "error"]
    assert result.turns[2].error == result.error
    assert result.outputs is None
    assert model.calls == 2


def test_a_resume_on_a_graph_without_a_checkpointer_is_the_conversations_error():
    model = scripted("m", reply("never sent"))
    result = converse(refund_graph(model), ["Refund INV-42", {"resume": "yes"}])
    assert result.turns[0].status == "interrupted"
    assert result.error == (
        "turn 2 is a resume, but the graph has no checkpointer, so it cannot resume from "
        "interrupt(): compile it with one (checkpointer=InMemorySaver())"
    )
    assert (result.status, model.calls) == ("error", 0)


# --- function targets ---------------------------------------------------------------------


def test_a_function_is_given_each_turn_with_the_history_and_the_thread_id():
    seen: list[dict[str, Any]] = []

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(inputs)))
        if "resume" in inputs:
            return {"final_response": f"refund {inputs['resume']}"}
        if inputs["question"] == "Refund INV-42":
            return {"final_response": "", "__interrupt__": [{"value": "approve?", "id": "i1"}]}
        return {"final_response": f"answer to {inputs['question']}"}

    result = converse(target, ["Hi", {"question": "Refund INV-42"}, {"resume": "yes"}])
    assert result.status == "ok"
    thread = seen[0]["thread_id"]
    assert seen == [
        {"question": "Hi", "history": [], "thread_id": thread},
        {
            "question": "Refund INV-42",
            "history": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "answer to Hi"},
            ],
            "thread_id": thread,
        },
        {
            "resume": "yes",
            "history": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "answer to Hi"},
                {"role": "user", "content": "Refund INV-42"},
                {"role": "assistant", "content": "", "interrupt": '"approve?"'},
            ],
            "thread_id": thread,
        },
    ]
    assert result.outputs == {"final_response": "refund yes"}


def test_a_graph_interrupt_a_function_raises_is_resumed_by_the_next_turn():
    from langgraph.errors import GraphInterrupt
    from langgraph.types import Interrupt

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        if "resume" not in inputs:
            raise GraphInterrupt([Interrupt(value="approve?", id="i1")])
        return {"final_response": f"refund {inputs['resume']}"}

    result = converse(target, ["Refund INV-42", {"resume": "no"}])
    assert [t.status for t in result.turns] == ["interrupted", "ok"]
    assert (result.status, result.outputs) == ("ok", {"final_response": "refund no"})


def test_a_runnable_is_given_the_history_and_runs_on_the_conversations_thread():
    from langchain_core.runnables import RunnableLambda

    seen: list[tuple[Any, str]] = []

    def answer(inputs: dict[str, Any], config: Any) -> str:
        seen.append((inputs["history"], config["configurable"]["thread_id"]))
        return f"answer {len(seen)}"

    result = converse(RunnableLambda(answer), ["one", "two"])
    assert [t.outputs for t in result.turns] == [
        {"final_response": "answer 1"},
        {"final_response": "answer 2"},
    ]
    (first, thread), (second, same) = seen
    assert (first, second) == (
        [],
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "answer 1"}],
    )
    assert thread == same


def test_each_turn_waits_for_the_rate_limit():
    class Counting:
        acquired = 0

        async def acquire(self) -> None:
            self.acquired += 1

    limiter = Counting()
    target = adapt(lambda inputs: {"final_response": "ok"}, name="t", import_path="x:t")
    runner = Runner([target], [], limiter=limiter)
    rows = [Example("c1", {"turns": ["a", "b", "c"]}), Example("e1", {"question": "q"})]
    results: list[Result] = []
    asyncio.run(runner.run(runner.work(rows), lambda item, r: results.append(r)))
    by_id = {r.example_id: (r.status, r.turns and len(r.turns)) for r in results}
    assert by_id == {"c1": ("ok", 3), "e1": ("ok", None)}
    assert limiter.acquired == 4  # three turns, one single call


def test_a_turn_that_raises_ends_the_conversation_naming_the_turn():
    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        if inputs["question"] == "two":
            raise ValueError("no such invoice")
        return {"final_response": inputs["question"]}

    result = converse(target, ["one", "two", "three"])
    assert result.error == "turn 2: ValueError: no such invoice"
    assert [(t.status, t.error) for t in result.turns] == [
        ("ok", None),
        ("error", "ValueError: no such invoice"),
    ]
    assert result.trace.error == result.error


def test_a_turn_past_its_time_out_ends_the_conversation():
    async def target(inputs: dict[str, Any]) -> dict[str, Any]:
        if inputs["question"] == "slow":
            await asyncio.sleep(5)
        return {"final_response": inputs["question"]}

    result = converse(target, ["quick", "slow", "never"], timeout_s=0.1)
    assert result.error == "turn 2: TimeoutError: no answer within 0.1 s"
    assert [t.status for t in result.turns] == ["ok", "error"]
    assert 0.1 <= result.turns[1].latency_s < 1
    assert result.outputs is None


# --- retries ------------------------------------------------------------------------------


class RateLimitError(Exception):
    """A provider's rate limit, known to the retry policy by its name."""


def test_a_transient_failure_in_turn_two_redoes_the_conversation_on_a_new_thread():
    saver = InMemorySaver()
    model = scripted(
        "m",
        reply("Paid.", tokens=(4, 1)),
        RateLimitError("slow down"),
        reply("Paid.", tokens=(4, 1)),
        reply("On May 2.", tokens=(6, 2)),
    )
    result = converse(
        echo_graph(model, checkpointer=saver),
        ["Is INV-1 paid?", "When?"],
        retry=RetryPolicy(max=2, on=("rate_limit",), base_s=0.0, max_s=0.0),
    )
    assert (result.status, result.attempts) == ("ok", 2)
    assert len(threads_of(saver)) == 2
    # the second attempt's thread started afresh: its turn 2 saw one earlier turn, not two
    assert texts(model.received[3]) == [
        ("human", "Is INV-1 paid?"),
        ("ai", "Paid."),
        ("human", "When?"),
    ]
    calls = [[(c.retried, c.failed) for c in t.trace.model_calls] for t in result.turns]
    assert calls == [[(True, False), (False, False)], [(True, True), (False, False)]]
    assert result.trace.tokens == {"m": {"input": 14, "output": 4, "total": 18}}
    assert [t.trace.agent_path for t in result.turns] == [["answer"], ["answer"]]


# --- the merged trace ---------------------------------------------------------------------


def test_turn_traces_merge_in_order_with_handoff_positions_and_the_transcript_once():
    user1 = {"role": "user", "content": "q1"}
    answer1 = {"role": "assistant", "content": "a1"}
    first = Trace(
        agent_path=["router", "billing"],
        handoffs=[Handoff("router", "billing")],
        tool_calls=[ToolCall("router", "transfer_to_billing", kind="handoff", target="billing")],
        model_calls=[ModelCall("router", "m"), ModelCall("billing", "m")],
        messages=[user1, answer1],
        latency_s=1.5,
        coordinators=["router"],
    )
    second = Trace(
        agent_path=["billing", "router", "account"],
        handoffs=[
            Handoff("billing", "router", via="edge"),
            Handoff("router", "account", after=[0]),
        ],
        model_calls=[ModelCall("billing", "m")],
        messages=[user1, answer1, {"role": "user", "content": "q2"}],
        latency_s=0.5,
        coordinators=["router"],
    )
    stateless = Trace(messages=[{"role": "user", "content": "q2"}], untraced="no run")
    merged = merge_turn_traces([first, second, stateless])
    assert merged.agent_path == ["router", "billing", "router", "account"]
    assert [(h.source, h.target, h.after) for h in merged.handoffs] == [
        ("router", "billing", []),
        ("billing", "router", []),
        ("router", "account", [1]),
    ]
    assert second.handoffs[1].after == [0]  # the turn's own trace is left as it was
    assert [c.agent for c in merged.model_calls] == ["router", "billing", "billing"]
    assert len(merged.tool_calls) == 1
    # turn 3 does not open with the conversation: its message is new, though seen before
    assert [m["content"] for m in merged.messages] == ["q1", "a1", "q2", "q2"]
    assert (merged.latency_s, merged.coordinators) == (2.0, ["router"])
    assert merged.untraced == "turn 3: no run"
    assert merge_turn_traces([Trace(untraced="no run")]).untraced == "no run"


# --- before the run -----------------------------------------------------------------------


def test_a_conversation_turn_lacking_the_field_a_graph_reads_fails_before_any_call(
    tmp_path, invoke
):
    rows = [
        {"inputs": {"turns": ["refund please", "thanks"]}},  # strings: the input_key's text
        {"inputs": {"turns": [{"question": "refund?"}, {"query": "and SSO?"}]}},
    ]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {data}\ntargets:\n  supervisor: agenteval_cli.demo.supervisor:graph\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 2, result.output
    assert (
        "target 'supervisor' reads inputs.question, which 1 example(s) of the dataset lack "
        "(row 2 turn 2 has: query)"
    ) in result.text


def test_each_turn_is_scored_against_its_own_references():
    from agenteval_cli.evaluators.scoring import BoundEvaluator

    def mentions(outputs, reference_outputs):
        wanted = reference_outputs.get("must_mention", [])
        found = all(word in outputs["final_response"] for word in wanted)
        return {"key": "mentions", "score": float(found)}

    target = adapt(
        lambda inputs: {"final_response": f"re: {inputs['question']}"}, name="t", import_path="x:t"
    )
    runner = Runner([target], [BoundEvaluator("mentions", mentions)])
    example = Example(
        "c1",
        {"turns": ["refund", "invoice"]},
        {"turns": [{"must_mention": ["refund"]}, {"must_mention": ["SSO"]}]},
    )
    result = asyncio.run(runner.run_one(WorkItem(target, example, 0)))
    assert [t.score_map() for t in result.turns] == [{"mentions": 1.0}, {"mentions": 0.0}]
    scores = result.score_map()
    assert scores["mentions"] == 0.5  # the mean of the turns
    # and the conversation's own figures: a plain function is untraced, so those of its
    # traces are unknown; "mentions" declares no pass mark, so nothing left it unresolved
    assert (scores["turns"], scores["model_calls"], scores["resolved"]) == (2.0, None, True)
