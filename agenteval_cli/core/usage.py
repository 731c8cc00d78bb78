"""A LangChain ``UsageMetadata`` as the token fields of a
:class:`~agenteval_cli.core.records.ModelCall`.

By LangChain's convention ``input_tokens`` includes cache reads and writes and
``output_tokens`` includes reasoning. langchain-anthropic reports cache writes split by
lifetime under ``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens`` and then leaves
``cache_creation`` at 0: the writes are the sum of the parts, which are priced apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# input_token_details / output_token_details keys -> the price database's usage names
DETAIL_NAMES = {
    ("input", "ephemeral_5m_input_tokens"): "cache_write_5m_tokens",
    ("input", "ephemeral_1h_input_tokens"): "cache_write_1h_tokens",
    ("input", "audio"): "input_audio_tokens",
    ("output", "audio"): "output_audio_tokens",
}


def call_fields(usage: Mapping[str, Any]) -> dict[str, Any]:
    """``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``reasoning_tokens`` and ``token_details`` from one usage (None: not reported)."""
    inputs = usage.get("input_token_details") or {}
    outputs = usage.get("output_token_details") or {}
    details: dict[str, int] = {}
    for (side, name), key in DETAIL_NAMES.items():
        value = (inputs if side == "input" else outputs).get(name)
        if isinstance(value, int):
            details[key] = value
    writes = _int(inputs.get("cache_creation"))
    parts = [details.get("cache_write_5m_tokens"), details.get("cache_write_1h_tokens")]
    if any(p is not None for p in parts):
        writes = max(writes or 0, sum(p or 0 for p in parts))
    return {
        "input_tokens": _int(usage.get("input_tokens")),
        "output_tokens": _int(usage.get("output_tokens")),
        "cache_read_tokens": _int(inputs.get("cache_read")),
        "cache_write_tokens": writes,
        "reasoning_tokens": _int(outputs.get("reasoning")),
        "token_details": details,
    }


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
