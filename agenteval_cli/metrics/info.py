"""What the reports need to know about a metric key: its label, its direction, its format,
read from the metric registry (:mod:`agenteval_cli.metrics.registry`).

Keys nobody declared (other evaluators' scores) are shown under their own name, formatted
as plain numbers, and taken as higher-is-better.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from agenteval_cli.metrics import registry
from agenteval_cli.metrics.registry import ALIASES, Format, MetricInfo

NA = "n/a"  # a figure no result gave (tokens a model did not report): unknown, not zero

__all__ = [
    "ALIASES",
    "MetricInfo",
    "fmt",
    "fmt_diff",
    "format_value",
    "higher_is_better",
    "info",
    "is_percent",
    "is_quantity",
    "label",
    "ordered",
]

info = registry.info


def label(key: str) -> str:
    return info(key).label


def higher_is_better(key: str) -> bool:
    return info(key).higher_is_better


def is_percent(key: str) -> bool:
    return info(key).format == "percent"


def is_quantity(key: str) -> bool:
    """A quantity (tokens, cost, a count) rather than an outcome: never a "failure", left
    out of disagreement and consistency."""
    return info(key).kind == "quantity"


def format_value(form: Format, value: float | None) -> str:
    """A value in one of the registry's formats."""
    if value is None:
        return "–"
    if form == "percent":
        return f"{value:.1%}"
    if form == "count":
        if value == 0:
            return "0"
        return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.1f}"
    if form == "money":
        return money(value)
    if form == "duration":
        return f"{value * 1000:.0f} ms" if abs(value) < 1 else f"{value:.2f} s"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def money(value: float) -> str:
    """Dollars in fixed point, never in exponent form: four decimals, or three significant
    digits below a cent (``$0.000093``, not ``$9.3e-05``), trailing zeros dropped there."""
    if value == 0 or not math.isfinite(value):
        return f"${value:g}"
    if abs(value) >= 0.01:
        return f"${value:.4f}"
    decimals = 2 - math.floor(math.log10(abs(value)))  # three significant digits
    rounded = round(value, decimals)
    if abs(rounded) >= 0.01:
        return f"${rounded:.4f}".rstrip("0")  # $0.009996 rounds up to $0.01
    return f"${rounded:.{decimals}f}".rstrip("0").rstrip(".")


def fmt(key: str, value: float | None) -> str:
    """A value as the table shows it: percentages, token counts, dollars or plain numbers."""
    return format_value(info(key).format, value)


def fmt_diff(key: str, value: float | None) -> str:
    """A signed difference in the metric's unit (percentage points for rates)."""
    if value is None:
        return "–"
    sign = "+" if value > 0 else "−" if value < 0 else "±"
    magnitude = abs(value)
    if is_percent(key):
        return f"{sign}{magnitude * 100:.1f} pp"
    return sign + fmt(key, magnitude)


def ordered(keys: Iterable[str], configured: Iterable[str] = ()) -> list[str]:
    """The configured keys in their order, the other declared ones, then the others
    alphabetically; the run's own figures last (see :func:`registry.ordered`)."""
    return registry.ordered(keys, configured)
