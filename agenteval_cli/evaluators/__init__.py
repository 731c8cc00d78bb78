"""Evaluators, one module per family; importing this package registers them all."""

from agenteval_cli.evaluators import (  # noqa: F401 (register)
    cost,
    coverage,
    custom,
    handoffs,
    judge,
    retrieval,
    routing,
    soundness,
    summaries,
    trajectory,
)
from agenteval_cli.evaluators.invoke import arguments_for, evaluator_name, normalize
from agenteval_cli.evaluators.registry import REGISTRY, EvaluatorInfo, build_evaluator, register

__all__ = [
    "REGISTRY",
    "EvaluatorInfo",
    "arguments_for",
    "build_evaluator",
    "evaluator_name",
    "normalize",
    "register",
]
