"""What a target's options or its calls can get wrong, as exceptions the run turns into one
line (an option before any call) or an example's error (a call)."""

from __future__ import annotations

from typing import Any


class TargetOptionError(ValueError):
    """A target option that does not fit the object it names, found before any call.

    ``at`` is where the option is inside the target's spec entry (``("input", "query")``),
    so the error can point at its line.
    """

    def __init__(self, message: str, *, hint: str | None = None, at: tuple[Any, ...] = ()):
        super().__init__(message)
        self.hint = hint
        self.at = at


class MissingInputField(LookupError):
    """An ``input:`` placeholder names a field this example's inputs do not have."""


class MissingOutput(LookupError):
    """``output:`` names a path that the target's result does not have."""
