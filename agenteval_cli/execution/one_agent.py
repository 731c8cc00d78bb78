"""An experiment whose traces show one agent while its dataset expects others: its routing
is not measured.

A single result answered by one agent is a routing figure like any other. When every result
of a target shows the one same agent and rows name others, the target's agents were never
told apart (agents nobody named, a state key nobody declared): after the run, those rows'
traces are marked unattributed with what to declare, their routing scores (the ``routing``
family's evaluators) null with that reason, and the run warns once for the target.
"""

from __future__ import annotations

from collections.abc import Sequence

from agenteval_cli.core.records import Example, Score
from agenteval_cli.evaluators.registry import REGISTRY
from agenteval_cli.evaluators.routing import expects_others, one_agent_only
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.untraced import unattributed_warning
from agenteval_cli.store.db import ExperimentRecord, Store

__all__ = ["mark_one_agent_experiments"]


def mark_one_agent_experiments(
    experiments: Sequence[ExperimentRecord], evaluators: Sequence[BoundEvaluator], store: Store
) -> list[str]:
    """Mark the rows of each experiment whose routing is not measured (see the module);
    the warnings, one per target marked."""
    keys = {key for e in evaluators if _routes(e) for key in (e.keys or (e.name,))}
    warnings = []
    for experiment in experiments:
        stored = [s for s in store.results(experiment.id) if s.result.turns is None]
        reason = one_agent_only((s.reference_outputs, s.result.trace) for s in stored)
        if reason is None:
            continue
        marked = 0
        for each in stored:
            result = each.result
            if result.trace.unattributed == reason:  # marked before this run was resumed
                marked += 1
                continue
            if result.trace.agents_unknown is not None:
                continue
            if not expects_others(each.reference_outputs, result.trace):
                continue
            result.trace.unattributed = reason
            why = result.trace.agents_unknown
            result.scores = [Score(s.key, None, why) if s.key in keys else s for s in result.scores]
            example = Example(result.example_id, each.inputs, each.reference_outputs)
            store.add_result(experiment.id, example, result, replace=True)
            marked += 1
        if marked:  # else every row naming others was said unattributed already
            warnings.append(unattributed_warning(experiment.target, marked, reason))
    return warnings


def _routes(evaluator: BoundEvaluator) -> bool:
    """A per-result evaluator of the routing family: its scores read which agents ran."""
    info = REGISTRY.get(evaluator.name)
    return info is not None and info.family == "routing" and not evaluator.summary
