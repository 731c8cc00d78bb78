"""The rules for reading a model's usage into a model call, case by case.

Through the real ``ChatOpenAI`` against the loopback server where a client's behaviour is
the case (service tiers, a response without usage); through the recorder's callbacks with
the usage other integrations put on their messages (both a cache write total and its parts,
no details at all) and the ``llm_output["token_usage"]`` older models report.
"""

from __future__ import annotations

from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_openai import ChatOpenAI
from provider_servers import OpenAIChatServer, Reply, openai_usage

from agenteval_cli.core.records import ModelCall
from agenteval_cli.trace.recorder import TraceRecorder, capture


def openai_call(reply: Reply, **options) -> ModelCall:
    """One ChatOpenAI call against a server answering ``reply``, as the recorder saw it."""
    server = OpenAIChatServer(lambda _: reply, model="gpt-5-mini").start()
    try:
        model = ChatOpenAI(
            model="gpt-5-mini", base_url=server.base_url, api_key="test", max_retries=0, **options
        )
        with capture() as recorder:
            model.invoke([HumanMessage("hello")])
    finally:
        server.stop()
    (call,) = recorder.trace().model_calls
    return call


def test_service_tier_cache_reads_and_reasoning_still_count():
    """With service_tier priority langchain-openai reports ``priority_cache_read`` and
    ``priority_reasoning``: cache reads and reasoning all the same."""
    usage = openai_usage(3000, 200, cached=2048, reasoning=128)
    call = openai_call(Reply(usage, extra={"service_tier": "priority"}), service_tier="priority")
    assert (call.input_tokens, call.output_tokens) == (3000, 200)
    assert (call.cache_read_tokens, call.reasoning_tokens) == (2048, 128)
    assert call.cache_write_tokens is None  # OpenAI's chat completions report none
    assert call.provider == "openai"


def test_a_response_without_usage_is_unknown_without_a_streaming_hint():
    """Not streamed, the missing usage is the server's: unknown, and no stream_usage advice."""
    call = openai_call(Reply(None))
    assert (call.input_tokens, call.output_tokens) == (None, None)
    assert (call.cache_read_tokens, call.cache_write_tokens, call.reasoning_tokens) == (
        None,
        None,
        None,
    )
    assert call.no_usage_reason is None


def test_a_stream_with_usage_asked_for_reports_it():
    call = openai_call(Reply(openai_usage(900, 30, cached=512)), streaming=True, stream_usage=True)
    assert (call.input_tokens, call.output_tokens, call.cache_read_tokens) == (900, 30, 512)
    assert call.reasoning_tokens is None  # not sent: not reported
    assert call.no_usage_reason is None


def recorded(message: AIMessage, llm_output: dict | None = None) -> ModelCall:
    recorder = TraceRecorder()
    run_id = uuid4()
    recorder.on_chat_model_start(
        {"id": ["langchain", "chat_models", "Custom"]},
        [[HumanMessage("hi")]],
        run_id=run_id,
        metadata={"ls_provider": "custom", "ls_model_name": "m"},
    )
    generation = ChatGeneration(message=message)
    recorder.on_llm_end(LLMResult(generations=[[generation]], llm_output=llm_output), run_id=run_id)
    (call,) = recorder.trace().model_calls
    return call


FIVE, HOUR = "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"


@pytest.mark.parametrize(
    ("details", "writes", "parts"),
    [
        # langchain-anthropic's split: the total is the parts' sum
        (
            {"cache_creation": 0, FIVE: 30, HOUR: 70},
            100,
            {"cache_write_5m_tokens": 30, "cache_write_1h_tokens": 70},
        ),
        # a total reported beside its parts is not added to them
        (
            {"cache_creation": 100, FIVE: 30, HOUR: 70},
            100,
            {"cache_write_5m_tokens": 30, "cache_write_1h_tokens": 70},
        ),
        # parts of zero beside a total: the total, the rest at the general cache-write rate
        (
            {"cache_creation": 100, FIVE: 0, HOUR: 0},
            100,
            {"cache_write_5m_tokens": 0, "cache_write_1h_tokens": 0},
        ),
        ({"cache_creation": 40}, 40, {}),
        ({"cache_read": 5}, None, {}),  # a write not reported is unknown, not 0
    ],
)
def test_cache_writes_from_a_total_and_its_parts(details, writes, parts):
    usage = {"input_tokens": 500, "output_tokens": 10, "total_tokens": 510}
    call = recorded(AIMessage("ok", usage_metadata={**usage, "input_token_details": details}))
    assert (call.input_tokens, call.output_tokens) == (500, 10)  # parts of the input, as given
    assert call.cache_write_tokens == writes
    assert call.token_details == parts
    assert call.provider == "custom"


def test_usage_without_details_leaves_the_parts_unknown():
    usage = {"input_tokens": 500, "output_tokens": 10, "total_tokens": 510}
    call = recorded(AIMessage("ok", usage_metadata=usage))
    assert (call.input_tokens, call.output_tokens) == (500, 10)
    assert (call.cache_read_tokens, call.cache_write_tokens, call.reasoning_tokens) == (
        None,
        None,
        None,
    )
    assert call.token_details == {}


def test_audio_parts_keep_the_price_databases_names():
    usage = {
        "input_tokens": 500,
        "output_tokens": 90,
        "total_tokens": 590,
        "input_token_details": {"audio": 120, "cache_read": 0},
        "output_token_details": {"audio": 60, "reasoning": 0},
    }
    call = recorded(AIMessage("ok", usage_metadata=usage))
    assert call.token_details == {"input_audio_tokens": 120, "output_audio_tokens": 60}
    assert (call.cache_read_tokens, call.reasoning_tokens) == (0, 0)  # reported 0s are 0


def test_token_usage_of_older_models_keeps_its_details():
    """No usage_metadata on the message: ``llm_output["token_usage"]`` in OpenAI's form."""
    token_usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 32},
    }
    call = recorded(AIMessage("ok"), {"token_usage": token_usage})
    assert (call.input_tokens, call.output_tokens) == (1200, 80)
    assert (call.cache_read_tokens, call.cache_write_tokens, call.reasoning_tokens) == (
        1024,
        None,
        32,
    )
    plain = recorded(AIMessage("ok"), {"token_usage": {"prompt_tokens": 7, "completion_tokens": 2}})
    assert (plain.input_tokens, plain.output_tokens, plain.cache_read_tokens) == (7, 2, None)
