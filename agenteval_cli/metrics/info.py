"""How a metric's values are written: its format (percent, count, money, duration, number).

What a key's format is comes from a catalog (:mod:`agenteval_cli.metrics.catalog`).
"""

from __future__ import annotations

import math

from agenteval_cli.metrics.registry import Format

NA = "n/a"  # a figure no result gave (tokens a model did not report): unknown, not zero


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
