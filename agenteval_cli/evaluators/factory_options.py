"""A built-in evaluator's own options are its factory's keyword parameters: their type hints
and defaults make a pydantic model, so a spec's values are checked against the types the
factory declares (and :mod:`agenteval_cli.evaluators.options` describes them in the spec's
JSON Schema) without a second table of options."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agenteval_cli.core.yamlsource import describe

__all__ = ["CONTEXT_PARAMETERS", "check_options", "option_fields"]

# Filled in from the experiment, never written in YAML; `evaluators show` hides them.
CONTEXT_PARAMETERS = ("pricing", "name", "base_dir", "spec_file", "spec_line")

_FORBID = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def option_fields(factory: Callable[..., Any]) -> dict[str, Any]:
    """``{option: (type, default)}`` of ``factory``'s keyword parameters (``...`` for a
    required option); a hint that cannot be resolved reads as ``Any``."""
    hints = _hints(factory)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(factory).parameters.values():
        if parameter.name in CONTEXT_PARAMETERS or parameter.kind in (
            inspect.Parameter.VAR_KEYWORD,
            inspect.Parameter.VAR_POSITIONAL,
        ):
            continue
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (hints.get(parameter.name, Any), default)
    return fields


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(factory, include_extras=True)
    except (NameError, TypeError):  # a name only imported for type checkers: any value
        return {}


@functools.cache
def _options_model(factory: Callable[..., Any]) -> type[BaseModel]:
    name = getattr(factory, "__name__", "evaluator")
    return create_model(f"{name}_options", __config__=_FORBID, **option_fields(factory))


def check_options(factory: Callable[..., Any], options: dict[str, Any]) -> str | None:
    """What is wrong with the values of ``options`` for ``factory``: the first option whose
    value does not fit its parameter's type (``ignore_agents: expected list[str] | None, got
    5``), or None when they all fit."""
    try:
        _options_model(factory).model_validate(options)
    except ValidationError as exc:
        option = str(exc.errors(include_url=False)[0]["loc"][0])
        expected = inspect.signature(factory).parameters[option].annotation
        if not isinstance(expected, str):
            expected = getattr(expected, "__name__", None) or str(expected)
        return f"{option}: expected {expected}, got {describe(options[option])}"
    return None
