"""Reading a span's attributes by every spelling producers write (the ``*_READ`` tuples of
:mod:`agenteval_cli.otel.names`)."""

from __future__ import annotations

from typing import Any

from agenteval_cli.core.token_counts import count_problem


def first(attributes: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The value of the first of ``names`` the attributes have, or None."""
    for name in names:
        value = attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def count(attributes: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """A token count, or None when no attribute gives one or it is impossible (negative,
    text, NaN: unknown, never zero or stored as given)."""
    return count_problem(first(attributes, names))[0]
