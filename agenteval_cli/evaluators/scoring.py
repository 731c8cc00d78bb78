"""Scoring one result: every evaluator of the experiment, failures kept as null scores.

An evaluator limited to a sample (``sample: 0.25``) runs only on its chosen examples (see
:func:`choose_sample`) and adds no score elsewhere, so its mean is over the examples it saw.
What judges spend while scoring a result is added as ``judge_*`` scores, apart from the
target's own ``token_cost``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval_cli.evaluators.invoke import arguments_for, normalize
from agenteval_cli.evaluators.judge_model import collect_judge_usage, usage_scores
from agenteval_cli.records import Example, Score, Trace

JUDGE_KEYS = ("judge_input_tokens", "judge_output_tokens", "judge_cost_usd")


@dataclass
class BoundEvaluator:
    """An evaluator built from the spec, with the keys to report if it fails."""

    name: str
    fn: Callable[..., Any]
    keys: tuple[str, ...] = ()
    sample: float | None = None  # share of examples to score, None for all
    seed: int = 0
    example_ids: frozenset[str] | None = None  # the chosen sample; None scores every example
    summary: bool = False  # dataset-level: run once per target, not per result

    def applies_to(self, example: Example) -> bool:
        return not self.summary and (self.example_ids is None or example.id in self.example_ids)


def choose_sample(ids: Sequence[str], share: float, *, seed: int, name: str) -> frozenset[str]:
    """``round(share * n)`` example ids (at least one), the same for every target and
    repetition: ids ranked by a seeded hash, so the choice is reproducible and stable when
    examples are added."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return frozenset()
    count = max(1, round(share * len(unique)))

    def rank(example_id: str) -> str:
        return hashlib.sha256(f"{seed}:{name}:{example_id}".encode()).hexdigest()

    return frozenset(sorted(unique, key=rank)[:count])


def apply_sampling(evaluators: Sequence[BoundEvaluator], examples: Sequence[Example]) -> None:
    """Fix each sampled evaluator's examples; call once the examples are known."""
    ids = [e.id for e in examples]
    for evaluator in evaluators:
        if evaluator.sample is not None and evaluator.sample < 1:
            evaluator.example_ids = choose_sample(
                ids, evaluator.sample, seed=evaluator.seed, name=evaluator.name
            )


async def call_evaluator(evaluator: BoundEvaluator, available: dict[str, Any]) -> list[Score]:
    """One evaluator on one result; raising or returning garbage becomes null scores."""
    try:
        raw = evaluator.fn(**arguments_for(evaluator.fn, available))
        if inspect.isawaitable(raw):
            raw = await raw
        return normalize(raw, evaluator.name)
    except Exception as exc:
        reason = f"evaluator {evaluator.name!r} failed: {type(exc).__name__}: {exc}"
        return [Score(key, None, reason) for key in evaluator.keys or (evaluator.name,)]


async def score(
    evaluators: list[BoundEvaluator], example: Example, outputs: dict[str, Any], trace: Trace
) -> list[Score]:
    """Run every evaluator that applies to ``example``; one that fails yields null scores
    with the reason as their comment, and the others still run."""
    from types import SimpleNamespace

    run = SimpleNamespace(
        inputs=example.inputs, outputs=outputs, trace=trace, error=trace.error, id=example.id
    )
    available = {
        "inputs": example.inputs,
        "outputs": outputs,
        "reference_outputs": example.outputs,
        "trace": trace,
        "example": example,
        "run": run,
    }
    scores: list[Score] = []
    with collect_judge_usage() as spent:
        for evaluator in evaluators:
            if evaluator.applies_to(example):
                scores.extend(await call_evaluator(evaluator, available))
    return scores + usage_scores(spent)
