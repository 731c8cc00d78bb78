"""Spec failures as one line: ``file:line: where: what (how to fix it)``.

pydantic reports a failure as a location tuple plus a generic English message and a
documentation link. Users of the CLI need the YAML line and a fix instead, so validators
raise :class:`SpecValueError` (message, hint, finer location) and :func:`user_error`
turns the first failure into a :class:`UserError` pointing at the line of the value.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.yamlsource import KeyPath, YamlDocument, describe, format_key_path

__all__ = ["SpecValueError", "error_at", "user_error"]


class SpecValueError(ValueError):
    """A validation failure with a fix, raised inside validators and turned into a UserError.

    ``at`` extends the location pydantic reports (e.g. the offending key of a
    mapping); ``about_key`` says the message names that key itself, so the error
    reads "unknown key 'x' in targets.swarm" rather than "targets.swarm.x: ...".
    """

    def __init__(
        self, message: str, *, hint: str | None = None, at: KeyPath = (), about_key: bool = False
    ) -> None:
        super().__init__(message)
        self.hint = hint
        self.at = at
        self.about_key = about_key


# pydantic's error type -> what a valid value looks like, for "expected X, got Y".
_EXPECTED = {
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "list_type": "a list",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_too_short": "a non-empty string",
}


def user_error(exc: ValidationError, document: YamlDocument, source: Path) -> UserError:
    """The first validation error as a UserError at the line of the value it is about."""
    error = exc.errors(include_url=False)[0]
    loc: KeyPath = tuple(error["loc"])
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, SpecValueError):
        loc += cause.at
        message, hint, about_key = str(cause), cause.hint, cause.about_key
    elif error["type"] == "missing":
        message, hint, about_key = f"missing required key {loc[-1]!r}", None, False
        loc = loc[:-1]
    elif error["type"] in _EXPECTED:
        message = f"expected {_EXPECTED[error['type']]}, got {describe(error.get('input'))}"
        hint, about_key = None, False
    else:
        message, hint, about_key = error["msg"][:1].lower() + error["msg"][1:], None, False
    return error_at(document, source, document.locate(loc), message, hint=hint, about_key=about_key)


def error_at(
    document: YamlDocument,
    source: Path,
    path: KeyPath,
    message: str,
    *,
    hint: str | None = None,
    about_key: bool = False,
) -> UserError:
    """``message`` at the line of ``path``: "where: what", or "what in parent" when the
    message names the key itself (``about_key``)."""
    if not about_key:
        return document.error(path, message, file=source, hint=hint)
    parent = format_key_path(path[:-1])
    text = f"{message} in {parent}" if parent else message
    return UserError(text, file=source, line=document.line_of(*path), hint=hint)
