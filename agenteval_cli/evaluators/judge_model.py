"""The judge's chat model: credentials checked up front, and its own tokens and USD recorded
apart from the target's.

The runner traces the target inside ``tracing.capture()``; judges run after that block, so
their calls never reach the target's trace. Each judge call is measured with LangChain's
usage callback and reported to the sink that ``scoring.score`` opens for one result; scoring
turns the sum into ``judge_input_tokens``, ``judge_output_tokens`` and ``judge_cost_usd``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agenteval_cli.core.records import ModelCall, Score
from agenteval_cli.metrics.prices import (
    CallPrice,
    overflow_reason,
    price_call,
    sources,
    usd_score,
)
from agenteval_cli.metrics.registry import declare, metric

# A judge's own spend, per result: kept apart from the target's tokens and cost, shown in
# the run table only as the totals below.
JUDGE_METRICS = (
    metric(
        "judge_input_tokens",
        "judge input tokens",
        lower=True,
        fmt="count",
        quantity=True,
        shown=False,
        across_turns="sum",
    ),
    metric(
        "judge_output_tokens",
        "judge output tokens",
        lower=True,
        fmt="count",
        quantity=True,
        shown=False,
        across_turns="sum",
    ),
    metric(
        "judge_cost_usd",
        "judge cost",
        lower=True,
        fmt="money",
        quantity=True,
        shown=False,
        across_turns="sum",
    ),
)
JUDGE_KEYS = tuple(m.key for m in JUDGE_METRICS)
declare(
    *JUDGE_METRICS,
    metric(
        "judge_cost_usd_total",
        "judge cost (total)",
        lower=True,
        fmt="money",
        quantity=True,
        scope="run",
        aggregation="sum",
        of=("judge_cost_usd",),
        complete=True,
        compared=True,
    ),
    metric(
        "judge_tokens_total",
        "judge tokens (total)",
        lower=True,
        fmt="count",
        quantity=True,
        scope="run",
        aggregation="sum",
        of=("judge_input_tokens", "judge_output_tokens"),
    ),
)

# The variable each provider's LangChain integration reads its key from.
CREDENTIALS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "cohere": "COHERE_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PPLX_API_KEY",
}
# init_chat_model's own inference from a bare model name.
PREFIXES = {
    "gpt-": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "claude": "anthropic",
    "gemini": "google_genai",
    "mistral": "mistralai",
    "command": "cohere",
    "deepseek": "deepseek",
    "grok": "xai",
}


# Seconds one request of a judge may wait for its server (the provider's ``timeout``) unless
# model_kwargs set one: a server that never answers fails the call instead of holding it.
JUDGE_REQUEST_TIMEOUT_S = 60.0


class JudgeUnavailable(Exception):
    """The judge cannot run here (no credentials, no provider package): skip it, warn once."""

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


def provider_of(model: str) -> str | None:
    if ":" in model:
        return model.split(":", 1)[0]
    return next((p for prefix, p in PREFIXES.items() if model.startswith(prefix)), None)


# What a judge on a server of its own (``base_url:``) sends when no key is set: the provider
# clients refuse to start without one, and a local server that needs none ignores it.
NO_KEY = "agenteval-no-key"


def key_source(model: str, model_kwargs: Mapping[str, Any] | None = None) -> str:
    """Where the judge's key comes from, to name it when it is refused (never its value)."""
    kwargs = model_kwargs or {}
    variable = CREDENTIALS.get(provider_of(model) or "")
    if "api_key" in kwargs and kwargs["api_key"] != NO_KEY:
        return "the api_key under model_kwargs"
    if variable and os.environ.get(variable):
        return f"the key in {variable}"
    server = kwargs.get("base_url")
    unset = f"{variable} is not set" if variable else "no key is set"
    return f"no key ({unset}; the server at {server} asks for one)"


def make_chat_model(model: str, model_kwargs: Mapping[str, Any] | None = None) -> Any:
    """``init_chat_model(model, **model_kwargs)``, or JudgeUnavailable naming what is missing.

    A judge with a ``base_url`` of its own runs without the provider's key when none is set
    (a local server may need none); a server that does need one refuses the first call."""
    kwargs = dict(model_kwargs or {})
    provider = provider_of(model)
    variable = CREDENTIALS.get(provider or "")
    if variable and not os.environ.get(variable) and "api_key" not in kwargs:
        if not kwargs.get("base_url"):
            raise JudgeUnavailable(f"{variable} is not set", variable=variable)
        kwargs["api_key"] = NO_KEY
    from langchain.chat_models import init_chat_model

    if "timeout" not in kwargs and "request_timeout" not in kwargs:
        kwargs["timeout"] = JUDGE_REQUEST_TIMEOUT_S
    try:
        return init_chat_model(model, **kwargs)
    except ImportError as exc:
        raise JudgeUnavailable(f"model {model!r} needs a provider package: {exc}") from None


