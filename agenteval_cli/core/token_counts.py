"""Token counts as a usage report gives them, checked before anything keeps them.

Usage comes from outside: a provider's response, a gateway in between, a trace file, a
LangSmith run. A count is a whole number of tokens from 0 to :data:`MOST_TOKENS`; integers
written as text (OTLP JSON writes them so) and whole floats are read as the number they are.
Anything else (negative, fractional, NaN, infinite, text that is no integer, a boolean, a
figure no call comes near) is *unknown*, never stored: a usage of -500 tokens is wrong, and
so would be every total and cost computed from it. Each such count is kept as a reason, so
the figures it leaves unknown say why.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["IMPOSSIBLE", "MOST_TOKENS", "UsageCounts", "count_problem"]

# Far beyond any model's context window and any one answer: a larger count is a broken report
MOST_TOKENS = 1_000_000_000
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,30}")
_SHOWN = 24  # characters of a value a reason quotes
# How every reason :class:`UsageCounts` gives begins
IMPOSSIBLE = "impossible token count(s) taken as unknown"


def count_problem(value: Any) -> tuple[int | None, str | None]:
    """(count, None) for a valid token count, (None, why) for anything else; ``None``
    itself is (None, None): nothing reported."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, "not a number"
    if isinstance(value, float):
        if math.isnan(value):
            return None, "not a number"
        if math.isinf(value):
            return None, "infinite"
        if not value.is_integer():
            return None, "not a whole number"
        return _checked(int(value))
    if isinstance(value, int):
        return _checked(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return _checked(int(value.strip()))
    return None, "not a number"


def _checked(number: int) -> tuple[int | None, str | None]:
    if number < 0:
        return None, "negative"
    if number > MOST_TOKENS:
        return None, f"more than {MOST_TOKENS:,} tokens in one call"
    return number, None


@dataclass
class UsageCounts:
    """The counts of one usage report, read one by one; what was impossible is remembered
    for :attr:`reason`."""

    problems: list[str] = field(default_factory=list)

    def read(self, name: str, value: Any) -> int | None:
        """``value`` as a token count, or None: not reported, or impossible (remembered)."""
        if type(value) is int and 0 <= value <= MOST_TOKENS:  # the usual case, first
            return value
        count, problem = count_problem(value)
        if problem is not None:
            shown = repr(value)
            shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
            self.problems.append(f"{name} {shown} ({problem})")
        return count

    @property
    def reason(self) -> str | None:
        """Why some figure is unknown, or None when every count read was valid."""
        if not self.problems:
            return None
        return f"{IMPOSSIBLE}: " + ", ".join(self.problems)
