"""Scoring one result: every evaluator of the experiment, failures kept as null scores."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agenteval_cli.evaluators.invoke import arguments_for, normalize
from agenteval_cli.records import Example, Score, Trace


@dataclass
class BoundEvaluator:
    """An evaluator built from the spec, with the keys to report if it fails."""

    name: str
    fn: Callable[..., Any]
    keys: tuple[str, ...] = ()


async def score(
    evaluators: list[BoundEvaluator], example: Example, outputs: dict[str, Any], trace: Trace
) -> list[Score]:
    """Run every evaluator; one that raises or returns garbage yields a null score with
    the reason as its comment, and the others still run."""
    available = {
        "inputs": example.inputs,
        "outputs": outputs,
        "reference_outputs": example.outputs,
        "trace": trace,
        "example": example,
    }
    scores: list[Score] = []
    for evaluator in evaluators:
        try:
            raw = evaluator.fn(**arguments_for(evaluator.fn, available))
            if inspect.isawaitable(raw):
                raw = await raw
            scores.extend(normalize(raw, evaluator.name))
        except Exception as exc:
            reason = f"evaluator {evaluator.name!r} failed: {type(exc).__name__}: {exc}"
            scores.extend(Score(key, None, reason) for key in evaluator.keys or (evaluator.name,))
    return scores
