"""Token cost: tokens summed over every model call of the request, and its USD, each call
priced by :mod:`agenteval_cli.metrics.prices` (the spec's ``pricing:``, else genai-prices)
when the run recorded it: the price kept with each call is the one read.

Tokens a model did not report are unknown: the sums are then null, with a note naming the
model, never 0 or $0; so is the cost of a model neither the spec nor the database prices.
The cost's comment says where its prices came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval_cli.core.records import Trace
from agenteval_cli.core.token_counts import IMPOSSIBLE
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.info import NA
from agenteval_cli.metrics.prices import (
    CallPrice,
    overflow_reason,
    price_of,
    sources,
    total,
    usd_score,
)
from agenteval_cli.metrics.registry import declare, metric


def request_prices(trace: Trace, pricing: Mapping[str, Any] | None) -> list[CallPrice]:
    """The price of every call the request made (retried attempts' too; a call that raised
    answered nothing and is left out): the one the run gave it, kept with the call."""
    return [price_of(call, pricing) for call in trace.model_calls if not call.failed]


def _known(value: int | None) -> float | None:
    return None if value is None else float(value)


@register(
    "token_cost",
    family="cost",
    reads="trace model calls (usage_metadata); spec pricing, else the genai-prices database",
    description="input/output/total tokens per request, its USD (each call priced by its "
    "parts: cache reads, cache writes, reasoning) and the share of input read from cache",
    metrics=[
        metric(
            "input_tokens",
            "input tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="input tokens",
            abbrev="input",
            under="total_tokens",
            across_turns="sum",
        ),
        metric(
            "output_tokens",
            "output tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="output tokens",
            abbrev="output",
            under="total_tokens",
            across_turns="sum",
        ),
        metric(
            "total_tokens",
            "tokens / request",
            lower=True,
            fmt="count",
            quantity=True,
            short="tokens",
            across_turns="sum",
        ),
        metric(
            "cost_usd",
            "cost / request",
            lower=True,
            fmt="money",
            quantity=True,
            short="cost",
            across_turns="sum",
        ),
        metric(  # shown only where some model reported its cache reads
            "cache_share",
            "cache share of input",
            fmt="percent",
            quantity=True,
            short="cache share",
            reported=True,
        ),
    ],
    headline="cost_usd",
    needs_answer=False,  # every call made, up to a failure or an interrupt
)
def token_cost(*, pricing: Mapping[str, Any] | None = None) -> Any:
    """Tokens from the callbacks (the final state drops turns); unpriced models are named."""

    def evaluate(trace: Trace) -> list[dict]:
        if trace.untraced:
            reason = f"untraced: {trace.untraced}"
            keys = ("input_tokens", "output_tokens", "total_tokens", "cost_usd", "cache_share")
            return [{"key": key, "score": None, "comment": reason} for key in keys]
        by_model = trace.tokens
        unknown = [m for m, u in by_model.items() if u["input"] is None or u["output"] is None]
        input_tokens = _total(u["input"] for u in by_model.values())
        output_tokens = _total(u["output"] for u in by_model.values())
        breakdown = ", ".join(
            f"{m}: {_text(u['input'])}+{_text(u['output'])}{_parts(trace, m)}"
            for m, u in by_model.items()
        )
        unknown_note = _unknown_note(trace, unknown)
        tokens_comment = unknown_note or breakdown
        prices = request_prices(trace, pricing)
        usd = total(prices)
        if unknown:
            cost: dict[str, Any] = {"key": "cost_usd", "score": None, "comment": unknown_note}
        elif usd is None:
            reasons = dict.fromkeys(p.reason for p in prices if p.reason)
            cost = {"key": "cost_usd", "score": None, "comment": "; ".join(filter(None, reasons))}
        elif usd_score(usd) is None:
            cost = {"key": "cost_usd", "score": None, "comment": overflow_reason(usd)}
        else:
            notes = dict.fromkeys(note for p in prices for note in p.notes)
            comment = f"{breakdown}; prices: {sources(prices)}"
            score = usd_score(usd)
            cost = {"key": "cost_usd", "score": score, "comment": "; ".join([comment, *notes])}
        total_tokens = (
            None if input_tokens is None or output_tokens is None else input_tokens + output_tokens
        )
        return [
            {"key": "input_tokens", "score": _known(input_tokens), "comment": tokens_comment},
            {"key": "output_tokens", "score": _known(output_tokens), "comment": unknown_note},
            {"key": "total_tokens", "score": _known(total_tokens), "comment": unknown_note},
            cost,
            _cache_share(trace),
        ]

    return evaluate


def _cache_share(trace: Trace) -> dict[str, Any]:
    """Cache-read tokens over input tokens, over the calls that reported their cache reads
    (None when none did: a share nobody reported is unknown, not 0%)."""
    calls = [c for c in trace.model_calls if not c.failed and c.cache_read_tokens is not None]
    inputs = sum(c.input_tokens or 0 for c in calls)
    if not calls or not inputs:
        return {"key": "cache_share", "score": None, "comment": "no model reported cache reads"}
    reads = sum(c.cache_read_tokens or 0 for c in calls)
    return {"key": "cache_share", "score": reads / inputs, "comment": f"{reads} of {inputs}"}


PARTS = (
    ("cache_read_tokens", "cache read"),
    ("cache_write_tokens", "cache write"),
    ("reasoning_tokens", "reasoning"),
)


def _parts(trace: Trace, model: str) -> str:
    """`` (54000 cache read, 200 reasoning)``: the parts a model's calls reported, if any."""
    calls = [c for c in trace.model_calls if c.model == model and not c.failed]
    shown = []
    for field, name in PARTS:
        values = [getattr(c, field) for c in calls if getattr(c, field) is not None]
        if values:
            shown.append(f"{sum(values)} {name}")
    return f" ({', '.join(shown)})" if shown else ""


def _unknown_note(trace: Trace, unknown: list[str]) -> str | None:
    """Why the tokens are unknown: calls cut off while running (a timeout, an error
    elsewhere), which may still be billed, or models that reported no usage."""
    if not unknown:
        return None
    cut = [c for c in trace.model_calls if c.cut_off and not c.failed]
    silent = {
        c.model
        for c in trace.model_calls
        if not c.cut_off
        and not c.failed
        and (c.input_tokens is None or c.output_tokens is None)
        and not (c.no_usage_reason or "").startswith(IMPOSSIBLE)  # it did, impossibly
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
    return NA if value is None else str(value)


# The whole run's spend, next to the mean per request: every request's calls, those of
# requests that errored, stopped at an interrupt or were retried included; unknown as soon
# as one request's cost is.
declare(
    metric(
        "cost_usd_total",
        "cost (total)",
        lower=True,
        fmt="money",
        quantity=True,
        scope="run",
        aggregation="sum",
        of=("cost_usd",),
        complete=True,
        compared=True,
    )
)
