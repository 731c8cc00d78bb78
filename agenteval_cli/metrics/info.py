"""What the reports need to know about a metric key: its label, its direction, its format.

Keys not listed here (other evaluators' scores) are shown under their own name, formatted
as plain numbers, and taken as higher-is-better.
"""

from __future__ import annotations

from collections.abc import Iterable

from agenteval_cli.metrics.summary import METRIC_KEYS

LABELS = {
    "routing_accuracy": "routing accuracy",
    "resolution_coverage": "resolution coverage",
    "handoff_chain_length": "handoff chain length",
    "ping_pong": "ping-pong rate",
    "input_tokens": "input tokens / request",
    "output_tokens": "output tokens / request",
    "total_tokens": "tokens / request",
    "cost_usd": "cost / request",
    "error_rate": "error rate",
    "latency_p50_s": "latency p50",
    "latency_p95_s": "latency p95",
    "consistency": "consistency",
}
LOWER_IS_BETTER = frozenset(
    {
        "handoff_chain_length",
        "ping_pong",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cost_usd",
        "error_rate",
        "latency_p50_s",
        "latency_p95_s",
        "unnecessary_steps",
        "judge_cost_usd",
        "judge_tokens",
    }
)
PERCENT = frozenset({"routing_accuracy", "resolution_coverage", "ping_pong", "error_rate"})
COUNTS = frozenset({"input_tokens", "output_tokens", "total_tokens", "judge_tokens"})
# Keys whose per-example value is a quantity rather than an outcome: never a "failure" and
# left out of disagreement and consistency.
QUANTITIES = COUNTS | {"cost_usd", "handoff_chain_length"}
# A bare evaluator name in a threshold means its headline key.
ALIASES = {"token_cost": "cost_usd"}


def label(key: str) -> str:
    return LABELS.get(key, key)


def higher_is_better(key: str) -> bool:
    return key not in LOWER_IS_BETTER


def fmt(key: str, value: float | None) -> str:
    """A value as the table shows it: percentages, token counts, dollars or plain numbers."""
    if value is None:
        return "–"
    if key in PERCENT:
        return f"{value:.1%}"
    if key in COUNTS:
        return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.1f}"
    if key in ("cost_usd", "judge_cost_usd"):
        return f"${value:.3g}" if abs(value) < 0.01 else f"${value:.4f}"
    if key.startswith("latency"):
        return f"{value * 1000:.0f} ms" if abs(value) < 1 else f"{value:.2f} s"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def fmt_diff(key: str, value: float | None) -> str:
    """A signed difference in the metric's unit (percentage points for rates)."""
    if value is None:
        return "–"
    sign = "+" if value > 0 else "−" if value < 0 else "±"
    magnitude = abs(value)
    if key in PERCENT:
        return f"{sign}{magnitude * 100:.1f} pp"
    return sign + fmt(key, magnitude)


def ordered(keys: Iterable[str]) -> list[str]:
    """The stable metric keys in their usual order, then the others alphabetically."""
    keys = set(keys)
    return [k for k in METRIC_KEYS if k in keys] + sorted(keys - set(METRIC_KEYS))
