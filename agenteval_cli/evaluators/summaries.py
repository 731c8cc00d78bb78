"""Dataset-level ("summary") evaluators: called once with every result of a target.

They run after a target's results are stored, over what the store holds (so a resumed run is
summarised whole), and their scores are kept in the ``summary_scores`` table of the same
SQLite file, one row per experiment and key (read and written by
:mod:`agenteval_cli.store.summaries`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agenteval_cli.core.records import OK, Example, Run, Score, Trace
from agenteval_cli.evaluators.invoke import arguments_for, normalize, wants
from agenteval_cli.evaluators.registry import register
from agenteval_cli.evaluators.routing import agent_names, confusion_matrix, routing_rows
from agenteval_cli.evaluators.scoring import (
    BoundEvaluator,
    EvaluatorPool,
    bounded_call,
    evaluators_own,
    failure_text,
    is_own,
)
from agenteval_cli.metrics.registry import metric
from agenteval_cli.store.summaries import save_summary_scores

# How the comment of a dataset-level evaluator's failed score begins (see run_summaries).
SUMMARY_FAILED = "summary evaluator "


def summary_arguments(stored: Sequence[Any], *, every: bool = False) -> dict[str, Any]:
    """Lists over a target's answered results (``StoredResult`` rows), LangSmith-style;
    with ``every``, over all of them, those that errored or stopped at an interrupt too."""
    ok = [s for s in stored if every or s.result.status == OK]
    examples = [
        Example(id=s.result.example_id, inputs=s.inputs, outputs=s.reference_outputs) for s in ok
    ]
    runs = [Run.from_result(s.result, s.inputs, s.reference_outputs, keep_trace=True) for s in ok]
    for run in runs:
        run.outputs = run.outputs or {}
    return {
        "inputs": [s.inputs for s in ok],
        "outputs": [s.result.outputs or {} for s in ok],
        "reference_outputs": [s.reference_outputs for s in ok],
        "traces": [s.result.trace for s in ok],
        "runs": runs,
        "examples": examples,
    }


async def run_summaries(
    evaluators: Sequence[BoundEvaluator],
    stored: Sequence[Any],
    pool: EvaluatorPool | None = None,
    fault_free: Sequence[Any] | None = None,
) -> list[Score]:
    """Every summary evaluator once, under ``pool``'s time limit and threads (see
    :func:`~agenteval_cli.evaluators.scoring.bounded_call`); a failure is a null score with
    the reason. One whose keys are all read from the trace (``needs_answer`` false) sees
    every result, the others the answered ones (status ``ok``). ``fault_free``: the stored
    results of the target's fault-free twin in the same run, given (as runs) to an
    evaluator that names a ``fault_free`` parameter."""
    answered = summary_arguments(stored)
    every = summary_arguments(stored, every=True)
    twin = None if fault_free is None else summary_arguments(fault_free, every=True)["runs"]
    scores: list[Score] = []
    for evaluator in evaluators:
        if not evaluator.summary:
            continue
        keys = evaluator.keys or (evaluator.name,)
        available = answered if any(evaluator.needs_answer(k) for k in keys) else every
        try:
            arguments = arguments_for(evaluator.fn, available)
            if wants(evaluator.fn, "fault_free"):
                arguments["fault_free"] = twin
            raw = await bounded_call(evaluator.fn, arguments, pool, is_own(evaluator.fn))
            scores.extend(normalize(raw, evaluator.name))
        except BaseException as exc:
            if not evaluators_own(exc, pool):
                raise
            reason = f"{SUMMARY_FAILED}{evaluator.name!r} failed: {failure_text(exc)}"
            scores.extend(Score(k, None, reason) for k in evaluator.keys or (evaluator.name,))
    return scores


def score_experiment_summaries(
    evaluators: Sequence[BoundEvaluator],
    store: Any,
    experiment_ids: Sequence[str],
    pool: EvaluatorPool | None = None,
    twins: Mapping[str, str] | None = None,
) -> None:
    """Run the summary evaluators over each experiment's stored results and save them;
    ``twins`` maps an experiment to its fault-free twin's in the same run."""
    import asyncio

    if any(e.summary for e in evaluators):
        asyncio.run(
            score_experiment_summaries_async(evaluators, store, experiment_ids, pool, twins)
        )


async def score_experiment_summaries_async(
    evaluators: Sequence[BoundEvaluator],
    store: Any,
    experiment_ids: Sequence[str],
    pool: EvaluatorPool | None = None,
    twins: Mapping[str, str] | None = None,
) -> None:
    """:func:`score_experiment_summaries` in the running event loop."""
    if not any(e.summary for e in evaluators):
        return
    for experiment_id in experiment_ids:
        stored = list(store.results(experiment_id))
        twin = (twins or {}).get(experiment_id)
        fault_free = None if twin is None else list(store.results(twin))
        scores = await run_summaries(evaluators, stored, pool, fault_free)
        save_summary_scores(store, experiment_id, scores)


def _no_matrix(rows: list[tuple[dict[str, Any], Trace]]) -> str:
    """Why there is no matrix: no row expects agents, or no result whose row does has
    agents that can be told (untraced, or switched unseen), whose reason is given."""
    unknown = [
        trace.agents_unknown
        for reference, trace in rows
        if (reference or {}).get("expected_agents") and trace.agents_unknown is not None
    ]
    if not unknown:
        return "no expected_agents"
    return f"agents unknown on every result whose row expects agents ({unknown[0]})"


@register(
    "routing_confusion",
    family="routing",
    reads="outputs.expected_agents; trace agents (all results of a target)",
    references=("expected_agents",),
    description="dataset-level: expected x invoked agent matrix; score = share of expected hit",
    summary=True,
    metrics=[metric("routing_confusion", "routing confusion", fmt="percent")],
    example="- routing_confusion",
    needs_answer=False,
)
def routing_confusion(*, ignore_agents: list[str] | None = None) -> Any:
    """Micro recall over every (example, expected agent) pair, and the worst confusions."""

    def evaluate(runs: list[Run]) -> dict:
        rows = [row for run in runs for row in routing_rows(run.reference, run.trace, run.turns)]
        reference_outputs = [reference for reference, _ in rows]
        matrix = confusion_matrix(rows, ignore_agents=ignore_agents)
        if matrix is None:
            return {"key": "routing_confusion", "score": None, "comment": _no_matrix(rows)}
        labels, counts = matrix["invoked"], matrix["counts"]
        hits = total = 0
        off: list[tuple[int, str]] = []
        for expected, row in zip(matrix["expected"], counts, strict=True):
            if expected == "(none)":
                continue
            total += _expected_count(expected, reference_outputs)
            for invoked, n in zip(labels, row, strict=True):
                if invoked == expected:
                    hits += n
                elif n:
                    off.append((n, f"{expected}→{invoked} ×{n}"))
        worst = ", ".join(text for _, text in sorted(off, key=lambda x: (-x[0], x[1]))[:3])
        score = hits / total if total else None
        return {"key": "routing_confusion", "score": score, "comment": worst or "no confusion"}

    return evaluate


def _expected_count(agent: str, references: list[dict]) -> int:

    return sum(1 for r in references if agent in agent_names((r or {}).get("expected_agents")))
