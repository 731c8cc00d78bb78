"""A chat model's reported usage, read into a :class:`ModelCall`: every part that is billed apart.

LangChain's ``UsageMetadata`` is the form read: ``input_tokens`` include cache reads and cache
writes, ``output_tokens`` include reasoning; ``input_token_details`` says ``cache_read``,
``cache_creation`` and ``audio``, ``output_token_details`` ``reasoning`` and ``audio``.
langchain-openai prefixes these with the service tier (``priority_cache_read``); they are
still cache reads. langchain-anthropic, when Anthropic splits cache writes by lifetime,
leaves ``cache_creation`` at 0 and reports the writes as ``ephemeral_5m_input_tokens`` and
``ephemeral_1h_input_tokens``: the cache writes are then their sum, kept apart as the price
database's ``cache_write_5m_tokens`` and ``cache_write_1h_tokens`` (priced differently).

A part the model did not report stays ``None`` (unknown); a reported 0 is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.core.records import ModelCall

__all__ = ["read_token_usage", "read_usage"]

# LangChain detail key -> the price database's usage name, for parts kept in token_details
_INPUT_PARTS = {
    "audio": "input_audio_tokens",
    "ephemeral_5m_input_tokens": "cache_write_5m_tokens",
    "ephemeral_1h_input_tokens": "cache_write_1h_tokens",
}
_OUTPUT_PARTS = {"audio": "output_audio_tokens"}
_WRITE_PARTS = frozenset(("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"))


# Past this a count is no longer exact in the float a score is (and its cost may overflow).
MAX_TOKENS = 2**53


def _count(value: Any) -> int | None:
    """A token count as reported, or ``None`` for anything that is not a number, or is
    one no count holds (infinite, NaN, above :data:`MAX_TOKENS`)."""
    if type(value) is int:  # the usual case, first
        return value if -MAX_TOKENS <= value <= MAX_TOKENS else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return int(value) if -MAX_TOKENS <= value <= MAX_TOKENS else None  # nan fails both


def read_usage(call: ModelCall, usage: Mapping[str, Any]) -> None:
    """Set ``call``'s tokens from a LangChain ``UsageMetadata`` (a message's
    ``usage_metadata``). One pass over each details mapping: it runs for every model call."""
    call.input_tokens = _count(usage.get("input_tokens"))
    call.output_tokens = _count(usage.get("output_tokens"))
    for key in ("input_tokens", "output_tokens"):
        value = usage.get(key)
        if _count(value) is None and isinstance(value, int | float) and not isinstance(value, bool):
            shown = str(value) if len(str(value)) <= 20 else f"a number of {len(str(value))} digits"
            call.no_usage_reason = f"its {key} were {shown}, not a token count (at most 2**53)"
    call.cache_read_tokens = call.cache_write_tokens = call.reasoning_tokens = None
    details: dict[str, int] = {}
    inputs = usage.get("input_token_details")
    if inputs and isinstance(inputs, Mapping):
        _read_inputs(call, inputs, details)
    outputs = usage.get("output_token_details")
    if outputs and isinstance(outputs, Mapping):
        reasoning: int | None = None
        for key, value in outputs.items():
            tokens = _count(value)
            if tokens is None:
                continue
            if key == "reasoning" or key.endswith("_reasoning"):  # priority_reasoning too
                reasoning = tokens if reasoning is None else reasoning + tokens
            elif key in _OUTPUT_PARTS:
                details[_OUTPUT_PARTS[key]] = tokens
        call.reasoning_tokens = reasoning
    call.token_details = details


def read_token_usage(call: ModelCall, token_usage: Mapping[str, Any]) -> None:
    """Set ``call``'s tokens from an OpenAI-style ``token_usage`` (a result's ``llm_output``,
    from models that put no ``usage_metadata`` on their message), as langchain-openai reads it."""
    prompt = token_usage.get("prompt_tokens_details")
    completion = token_usage.get("completion_tokens_details")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    completion = completion if isinstance(completion, Mapping) else {}
    inputs = {
        "cache_read": prompt.get("cached_tokens"),
        "cache_creation": prompt.get("cache_write_tokens"),
        "audio": prompt.get("audio_tokens"),
    }
    outputs = {
        "reasoning": completion.get("reasoning_tokens"),
        "audio": completion.get("audio_tokens"),
    }
    read_usage(
        call,
        {
            "input_tokens": token_usage.get("prompt_tokens"),
            "output_tokens": token_usage.get("completion_tokens"),
            "input_token_details": {k: v for k, v in inputs.items() if v is not None},
            "output_token_details": {k: v for k, v in outputs.items() if v is not None},
        },
    )


def _read_inputs(call: ModelCall, inputs: Mapping[str, Any], details: dict[str, int]) -> None:
    """Cache reads, cache writes and the parts priced apart. The writes are
    ``cache_creation``, or the sum of the 5-minute and 1-hour parts when those are reported
    (langchain-anthropic then zeroes ``cache_creation``): the parts are of the whole, never
    added to it. Service-tier variants (``priority_cache_read``) count as what they are."""
    cache_read: int | None = None
    generic: int | None = None
    parts: int | None = None
    for key, value in inputs.items():
        tokens = _count(value)
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
