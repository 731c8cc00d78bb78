"""Token cost: tokens summed over every model call of the request, and USD by price table.

Tokens a model did not report are unknown: the sums are then null, with a note naming the
model, never 0 or $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric

PER_TOKENS = 1_000_000  # prices in the spec are USD per 1M tokens


def model_price(pricing: Mapping[str, Any], model: str) -> tuple[float, float] | None:
    entry = pricing.get(model)
    if entry is None:
        return None
    if isinstance(entry, Mapping):
        return float(entry["input"]), float(entry["output"])
    return float(entry.input), float(entry.output)


def price_usd(
    pricing: Mapping[str, Any], model: str, input_tokens: int | None, output_tokens: int | None
) -> float | None:
    """USD for one model's tokens; None when the tokens are unknown or the model unpriced."""
    price = model_price(pricing, model)
    if price is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / PER_TOKENS


def _known(value: int | None) -> float | None:
    return None if value is None else float(value)


@register(
    "token_cost",
    family="cost",
    reads="trace model calls (usage_metadata); spec pricing",
    description="input/output/total tokens per request and USD from the pricing table",
    metrics=[  # tokens and cost change with a reply's wording: consistency ignores them
        metric(
            "input_tokens",
            "input tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="input tokens",
            abbrev="input",
            volatile=True,
            under="total_tokens",
        ),
        metric(
            "output_tokens",
            "output tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="output tokens",
            abbrev="output",
            volatile=True,
            under="total_tokens",
        ),
        metric(
            "total_tokens",
            "tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="tokens",
            volatile=True,
        ),
        metric(
            "cost_usd",
            "cost / request",
            lower=True,
            fmt="money",
            quantity=True,
            short="cost",
            volatile=True,
        ),
    ],
    headline="cost_usd",
    needs_answer=False,  # every call made, up to a failure or an interrupt
)
def token_cost(*, pricing: Mapping[str, Any] | None = None) -> Any:
    """Tokens from the callbacks (the final state drops turns); unpriced models are named."""
    pricing = pricing or {}

    def evaluate(trace: Trace) -> list[dict]:
        if trace.untraced:
            reason = f"untraced: {trace.untraced}"
            keys = ("input_tokens", "output_tokens", "total_tokens", "cost_usd")
            return [{"key": key, "score": None, "comment": reason} for key in keys]
        by_model = trace.tokens
        unknown = [m for m, u in by_model.items() if u["input"] is None or u["output"] is None]
        input_tokens = _total(u["input"] for u in by_model.values())
        output_tokens = _total(u["output"] for u in by_model.values())
        breakdown = ", ".join(
            f"{m}: {_text(u['input'])}+{_text(u['output'])}" for m, u in by_model.items()
        )
        unknown_note = _unknown_note(trace, unknown)
        tokens_comment = unknown_note or breakdown
        unpriced = [m for m in by_model if model_price(pricing, m) is None]
        if unknown:
            cost: dict[str, Any] = {"key": "cost_usd", "score": None, "comment": unknown_note}
        elif unpriced:
            cost = {
                "key": "cost_usd",
                "score": None,
                "comment": f"no price for model(s) {unpriced}; add them under 'pricing:'",
            }
        else:
            usd = sum(
                price_usd(pricing, m, u["input"], u["output"]) or 0.0 for m, u in by_model.items()
            )
            cost = {"key": "cost_usd", "score": usd, "comment": breakdown}
        total = (
            None if input_tokens is None or output_tokens is None else input_tokens + output_tokens
        )
        return [
            {"key": "input_tokens", "score": _known(input_tokens), "comment": tokens_comment},
            {"key": "output_tokens", "score": _known(output_tokens), "comment": unknown_note},
            {"key": "total_tokens", "score": _known(total), "comment": unknown_note},
            cost,
        ]

    return evaluate


def _unknown_note(trace: Trace, unknown: list[str]) -> str | None:
    """Why the tokens are unknown: calls cut off while running (a timeout, an error
    elsewhere), which may still be billed, or models that reported no usage."""
    if not unknown:
        return None
    cut = [c for c in trace.model_calls if c.cut_off and not c.failed]
    silent = {
        c.model
        for c in trace.model_calls
        if not c.cut_off and not c.failed and (c.input_tokens is None or c.output_tokens is None)
    }
    notes = []
    if cut:
        agents = list(dict.fromkeys(c.agent for c in cut))
        notes.append(
            f"{len(cut)} model call(s) of {agents} still running when the request stopped "
            "(it may be billed; its usage never came back)"
        )
    if silent:
        notes.append(f"model(s) {[m for m in unknown if m in silent]} reported no token usage")
        reasons = {c.no_usage_reason: None for c in trace.model_calls if c.no_usage_reason}
        notes.extend(r for r in reasons if r)  # why, where the recorder could tell
    return "; ".join(notes)


def _total(values: Any) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _text(value: int | None) -> str:
    return "n/a" if value is None else str(value)
