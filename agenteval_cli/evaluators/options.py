"""An evaluator item's options as pydantic models, read from where they are declared: a
built-in's own options are its factory's keyword parameters (their type hints and
defaults), the options every item may have are :class:`registry.ItemOptions`.

:func:`check_options` validates a spec's options with them when an evaluator is built, and
:func:`item_models` gives the spec's JSON Schema (``agenteval schema``) one model per way
to write an item: ``{name: trajectory_match, mode: superset}`` (the entry under its name)
and ``{name: my_key, type: trajectory_match, ...}`` (a name of its own).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agenteval_cli.core.yamlsource import describe
from agenteval_cli.evaluators.registry import CONTEXT_PARAMETERS, REGISTRY, ItemOptions
from agenteval_cli.spec.fields import NonEmptyStr

__all__ = ["check_options", "item_models", "option_fields"]

_FORBID = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def option_fields(name: str) -> dict[str, Any]:
    """``{option: (type, default)}`` of the built-in ``name``, from its factory's signature
    (``...`` for a required option); a hint that cannot be resolved reads as ``Any``."""
    factory = REGISTRY[name].factory
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


def _hints(factory: Any) -> dict[str, Any]:
    try:
        return get_type_hints(factory, include_extras=True)
    except (NameError, TypeError):  # a name only imported for type checkers: any value
        return {}


@functools.cache
def _options_model(name: str) -> type[BaseModel]:
    return create_model(f"{name}_options", __config__=_FORBID, **option_fields(name))


def check_options(name: str, options: dict[str, Any]) -> str | None:
    """What is wrong with the values of ``options`` for the built-in ``name``, the first
    option whose value does not fit its parameter's type (``ignore_agents: expected
    list[str] | None, got 5``), or None when they all fit."""
    try:
        _options_model(name).model_validate(options)
    except ValidationError as exc:
        option = str(exc.errors(include_url=False)[0]["loc"][0])
        parameter = inspect.signature(REGISTRY[name].factory).parameters[option]
        expected = parameter.annotation
        if not isinstance(expected, str):
            expected = getattr(expected, "__name__", None) or str(expected)
        return f"{option}: expected {expected}, got {describe(options[option])}"
    return None


def _common_fields() -> dict[str, Any]:
    """The options every item may have, none required (``type`` is the item's form's own);
    left out, each is the loader's default, not null."""
    hints = get_type_hints(ItemOptions, include_extras=True)
    unset = Field(default=None, json_schema_extra=_without_default)
    return {key: (hint, unset) for key, hint in hints.items() if key != "type"}


def _without_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def item_models() -> list[type[BaseModel]]:
    """One model per way to write an item of each built-in, in registry order: under the
    entry's name, and under a name of its own with ``type``."""
    models: list[type[BaseModel]] = []
    common = _common_fields()
    for name, info in REGISTRY.items():
        entry = Literal[name]  # type: ignore[valid-type]
        own = option_fields(name)
        description = info.description
        models.append(
            create_model(
                name,
                __config__=ConfigDict(extra="forbid", title=name, json_schema_extra=None),
                __doc__=description,
                name=(entry, ...),
                type=(entry | None, None),
                **common,
                **own,
            )
        )
        models.append(
            create_model(
                f"{name}_named",
                __config__=ConfigDict(extra="forbid", title=f"{name} (a name of its own)"),
                __doc__=f"{description} Its score is written under the item's name.",
                name=(NonEmptyStr, ...),
                type=(entry, ...),
                **common,
                **own,
            )
        )
    return models
