"""The grammar of a threshold condition: ``">= 0.9"``, ``"< 0.002"`` or a bare number.

The spec checks a condition's form when it loads; the gate decides what a bare number
means for its metric (at least, or at most where lower is better)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_CONDITION = re.compile(r"\s*(>=|<=|==|>|<)?\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*")


def parse_condition_text(text: Any) -> tuple[str | None, float]:
    """``(operator or None for a bare number, bound)``; ValueError for anything else."""
    if isinstance(text, bool):
        raise ValueError(f"expected a condition such as '>= 0.9', got {text!r}")
    if isinstance(text, int | float):
        text = str(text)
    match = _CONDITION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"expected a condition such as '>= 0.9' or '<= 0.002', got {text!r}")
    return match.group(1), float(match.group(2))
