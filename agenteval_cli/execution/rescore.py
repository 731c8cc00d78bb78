"""Re-scoring: the spec's evaluators over an experiment's stored outputs, no target called.

The result is a new experiment (same target, outputs, traces and errors; new scores), so the
original stays as it was and the two can be compared. Each model call keeps the price its
run gave it; only when asked (``reprice``) is every call priced again, and the new prices
are kept with the new experiment's calls. A call stored without a price (a store written
before prices were kept with each call) is priced here, with the spec's ``pricing:``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.records import CallPrice, Example, Result
from agenteval_cli.data.conversations import is_conversation
from agenteval_cli.evaluators.blame import blame
from agenteval_cli.evaluators.conversation import score_conversation
from agenteval_cli.evaluators.scoring import BoundEvaluator, EvaluatorPool, score
from agenteval_cli.execution.twins import fault_free_twin
from agenteval_cli.metrics.prices import price_calls, rates, result_calls, sources
from agenteval_cli.spec.model import Spec
from agenteval_cli.store.db import ExperimentRecord, Store

if TYPE_CHECKING:
    from agenteval_cli.execution.runner import RunSettings


def rescore(
    spec: Spec,
    store: Store,
    names: list[str],
    *,
    warn: Callable[[str], None] | None = None,
    reprice: Mapping[str, Any] | None = None,
) -> list[ExperimentRecord]:
    """One new, finished experiment per named experiment (or target: its latest); ``warn``
    gets what is skipped (a judge without credentials) and the calls priced here.
    ``reprice``: price every call again with these prices (model -> rates, USD per 1M
    tokens), else the price data in use; None keeps the prices stored with the calls."""
    from agenteval_cli.evaluators.loading import catalog_of
    from agenteval_cli.execution.experiment import git_commit, run_settings
    from agenteval_cli.execution.loading import load_evaluators
    from agenteval_cli.store.lookup import resolve_experiment

    sources = [resolve_experiment(store, name, option="rescore") for name in names]
    evaluators = load_evaluators(spec, warn=warn)
    settings = run_settings(spec)
    run_id = uuid.uuid4().hex
    created = []
    raw = spec.raw if reprice is None else {**spec.raw, "pricing": _pricing_json(reprice)}
    for source in sources:
        new = store.create_experiment(
            prefix=spec.experiment_prefix,
            target=source.target,
            target_path=source.target_path,
            spec=raw,
            spec_path=str(spec.source),
            spec_hash=spec.content_hash,
            dataset_path=source.dataset_path,
            dataset_name=source.dataset_name,
            dataset_hash=source.dataset_hash,
            git_commit=git_commit(spec.base_dir),
            repetitions=source.repetitions,
            example_count=source.example_count,
            run_id=run_id,
            catalog=catalog_of(evaluators),
        )
        status = "interrupted"
        try:
            judge = spec.simulated_user.stop.judge if spec.simulated_user else None
            pricing = spec.pricing if reprice is None else reprice
            priced = _Pricing(pricing, again=reprice is not None)
            asyncio.run(_rescore_into(store, source, new, evaluators, settings, priced, judge))
            if priced.unstored and warn is not None:
                warn(
                    f"{source.name}: {priced.unstored} model call(s) were stored without "
                    f"their price (before prices were kept with each call): priced now "
                    f"({priced.sources()}), and kept with {new.name}"
                )
            status = "finished"
        finally:
            store.finish_experiment(new.id, status)
        created.append(store.experiment(new.id))
    _score_summaries(spec, evaluators, store, created)
    return created


def _score_summaries(
    spec: Spec, evaluators: list[BoundEvaluator], store: Store, created: list[ExperimentRecord]
) -> None:
    """The dataset-level evaluators of the new experiments, as a run scores them: a faulted
    target's paired with its fault-free twin's new experiment when both were rescored, else
    with the twin's latest stored one."""
    from agenteval_cli.execution.experiment import score_stored_summaries

    twins = sorted({t for e in created if (t := fault_free_twin(spec, e.target)) is not None})
    stored = [s for s in map(store.latest_experiment, twins) if s is not None]
    score_stored_summaries(spec, evaluators, store, created, stored)


@dataclass
class _Pricing:
    """What a rescore prices: every call (``again``), else those stored without a price."""

    pricing: Mapping[str, Any]
    again: bool
    unstored: int = 0  # calls stored without a price, priced here
    given: list[CallPrice] = field(default_factory=list)

    def price(self, result: Result) -> None:
        calls = [c for c in result_calls(result) if self.again or c.price is None]
        self.unstored += sum(c.price is None for c in calls)
        price_calls(calls, self.pricing)
        self.given += [c.price for c in calls if c.price is not None]

    def sources(self) -> str:
        return sources(self.given)


def _pricing_json(pricing: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The prices a rescore priced with, as its experiment's spec keeps them."""
    return {model: rates(entry) for model, entry in pricing.items()}


async def _rescore_into(
    store: Store,
    source: ExperimentRecord,
    new: ExperimentRecord,
    evaluators: list[BoundEvaluator],
    settings: RunSettings,
    priced: _Pricing,
    judge: str | None = None,
) -> None:
    stored = list(store.results(source.id))  # read fully before writing to the same tables
    pairs = [
        (Example(item.result.example_id, item.inputs, item.reference_outputs), item.result)
        for item in stored
    ]
    for _, result in pairs:
        priced.price(result)
    await score_into(store, new, pairs, evaluators, settings, priced.pricing, judge)


async def score_into(
    store: Store,
    experiment: ExperimentRecord,
    pairs: Iterable[tuple[Example, Result]],
    evaluators: list[BoundEvaluator],
    settings: RunSettings,
    pricing: Mapping[str, Any],
    judge: str | None = None,
) -> None:
    """Score each result from nothing with ``evaluators`` and store it in ``experiment``,
    within the run's evaluator limits (each call within ``evaluator_timeout_s``, a sync one
    in a daemon thread); ``judge``: the simulated user's stop judge, whose word a simulated
    conversation's resolution is."""
    from agenteval_cli.execution.guards.daemon_pool import DaemonThreadPool

    threads = DaemonThreadPool("agenteval-evaluator", max_threads=settings.evaluator_cap())
    pool = settings.evaluator_pool(executor=threads)
    try:
        await _score_each(store, pairs, experiment, evaluators, pool, pricing, judge)
    finally:
        threads.shutdown(wait=False)


async def _score_each(
    store: Store,
    pairs: Iterable[tuple[Example, Result]],
    new: ExperimentRecord,
    evaluators: list[BoundEvaluator],
    pool: EvaluatorPool,
    pricing: Mapping[str, Any],
    judge: str | None,
) -> None:
    from agenteval_cli.evaluators.loading import catalog_of

    marks = catalog_of(evaluators).pass_marks()  # what a failed check is
    for example, result in pairs:
        if result.turns is not None:  # a conversation: each turn, then the whole
            for turn in result.turns:  # scored again from nothing, as the result is
                turn.scores = []
            simulated = not is_conversation(example)  # its turns were a simulated user's
            result.scores = await score_conversation(
                evaluators,
                example,
                result,
                pool,
                pricing=pricing,
                judge=judge if simulated else None,
            )
        else:  # an errored or interrupted result is scored too: its trace's keys (see score())
            result.scores = await score(
                evaluators,
                example,
                result.outputs or {},
                result.trace,
                pool,
                interrupt=result.interrupt,
            )
        result.blame = blame(result, example.outputs, pass_marks=marks)
        store.add_result(new.id, example, result)
