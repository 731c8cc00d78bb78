"""Text that can always be made and always be stored.

A target's exception may have a ``__str__`` that raises, and any string may hold a lone
surrogate (``"\\ud800"``, which a JSON escape or a bad decode can produce) that UTF-8, and so
the store, the terminal and every report, cannot encode. One such value must cost its example
a recorded error or a replacement character, never the run.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; the same object when it has none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def message_of(error: BaseException) -> str:
    """``str(error)``, storable; a placeholder when ``__str__`` raises or returns no text."""
    try:
        message = str(error)
    except Exception as exc:
        return f"<str() of the exception raised {type(exc).__name__}>"
    if not isinstance(message, str):  # str() of a str subclass can return anything
        return "<str() of the exception returned no text>"
    return storable(message)


def exception_text(error: BaseException) -> str:
    """``"KeyError: 'customer_id'"``: what a failed call records. Never raises."""
    return f"{type(error).__name__}: {message_of(error)}"


def lone_surrogate_at(value: object) -> tuple[tuple[object, ...], str] | None:
    """The key path of the first string (or key) in JSON-like ``value`` that holds a lone
    surrogate, with the surrogate escaped (``\\ud800``); None when there is none."""
    stack: list[tuple[object, tuple[object, ...]]] = [(value, ())]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            found = None if item.isascii() else _SURROGATE.search(item)
            if found:
                return at, f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                found = _SURROGATE.search(key) if isinstance(key, str) else None
                if found:
                    return (*at, key), f"\\u{ord(found.group()):04x}"
                stack.append((child, (*at, key)))
        elif isinstance(item, list):
            stack.extend((child, (*at, index)) for index, child in reversed(list(enumerate(item))))
    return None
