"""An experiment whose traces show one agent while its dataset expects others: its routing
is not measured.

A single result answered by one agent is a routing figure like any other. When every result
of a target shows the one same agent and rows name others, the target's agents were never
told apart (agents nobody named, a state key nobody declared): after the run, those rows'
traces are marked unattributed with what to declare, their routing scores (the ``routing``
family's evaluators) null with that reason, and the run warns once for the target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agenteval_cli.core.records import Example, Score
from agenteval_cli.evaluators.blame import blame
from agenteval_cli.evaluators.registry import REGISTRY
from agenteval_cli.evaluators.routing import expects_others
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.untraced import unattributed_warning
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.results import StoredResult, encode

__all__ = ["mark_one_agent_experiments"]


def mark_one_agent_experiments(
    experiments: Sequence[ExperimentRecord],
    evaluators: Sequence[BoundEvaluator],
    store: Store,
    verdict: Callable[[ExperimentRecord], str | None],
) -> list[str]:
    """Mark the rows of each experiment whose routing is not measured (see the module), in
    one group of commits; the warnings, one per target marked. ``verdict(experiment)`` is
    :func:`~agenteval_cli.evaluators.routing.one_agent_only` over its rows (gathered as the
    run stored them); only the rows of an experiment to mark are read back."""
    from agenteval_cli.evaluators.loading import catalog_of

    keys = {key for e in evaluators if _routes(e) for key in (e.keys or (e.name,))}
    marks = catalog_of(evaluators).pass_marks()  # what a failed check is
    warnings = []
    writer = store.writer()
    for experiment in experiments:
        reason = verdict(experiment)
        if reason is None:
            continue
        marked = 0
        to_mark: list[StoredResult] = []
        for each in store.results(experiment.id):
            trace = each.result.trace
            if each.result.turns is not None:
                continue
            if trace.unattributed == reason:  # marked before this run was resumed
                marked += 1
            elif trace.agents_unknown is None and expects_others(each.reference_outputs, trace):
                to_mark.append(each)
        for each in to_mark:  # written once the rows were read: a row rewritten moves
            result = each.result
            result.trace.unattributed = reason
            why = result.trace.agents_unknown
            result.scores = [Score(s.key, None, why) if s.key in keys else s for s in result.scores]
            result.blame = blame(result, each.reference_outputs, pass_marks=marks)
            example = Example(result.example_id, each.inputs, each.reference_outputs)
            writer.add(encode(experiment.id, example, result, replace=True))
        writer.flush()
        marked += len(to_mark)
        if marked:  # else every row naming others was said unattributed already
            warnings.append(unattributed_warning(experiment.target, marked, reason))
    return warnings


def _routes(evaluator: BoundEvaluator) -> bool:
    """A per-result evaluator of the routing family: its scores read which agents ran."""
    info = REGISTRY.get(evaluator.name)
    return info is not None and info.family == "routing" and not evaluator.summary
