"""Evaluators, one module per family; importing this package registers them all."""

from agenteval_cli.evaluators import cost, coverage, handoffs, routing  # noqa: F401 (register)
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
