"""Reading a span's attributes by every spelling producers write (the ``*_READ`` tuples of
:mod:`agenteval_cli.otel.names`)."""

from __future__ import annotations

from typing import Any


def first(attributes: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The value of the first of ``names`` the attributes have, or None."""
    for name in names:
        value = attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def count(attributes: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """A token count, or None when no attribute gives one (unknown, never zero)."""
    value = first(attributes, names)
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
