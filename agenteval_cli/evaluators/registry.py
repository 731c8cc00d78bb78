"""Evaluator registry: one small factory per evaluator, looked up by the name used in YAML.

A factory takes keyword options (from the spec's ``{name: ..., option: value}`` form, plus
experiment-wide context such as ``pricing`` when it declares that parameter) and returns an
evaluator callable ``(inputs, outputs, reference_outputs, trace) -> dict | list[dict]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agenteval_cli.errors import UserError, did_you_mean

Evaluator = Callable[..., Any]
Factory = Callable[..., Evaluator]


@dataclass(frozen=True)
class EvaluatorInfo:
    """What ``agenteval evaluators list`` shows, and how to build the evaluator."""

    name: str
    family: str
    reads: str
    description: str
    factory: Factory
    keys: tuple[str, ...]  # the score keys the evaluator emits


REGISTRY: dict[str, EvaluatorInfo] = {}


def register(
    name: str, *, family: str, reads: str, description: str, keys: tuple[str, ...] = ()
) -> Callable[[Factory], Factory]:
    """Register ``factory`` under ``name``; used as a decorator on the factory."""

    def decorate(factory: Factory) -> Factory:
        REGISTRY[name] = EvaluatorInfo(
            name=name,
            family=family,
            reads=reads,
            description=description,
            factory=factory,
            keys=keys or (name,),
        )
        return factory

    return decorate


def build_evaluator(
    name: str,
    options: dict[str, Any] | None = None,
    *,
    context: dict[str, Any] | None = None,
    file: str | None = None,
    line: int | None = None,
) -> Evaluator:
    """Build the evaluator called ``name``; unknown names and options are UserErrors."""
    info = REGISTRY.get(name)
    if info is None:
        hint = did_you_mean(name, REGISTRY) or f"known evaluators: {', '.join(sorted(REGISTRY))}"
        raise UserError(f"unknown evaluator {name!r}", file=file, line=line, hint=hint)
    params = inspect.signature(info.factory).parameters
    options = dict(options or {})
    for key in options:
        if key not in params:
            hint = did_you_mean(key, params) or _options_hint(params)
            raise UserError(
                f"evaluator {name!r} has no option {key!r}", file=file, line=line, hint=hint
            )
    for key, value in (context or {}).items():
        if key in params and key not in options:
            options[key] = value
    try:
        return info.factory(**options)
    except (TypeError, ValueError) as exc:
        raise UserError(f"evaluator {name!r}: {exc}", file=file, line=line) from None


def _options_hint(params: Any) -> str:
    names = [p for p in params if p not in ("pricing",)]
    return f"options: {', '.join(names)}" if names else "it takes no options"
