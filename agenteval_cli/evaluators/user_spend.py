"""A simulated user's own spend: the model calls that wrote a conversation's turns, counted
and priced apart from the target's (as a judge's are), so a run that pays for an LLM user
says so and the target's cost stays the target's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from agenteval_cli.core.records import ModelCall, Score, Turn
from agenteval_cli.metrics.prices import overflow_reason, price_of, sources, usd_score
from agenteval_cli.metrics.registry import declare, metric

USER_METRICS = (
    metric(
        "user_input_tokens",
        "simulated user input tokens",
        lower=True,
        fmt="count",
        quantity=True,
        shown=False,
        level="conversation",
    ),
    metric(
        "user_output_tokens",
        "simulated user output tokens",
        lower=True,
        fmt="count",
        quantity=True,
        shown=False,
        level="conversation",
    ),
    metric(
        "user_cost_usd",
        "simulated user cost",
        lower=True,
        fmt="money",
        quantity=True,
        shown=False,
        level="conversation",
    ),
)
declare(
    *USER_METRICS,
    metric(
        "user_cost_usd_total",
        "simulated user cost (total)",
        lower=True,
        fmt="money",
        quantity=True,
        scope="run",
        aggregation="sum",
        of=("user_cost_usd",),
        complete=True,
        compared=True,
    ),
    metric(
        "user_tokens_total",
        "simulated user tokens (total)",
        lower=True,
        fmt="count",
        quantity=True,
        scope="run",
        aggregation="sum",
        of=("user_input_tokens", "user_output_tokens"),
    ),
)


def user_spend(turns: Sequence[Turn], pricing: Mapping[str, Any] | None) -> list[Score]:
    """The simulated user's tokens and cost over a conversation's turns; none when no
    model wrote them (a scripted conversation, a user function calling no model). Unknown
    (null, with the reason) once one call's usage or price is."""
    calls: list[ModelCall] = [c for turn in turns for c in turn.user_calls if not c.failed]
    if not calls:
        return []
    models = ", ".join(dict.fromkeys(c.model for c in calls))
    scores = [_tokens("user_input_tokens", calls, "input_tokens", models)]
    scores.append(_tokens("user_output_tokens", calls, "output_tokens", models))
    prices = [price_of(call, pricing) for call in calls]
    unpriced = next((p for p in prices if p.usd is None), None)
    if unpriced is not None:
        scores.append(Score("user_cost_usd", None, unpriced.reason or "no price"))
    else:
        usd = sum((p.usd or Decimal(0) for p in prices), Decimal(0))
        score = usd_score(usd)
        comment = overflow_reason(usd) if score is None else f"{models}; prices: {sources(prices)}"
        scores.append(Score("user_cost_usd", score, comment))
    return scores


def _tokens(key: str, calls: list[ModelCall], part: str, models: str) -> Score:
    values = [getattr(call, part) for call in calls]
    if any(value is None for value in values):
        reasons = [c.no_usage_reason for c in calls if getattr(c, part) is None]
        said = "; ".join(dict.fromkeys(r for r in reasons if r))
        return Score(key, None, said or "a simulated user's model reported no token usage")
    return Score(key, float(sum(values)), models)
