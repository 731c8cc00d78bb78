"""An evaluator item's options as pydantic models, read from where they are declared: a
built-in's own options are its factory's keyword parameters
(:mod:`agenteval_cli.evaluators.factory_options`), the options every item may have are
:class:`registry.ItemOptions`.

:func:`item_models` gives the spec's JSON Schema (``agenteval schema``) one model per way
to write an item: ``{name: trajectory_match, mode: superset}`` (the entry under its name)
and ``{name: my_key, type: trajectory_match, ...}`` (a name of its own).
"""

from __future__ import annotations

from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from agenteval_cli.evaluators.factory_options import option_fields
from agenteval_cli.evaluators.registry import REGISTRY, ItemOptions
from agenteval_cli.spec.fields import NonEmptyStr

__all__ = ["item_models"]


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
        own = option_fields(info.factory)
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
