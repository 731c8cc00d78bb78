"""A chat model's reported usage, read into a :class:`ModelCall`: every part that is billed apart.

LangChain's ``UsageMetadata`` is the form read: ``input_tokens`` include cache reads and cache
writes, ``output_tokens`` include reasoning; ``input_token_details`` says ``cache_read``,
``cache_creation`` and ``audio``, ``output_token_details`` ``reasoning`` and ``audio``.
langchain-openai prefixes these with the service tier (``priority_cache_read``); they are
still cache reads. langchain-anthropic, when Anthropic splits cache writes by lifetime,
leaves ``cache_creation`` at 0 and reports the writes as ``ephemeral_5m_input_tokens`` and
``ephemeral_1h_input_tokens``: the cache writes are then their sum, kept apart as the price
database's ``cache_write_5m_tokens`` and ``cache_write_1h_tokens`` (priced differently).

A part the model did not report stays ``None`` (unknown); a reported 0 is 0. Every count is
checked (:class:`~agenteval_cli.core.token_counts.UsageCounts`): an impossible one (negative,
NaN, text, absurd) is unknown too, and the call's ``no_usage_reason`` says which it was, so
its cost is unknown rather than wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.core.records import ModelCall
from agenteval_cli.core.token_counts import UsageCounts

__all__ = ["USAGE_AS_GIVEN", "read_token_usage", "read_usage"]

# The key of a replayed message's ``response_metadata`` holding the usage it was recorded
# with when a message cannot hold it (LangChain's ``UsageMetadata`` refuses text, NaN and
# fractions): read from there, so its counts are unknown with the reason, not just gone.
USAGE_AS_GIVEN = "agenteval_usage_as_given"

# LangChain detail key -> the price database's usage name, for parts kept in token_details
_INPUT_PARTS = {
    "audio": "input_audio_tokens",
    "ephemeral_5m_input_tokens": "cache_write_5m_tokens",
    "ephemeral_1h_input_tokens": "cache_write_1h_tokens",
}
_OUTPUT_PARTS = {"audio": "output_audio_tokens"}
_WRITE_PARTS = frozenset(("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"))


def read_usage(call: ModelCall, usage: Mapping[str, Any]) -> None:
    """Set ``call``'s tokens from a LangChain ``UsageMetadata`` (a message's
    ``usage_metadata``), and ``no_usage_reason`` to what was impossible in it (None when
    nothing was). One pass over each details mapping: it runs for every model call."""
    counts = UsageCounts()
    call.input_tokens = counts.read("input_tokens", usage.get("input_tokens"))
    call.output_tokens = counts.read("output_tokens", usage.get("output_tokens"))
    call.cache_read_tokens = call.cache_write_tokens = call.reasoning_tokens = None
    details: dict[str, int] = {}
    inputs = usage.get("input_token_details")
    if inputs and (type(inputs) is dict or isinstance(inputs, Mapping)):
        _read_inputs(call, inputs, details, counts)
    outputs = usage.get("output_token_details")
    if outputs and (type(outputs) is dict or isinstance(outputs, Mapping)):
        reasoning: int | None = None
        for key, value in outputs.items():
            tokens = counts.read(f"output_token_details.{key}", value)
            if tokens is None:
                continue
            if key == "reasoning" or key.endswith("_reasoning"):  # priority_reasoning too
                reasoning = tokens if reasoning is None else reasoning + tokens
            elif key in _OUTPUT_PARTS:
                details[_OUTPUT_PARTS[key]] = tokens
        call.reasoning_tokens = reasoning
    call.token_details = details
    call.no_usage_reason = counts.reason


def read_token_usage(call: ModelCall, token_usage: Mapping[str, Any]) -> None:
    """Set ``call``'s tokens from an OpenAI-style ``token_usage`` (a result's ``llm_output``,
    from models that put no ``usage_metadata`` on their message), as langchain-openai reads it.
    Its counts are checked under their own names, so a reason names the field as sent."""
    counts = UsageCounts()
    prompt = token_usage.get("prompt_tokens_details")
    completion = token_usage.get("completion_tokens_details")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    completion = completion if isinstance(completion, Mapping) else {}

    def read(details: Mapping[str, Any], name: str, prefix: str) -> int | None:
        return counts.read(f"{prefix}.{name}", details.get(name))

    inputs = {
        "cache_read": read(prompt, "cached_tokens", "prompt_tokens_details"),
        "cache_creation": read(prompt, "cache_write_tokens", "prompt_tokens_details"),
        "audio": read(prompt, "audio_tokens", "prompt_tokens_details"),
    }
    outputs = {
        "reasoning": read(completion, "reasoning_tokens", "completion_tokens_details"),
        "audio": read(completion, "audio_tokens", "completion_tokens_details"),
    }
    read_usage(
        call,
        {
            "input_tokens": counts.read("prompt_tokens", token_usage.get("prompt_tokens")),
            "output_tokens": counts.read("completion_tokens", token_usage.get("completion_tokens")),
            "input_token_details": {k: v for k, v in inputs.items() if v is not None},
            "output_token_details": {k: v for k, v in outputs.items() if v is not None},
        },
    )
    call.no_usage_reason = counts.reason


def _read_inputs(
    call: ModelCall, inputs: Mapping[str, Any], details: dict[str, int], counts: UsageCounts
) -> None:
    """Cache reads, cache writes and the parts priced apart. The writes are
    ``cache_creation``, or the sum of the 5-minute and 1-hour parts when those are reported
    (langchain-anthropic then zeroes ``cache_creation``): the parts are of the whole, never
    added to it. Service-tier variants (``priority_cache_read``) count as what they are."""
    cache_read: int | None = None
    generic: int | None = None
    parts: int | None = None
    for key, value in inputs.items():
        tokens = counts.read(f"input_token_details.{key}", value)
        if tokens is None:
            continue
        if key == "cache_read" or key.endswith("_cache_read"):
            cache_read = tokens if cache_read is None else cache_read + tokens
        elif key == "cache_creation" or key.endswith("_cache_creation"):
            generic = tokens if generic is None else generic + tokens
        elif key in _INPUT_PARTS:
            details[_INPUT_PARTS[key]] = tokens
            if key in _WRITE_PARTS:
                parts = tokens if parts is None else parts + tokens
    call.cache_read_tokens = cache_read
    call.cache_write_tokens = generic if parts is None else max(generic or 0, parts)
