"""The JSON Schema of the spec, for editors: generated from the models that validate it.

The models describe the YAML as it is written (short forms included, each declared by the
validator that accepts it); the evaluator items are the registry's to describe, since each
evaluator has options of its own, so the caller gives their models
(:func:`agenteval_cli.evaluators.options.item_models`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from agenteval_cli.spec.fields import without_pydantic_plugins
from agenteval_cli.spec.model import EVALUATOR_ITEM, Spec

__all__ = ["DIALECT", "spec_json_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def spec_json_schema(
    evaluator_names: list[str], evaluator_models: list[type[BaseModel]]
) -> dict[str, Any]:
    """The spec's schema: an evaluator item is one of ``evaluator_names`` or a mapping one
    of ``evaluator_models`` accepts."""
    with without_pydantic_plugins():
        refs, definitions = models_json_schema(
            [(Spec, "validation"), *((model, "validation") for model in evaluator_models)],
            title="agenteval spec",
        )
    defs = definitions["$defs"]
    spec_ref = refs[(Spec, "validation")]["$ref"].rsplit("/", 1)[-1]
    schema = defs.pop(spec_ref)
    item = {
        "title": EVALUATOR_ITEM,
        "anyOf": [
            {"enum": list(evaluator_names), "description": "an evaluator by its name"},
            *(refs[(model, "validation")] for model in evaluator_models),
        ],
    }
    _replace_placeholder(schema, item)
    return {"$schema": DIALECT, **schema, "title": "agenteval spec", "$defs": defs}


def _replace_placeholder(node: Any, item: dict[str, Any]) -> None:
    """Put ``item`` where the spec's models left the evaluator item's stand-in."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict) and value.get("title") == EVALUATOR_ITEM:
                node[key] = item
            else:
                _replace_placeholder(value, item)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, dict) and value.get("title") == EVALUATOR_ITEM:
                node[index] = item
            else:
                _replace_placeholder(value, item)
