"""Token cost: tokens summed over every model call of the request, and USD by price table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.evaluators.registry import register
from agenteval_cli.records import Trace

PER_TOKENS = 1_000_000  # prices in the spec are USD per 1M tokens


def _price(pricing: Mapping[str, Any], model: str) -> tuple[float, float] | None:
    entry = pricing.get(model)
    if entry is None:
        return None
    if isinstance(entry, Mapping):
        return float(entry["input"]), float(entry["output"])
    return float(entry.input), float(entry.output)


@register(
    "token_cost",
    family="cost",
    reads="trace model calls (usage_metadata); spec pricing",
    description="input/output/total tokens per request and USD from the pricing table",
    keys=("input_tokens", "output_tokens", "total_tokens", "cost_usd"),
)
def token_cost(*, pricing: Mapping[str, Any] | None = None) -> Any:
    """Tokens from the callbacks (the final state drops turns); unpriced models are named."""
    pricing = pricing or {}

    def evaluate(trace: Trace) -> list[dict]:
        by_model = trace.tokens
        input_tokens = sum(u["input"] for u in by_model.values())
        output_tokens = sum(u["output"] for u in by_model.values())
        usd = 0.0
        unpriced = []
        for model, usage in by_model.items():
            price = _price(pricing, model)
            if price is None:
                unpriced.append(model)
                continue
            usd += (usage["input"] * price[0] + usage["output"] * price[1]) / PER_TOKENS
        breakdown = ", ".join(f"{m}: {u['input']}+{u['output']}" for m, u in by_model.items())
        cost: dict[str, Any] = {"key": "cost_usd", "score": usd, "comment": breakdown}
        if unpriced:
            cost = {
                "key": "cost_usd",
                "score": None,
                "comment": f"no price for model(s) {unpriced}; add them under 'pricing:'",
            }
        return [
            {"key": "input_tokens", "score": float(input_tokens), "comment": breakdown},
            {"key": "output_tokens", "score": float(output_tokens), "comment": None},
            {"key": "total_tokens", "score": float(input_tokens + output_tokens), "comment": None},
            cost,
        ]

    return evaluate