@dataclass
class JudgeUsage:
    model: str
    input_tokens: int | None  # None: the usage gave an impossible count (price.reason says)
    output_tokens: int | None
    cost_usd: float | None  # None: neither the spec nor the price database prices it
    price: CallPrice | None = None


_SINK: ContextVar[list[JudgeUsage] | None] = ContextVar("agenteval_judge_usage", default=None)


class collect_judge_usage:
    """Collect what judges spend while scoring one result (into ``into``, when the result's
    scoring goes on later with the same sink). A class rather than a generator: it is
    entered once per result."""

    def __init__(self, into: list[JudgeUsage] | None = None) -> None:
        self._into = into

    def __enter__(self) -> list[JudgeUsage]:
        sink: list[JudgeUsage] = [] if self._into is None else self._into
        self._token = _SINK.set(sink)
        return sink

    def __exit__(self, *exc: object) -> None:
        _SINK.reset(self._token)


@contextmanager
def measure(configured_model: str, pricing: Mapping[str, Any] | None) -> Iterator[None]:
    """Measure the chat-model calls inside the block and report them to the open sink."""
    from langchain_core.callbacks import get_usage_metadata_callback

    with get_usage_metadata_callback() as handler:
        try:
            yield
        finally:
            sink = _SINK.get()
            if sink is not None:
                for model, usage in handler.usage_metadata.items():
                    sink.append(_usage(model, usage, configured_model, pricing or {}))


def _usage(model: str, usage: Any, configured: str, pricing: Mapping[str, Any]) -> JudgeUsage:
    """One judge model's usage, priced as a target's call is: its parts read as the
    recorder reads them, the spec entry for the model (or for the configured name), else
    the price database for the reported name with the configured provider (a judge's own
    server, ``base_url``, may serve another model under the configured name)."""
    from agenteval_cli.trace.usage import read_usage

    bare = configured.split(":", 1)[-1]
    named = model if model in pricing or bare not in pricing else bare
    call = ModelCall(agent="judge", model=named, provider=provider_of(configured))
    read_usage(call, usage)
    price = price_call(call, pricing)
    cost = None if price.usd is None else float(price.usd)
    return JudgeUsage(model, call.input_tokens, call.output_tokens, cost, price)


def usage_scores(usages: list[JudgeUsage]) -> list[Score]:
    """One result's judge spend, as scores kept apart from the target's token_cost."""
    if not usages:
        return []
    models = ", ".join(dict.fromkeys(u.model for u in usages))
    unknown = "; ".join(
        dict.fromkeys(
            u.price.reason
            for u in usages
            if (u.input_tokens is None or u.output_tokens is None) and u.price and u.price.reason
        )
    )
    inp = _known_sum([u.input_tokens for u in usages])
    out = _known_sum([u.output_tokens for u in usages])
    unpriced = sorted({u.model for u in usages if u.cost_usd is None})
    prices = [u.price for u in usages if u.price is not None]
    if unpriced:
        reasons = dict.fromkeys(p.reason for p in prices if p.reason)
        comment = "; ".join(filter(None, reasons)) or f"no price for judge model(s) {unpriced}"
        cost = Score("judge_cost_usd", None, comment)
    else:
        usd = sum((Decimal(repr(u.cost_usd or 0.0)) for u in usages), Decimal(0))
        score = usd_score(usd)
        comment = overflow_reason(usd) if score is None else f"{models}; prices: {sources(prices)}"
        cost = Score("judge_cost_usd", score, comment)
    return [
        Score("judge_input_tokens", None if inp is None else float(inp), unknown or models),
        Score("judge_output_tokens", None if out is None else float(out), unknown or models),
        cost,
    ]


def _known_sum(values: list[int | None]) -> int | None:
    """The sum, unknown once one part is."""
    return None if any(v is None for v in values) else sum(v or 0 for v in values)
