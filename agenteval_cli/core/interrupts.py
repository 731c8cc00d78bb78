"""A graph that stopped at ``interrupt()``: found in what it returned or in what it raised.

LangGraph's ``ainvoke`` returns the state so far with an ``__interrupt__`` key (a list of
``Interrupt(value=..., id=...)``) when a node called ``langgraph.types.interrupt`` (also
through langchain's ``HumanInTheLoopMiddleware``); a function target may return such a
state as it got it; a ``GraphInterrupt`` raised where no graph catches it carries the same
interrupts. Any of these is a request that stopped waiting for input: no answer, no error.

Kept free of LangGraph imports: the exception is known by its class names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INTERRUPT_KEY = "__interrupt__"
# LangGraph's GraphInterrupt and its subclasses (NodeInterrupt): what interrupt() raises.
_RAISED = frozenset({"GraphInterrupt", "NodeInterrupt"})
LONGEST = 4000  # characters of the description kept (one that is longer is cut, with "…")


def returned_interrupt(outputs: Any) -> str | None:
    """What a returned state's pending interrupts wait for, or None when it has none."""
    if not isinstance(outputs, Mapping):
        return None
    pending = outputs.get(INTERRUPT_KEY)
    if not pending:
        return None
    return describe(list(pending) if isinstance(pending, list | tuple) else [pending])


def raised_interrupts(exc: BaseException) -> list[Any] | None:
    """The interrupts a raised ``GraphInterrupt`` carries (one with no value when it carries
    none), or None for any other exception."""
    if not any(cls.__name__ in _RAISED for cls in type(exc).__mro__):
        return None
    pending = exc.args[0] if exc.args and isinstance(exc.args[0], list | tuple) else exc.args
    return list(pending) or [{"value": None}]


def describe(interrupts: list[Any]) -> str:
    """The values the interrupts carry, as one short line of JSON."""
    values = [_value(one) for one in interrupts]
    text = "; ".join(_json(v) for v in values) or "interrupt() with no value"
    return text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"


def _value(interrupt: Any) -> Any:
    """An ``Interrupt``'s value, whether the object or its stored form (``{"value": ...}``)."""
    if isinstance(interrupt, Mapping) and "value" in interrupt:
        return interrupt["value"]
    return getattr(interrupt, "value", interrupt)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)
