"""Evaluator registry: one small factory per evaluator, looked up by the name used in YAML.

A factory takes keyword options (from the spec's ``{name: ..., option: value}`` form, plus
experiment-wide context such as ``pricing`` or ``base_dir`` when it declares that parameter)
and returns an evaluator callable ``(inputs, outputs, reference_outputs, trace) -> result``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.errors import UserError, did_you_mean

Evaluator = Callable[..., Any]
Factory = Callable[..., Evaluator]

# Filled in from the experiment, never written in YAML; `evaluators show` hides them.
CONTEXT_PARAMETERS = ("pricing", "name", "base_dir", "spec_file", "spec_line")


@dataclass(frozen=True)
class EvaluatorInfo:
    """What ``agenteval evaluators list/show`` print, and how to build the evaluator."""

    name: str
    family: str
    reads: str
    description: str
    factory: Factory
    keys: tuple[str, ...]  # the score keys the evaluator emits
    example: str = ""  # a YAML list item using the evaluator
    summary: bool = False  # dataset-level: called once with every row of a target

    def options(self) -> list[tuple[str, Any]]:
        """``(option, default)`` pairs a spec may set; ``inspect.Parameter.empty`` if required."""
        params = inspect.signature(self.factory).parameters.values()
        return [(p.name, p.default) for p in params if p.name not in CONTEXT_PARAMETERS]


REGISTRY: dict[str, EvaluatorInfo] = {}


def register(
    name: str,
    *,
    family: str,
    reads: str,
    description: str,
    keys: tuple[str, ...] = (),
    example: str = "",
    summary: bool = False,
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
            example=example or f"- {name}",
            summary=summary,
        )
        return factory

    return decorate


def lookup(name: str, *, file: str | None = None, line: int | None = None) -> EvaluatorInfo:
    """The registry entry for ``name``; an unknown name is a UserError with a suggestion."""
    info = REGISTRY.get(name)
    if info is None:
        hint = did_you_mean(name, REGISTRY) or f"known evaluators: {', '.join(sorted(REGISTRY))}"
        raise UserError(f"unknown evaluator {name!r}", file=file, line=line, hint=hint)
    return info


def build_evaluator(
    name: str,
    options: dict[str, Any] | None = None,
    *,
    context: dict[str, Any] | None = None,
    file: str | None = None,
    line: int | None = None,
) -> Evaluator:
    """Build the evaluator called ``name``; unknown names and options are UserErrors."""
    info = lookup(name, file=file, line=line)
    params = inspect.signature(info.factory).parameters
    options = dict(options or {})
    for key in options:
        if key not in params or key in CONTEXT_PARAMETERS:
            allowed = [p for p in params if p not in CONTEXT_PARAMETERS]
            hint = did_you_mean(key, allowed) or _options_hint(allowed)
            raise UserError(
                f"evaluator {name!r} has no option {key!r}", file=file, line=line, hint=hint
            )
    missing = [
        p.name
        for p in params.values()
        if p.default is inspect.Parameter.empty
        and p.name not in options
        and p.name not in CONTEXT_PARAMETERS
        and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    if missing:
        raise UserError(
            f"evaluator {name!r} needs the option(s) {', '.join(missing)}",
            file=file,
            line=line,
            hint=f"see 'agenteval evaluators show {name}'",
        )
    for key, value in (context or {}).items():
        if key in params and key not in options:
            options[key] = value
    try:
        return info.factory(**options)
    except UserError:
        raise
    except (TypeError, ValueError) as exc:
        raise UserError(f"evaluator {name!r}: {exc}", file=file, line=line) from None


def _options_hint(allowed: list[str]) -> str:
    return f"options: {', '.join(allowed)}" if allowed else "it takes no options"
