"""Impossible token counts are unknown, never stored: a negative, fractional, NaN, infinite,
textual or absurd count is null with the reason, and the cost it would have priced is null
with the same reason, in every path that reads usage (a chat model's ``usage_metadata``,
OpenAI's ``token_usage``, OTLP attributes, LangSmith runs, ``--json`` files, judges)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from provider_servers import Reply, openai_usage
from test_otel_conventions import chat, export, span, write_project
from test_token_details import openai_call, recorded

from agenteval_cli.core.records import ModelCall, Trace
from agenteval_cli.core.token_counts import MOST_TOKENS, count_problem
from agenteval_cli.evaluators.cost import token_cost
from agenteval_cli.evaluators.judge_model import JudgeUsage, usage_scores
from agenteval_cli.metrics.prices import price_call

PRICING = {"gpt-5-mini": {"input": 1.0, "output": 4.0}, "m": {"input": 1.0, "output": 4.0}}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (-5, "negative"),
        ("-5", "negative"),
        ("abc", "not a number"),
        ("12 tokens", "not a number"),
        ("١٢", "not a number"),  # digits, but not ASCII ones
        (math.nan, "not a number"),
        (math.inf, "infinite"),
        (12.5, "not a whole number"),
        (True, "not a number"),
        ([12], "not a number"),
        (MOST_TOKENS + 1, "in one call"),
        ("9" * 5_000, "not a number"),
    ],
)
def test_an_impossible_count_is_unknown_with_why(value: Any, why: str) -> None:
    count, problem = count_problem(value)
    assert count is None and problem is not None and why in problem


@pytest.mark.parametrize(("value", "count"), [(0, 0), (12, 12), ("12", 12), (" 7 ", 7), (3.0, 3)])
def test_a_count_however_written_is_the_number_it_is(value: Any, count: int) -> None:
    assert count_problem(value) == (count, None)


def cost_scores(call: ModelCall) -> dict[str, Any]:
    scores = token_cost(pricing=PRICING)(Trace(model_calls=[call]))
    return {s["key"]: s for s in scores}


def test_a_chat_model_reporting_negative_input_tokens_has_unknown_input_and_cost() -> None:
    """The real ChatOpenAI against a server whose usage says prompt_tokens -500."""
    call = openai_call(Reply(openai_usage(-500, 30)))
    assert (call.input_tokens, call.output_tokens) == (None, 30)
    assert call.no_usage_reason is not None and "input_tokens -500 (negative)" in (
        call.no_usage_reason
    )
    scores = cost_scores(call)
    assert scores["input_tokens"]["score"] is None and scores["cost_usd"]["score"] is None
    assert "input_tokens -500 (negative)" in scores["cost_usd"]["comment"]
    assert "reported no token usage" not in scores["cost_usd"]["comment"]  # it did, wrongly
    assert price_call(call, PRICING).usd is None


def test_an_impossible_part_leaves_the_cost_unknown_though_input_and_output_are_known() -> None:
    usage = {
        "input_tokens": 3000,
        "output_tokens": 10,
        "total_tokens": 3010,
        "input_token_details": {"cache_read": -2000},
        "output_token_details": {"reasoning": 4},
    }
    call = recorded(AIMessage("ok", usage_metadata=usage))  # type: ignore[arg-type]
    assert (call.input_tokens, call.output_tokens, call.cache_read_tokens) == (3000, 10, None)
    assert "input_token_details.cache_read -2000 (negative)" in str(call.no_usage_reason)
    scores = cost_scores(call)
    assert scores["input_tokens"]["score"] == 3000
    assert scores["cost_usd"]["score"] is None
    assert "cache_read -2000 (negative)" in scores["cost_usd"]["comment"]


@pytest.mark.parametrize(
    ("prompt", "said"),
    [("abc", "prompt_tokens 'abc' (not a number)"), (-7, "prompt_tokens -7 (negative)")],
)
def test_openai_token_usage_with_an_impossible_count_names_the_field(
    prompt: Any, said: str
) -> None:
    llm_output = {"token_usage": {"prompt_tokens": prompt, "completion_tokens": 5}}
    call = recorded(AIMessage("ok"), llm_output)
    assert (call.input_tokens, call.output_tokens) == (None, 5)
    assert said in str(call.no_usage_reason)


# What OTLP JSON can carry as gen_ai.usage.input_tokens, and what the reason quotes of it
OTLP_VALUES = [
    ({"intValue": "-5"}, "-5 (negative)"),
    ({"stringValue": "abc"}, "'abc' (not a number)"),
    ({"doubleValue": "NaN"}, "nan (not a number)"),
    ({"doubleValue": "Infinity"}, "inf (infinite)"),
    ({"doubleValue": "abc"}, "'abc' (not a number)"),
    ({"intValue": "1e3"}, "'1e3' (not a number)"),
    ({"doubleValue": 12.5}, "12.5 (not a whole number)"),
    ({"intValue": "9000000000000"}, "9000000000000 (more than"),
    ({"boolValue": True}, "True (not a number)"),
]


def usage_trace(value: dict[str, Any]) -> list[dict]:
    root = span(
        "a",
        1,
        None,
        "invoke_agent solo",
        0,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "solo",
            "agenteval.example_id": "e1",
        },
    )
    model = chat("a", 2, 1, 1, "m-large", "Refunded.", input_tokens=1, output_tokens=7)
    for attribute in model["attributes"]:
        if attribute["key"] == "gen_ai.usage.input_tokens":
            attribute["value"] = value
    return [root, model]


@pytest.mark.parametrize(("value", "said"), OTLP_VALUES)
def test_an_impossible_otlp_token_count_is_unknown_with_its_reason(
    invoke: Any, tmp_path: Path, value: dict[str, Any], said: str
) -> None:
    spec, traces = write_project(tmp_path, export(usage_trace(value)))
    out = tmp_path / "out.json"
    result = invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    assert "Traceback" not in result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    e1 = next(r for r in experiment["results"] if r["example_id"] == "e1")
    (call,) = e1["trace"]["model_calls"]
    assert (call["input_tokens"], call["output_tokens"]) == (None, 7)
    assert f"prompt_tokens {said}" in call["no_usage_reason"]
    assert e1["scores"]["input_tokens"] is None and e1["scores"]["cost_usd"] is None
    assert f"prompt_tokens {said}" in e1["comments"]["cost_usd"]


def test_an_otlp_span_with_output_tokens_only_has_unknown_input_not_zero(
    invoke: Any, tmp_path: Path
) -> None:
    trace = usage_trace({"intValue": "1"})
    trace[1]["attributes"] = [
        a for a in trace[1]["attributes"] if a["key"] != "gen_ai.usage.input_tokens"
    ]
    spec, traces = write_project(tmp_path, export(trace))
    out = tmp_path / "out.json"
    invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    (experiment,) = json.loads(out.read_text())["experiments"]
    e1 = next(r for r in experiment["results"] if r["example_id"] == "e1")
    (call,) = e1["trace"]["model_calls"]
    assert (call["input_tokens"], call["output_tokens"]) == (None, 7)
    assert e1["scores"]["cost_usd"] is None


def test_a_json_file_or_store_row_with_an_impossible_count_reads_it_as_unknown() -> None:
    trace = Trace.from_dict(
        {"model_calls": [{"agent": "a", "model": "m", "input_tokens": -5, "output_tokens": 2}]}
    )
    (call,) = trace.model_calls
    assert (call.input_tokens, call.output_tokens) == (None, 2)
    assert "input_tokens -5 (negative)" in str(call.no_usage_reason)


def test_a_judge_reporting_impossible_usage_has_unknown_tokens_and_cost() -> None:
    from agenteval_cli.evaluators.judge_model import _usage

    usage = _usage("m", {"input_tokens": -500, "output_tokens": 3}, "m", PRICING)
    assert usage.input_tokens is None and usage.cost_usd is None
    scores = {s.key: s for s in usage_scores([usage, JudgeUsage("m", 10, 2, 0.0)])}
    assert scores["judge_input_tokens"].score is None
    assert "input_tokens -500 (negative)" in str(scores["judge_input_tokens"].comment)
    assert scores["judge_output_tokens"].score == 5
    assert scores["judge_cost_usd"].score is None


def test_a_langsmith_run_with_impossible_usage_imports_it_as_unknown(server: Any) -> None:
    """``@traceable`` code whose provider response said prompt_tokens -12 and completion
    tokens as text, read back from LangSmith."""
    from langsmith import Client, evaluate, traceable

    from agenteval_cli.langsmith.client import connect, credentials
    from agenteval_cli.langsmith.experiments import read_experiments

    @traceable(run_type="llm", name="gpt-4o-mini")
    def complete(messages: list[dict]) -> dict:
        answer = {"role": "assistant", "content": "Refunded."}
        return {
            "choices": [{"message": answer}],
            "usage": {"prompt_tokens": -12, "completion_tokens": "three"},
        }

    @traceable(name="answer")
    def answer(question: str) -> str:
        return complete([{"role": "user", "content": question}])["choices"][0]["message"]["content"]

    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(dataset_name="impossible-usage")
    client.create_examples(dataset_id=dataset.id, inputs=[{"question": "Refund INV-42."}])
    name = evaluate(
        lambda inputs: {"final_response": answer(inputs["question"])},
        data="impossible-usage",
        client=client,
    ).experiment_name
    client.flush()
    ((_, result),) = read_experiments(connect(credentials()), [name])[0].pairs
    (call,) = result.trace.model_calls
    assert (call.input_tokens, call.output_tokens) == (None, None)
    assert "prompt_tokens -12 (negative)" in str(call.no_usage_reason)
    assert "completion_tokens 'three' (not a number)" in str(call.no_usage_reason)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("abc", "input_tokens 'abc' (not a number)"),
        (math.nan, "input_tokens nan (not a number)"),
        (12.5, "input_tokens 12.5 (not a whole number)"),
        (-40, "input_tokens -40 (negative)"),
    ],
)
def test_a_recorded_langchain_message_with_impossible_usage_keeps_its_answer(
    given: Any, said: str
) -> None:
    """A model run as LangSmith and OpenInference record it (its message's dump): usage a
    message refuses to hold (text, NaN, a fraction) or holds wrongly (negative) is unknown
    with the reason, and the answer is still the answer."""
    import uuid
    from datetime import UTC, datetime

    from agenteval_cli.langsmith.replay import replay
    from agenteval_cli.otel.ingest.runs import SpanRun

    usage = {"input_tokens": given, "output_tokens": 5, "total_tokens": 5}
    answer = {"type": "ai", "content": "Refunded.", "usage_metadata": usage}
    at = datetime(2026, 1, 1, tzinfo=UTC)
    run = SpanRun(
        id=uuid.uuid4(),
        parent_run_id=None,
        trace_id="t",
        run_type="llm",
        name="m",
        inputs={"messages": [[{"type": "human", "content": "refund me"}]]},
        outputs={"generations": [[{"text": "Refunded.", "message": answer}]]},
        start_time=at,
        end_time=at,
        dotted_order="1",
        extra={"metadata": {"ls_model_name": "m"}},
    )
    (call,) = replay([run], [run]).model_calls
    assert (call.input_tokens, call.output_tokens) == (None, 5)
    assert said in str(call.no_usage_reason)
    trace = replay([run], [run])
    assert [m["content"] for m in trace.messages if m["role"] == "assistant"] == ["Refunded."]


def test_a_chat_anthropic_reporting_a_negative_cache_read_has_unknown_cost() -> None:
    """The real ChatAnthropic against a server whose usage says cache_read_input_tokens
    -2000: LangChain's input (uncached + reads + writes) comes out 1000, plausible, but the
    read it is made of is impossible, so the cost is unknown."""
    from langchain_anthropic import ChatAnthropic
    from langchain_core.messages import HumanMessage
    from provider_servers import AnthropicServer, anthropic_usage

    from agenteval_cli.trace.recorder import capture

    usage = anthropic_usage(3000, 40, cache_read=-2000)
    server = AnthropicServer(lambda _: Reply(usage), model="claude-sonnet-4-5").start()
    try:
        model = ChatAnthropic(
            model="claude-sonnet-4-5", base_url=server.base_url, api_key="test", max_retries=0
        )
        with capture() as recorder:
            model.invoke([HumanMessage("hello")])
    finally:
        server.stop()
    (call,) = recorder.trace().model_calls
    assert call.cache_read_tokens is None
    assert "input_token_details.cache_read -2000 (negative)" in str(call.no_usage_reason)
    pricing = {"claude-sonnet-4-5": {"input": 3.0, "output": 15.0}}
    scores = {s["key"]: s for s in token_cost(pricing=pricing)(Trace(model_calls=[call]))}
    assert scores["cost_usd"]["score"] is None
    assert "cache_read -2000 (negative)" in scores["cost_usd"]["comment"]
