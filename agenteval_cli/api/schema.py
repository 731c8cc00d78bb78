"""The spec's JSON Schema (``agenteval schema``), every built-in evaluator's options in it."""

from __future__ import annotations

from typing import Any

__all__ = ["spec_schema"]


def spec_schema() -> dict[str, Any]:
    """The JSON Schema a spec file is checked against in an editor: the spec's models and
    each built-in evaluator's options, as the loader validates them."""
    from agenteval_cli.evaluators import REGISTRY
    from agenteval_cli.evaluators.options import item_models
    from agenteval_cli.spec.schema import spec_json_schema

    return spec_json_schema(list(REGISTRY), item_models())
