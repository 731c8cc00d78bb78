"""Evaluators, one module per family; importing this package registers them all.

Their metrics are declared in import order, the order the reports fall back on for keys an
experiment does not list: the routing demo's first.
"""

# isort: off
from agenteval_cli.evaluators import routing, coverage, handoffs, cost  # noqa: F401
from agenteval_cli.evaluators import (  # noqa: F401 (register)
    conversation_metrics,
    custom,
    handoff_judge,
    judge,
    recovery,
    retrieval,
    skills,
    soundness,
    summaries,
    trajectory,
    user_spend,
)

# isort: on
from agenteval_cli.evaluators.invoke import arguments_for, evaluator_name, normalize
from agenteval_cli.evaluators.registry import (
    REGISTRY,
    EvaluatorInfo,
    build_evaluator,
    declares,
    reads_references,
    register,
)
from agenteval_cli.metrics.registry import MetricInfo, metric

__all__ = [
    "REGISTRY",
    "EvaluatorInfo",
    "MetricInfo",
    "arguments_for",
    "build_evaluator",
    "declares",
    "evaluator_name",
    "metric",
    "normalize",
    "reads_references",
    "register",
]
