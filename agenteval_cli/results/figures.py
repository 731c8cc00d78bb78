"""An experiment's figures, computed once: the read model every view renders.

The run table, ``--json``, the API's ``RunReport``, compare, the HTML, Markdown and JUnit
reports, the gate and ``dataset add-failures`` all read an experiment's figures from one
:class:`~agenteval_cli.metrics.summary.Summary`, built here from whatever holds the
experiment: the store's rows (streamed, no result built), a run's results, or the runs of a
``--json`` export, a baseline file or LangSmith. None of them computes a figure itself.

One rule per kind of metric (docs/output.md), all in the Summary:

- a score: the mean over the examples of each example's mean over its repetitions that
  scored it; a null score (its evaluator failed) or one an unanswered result cannot have
  is left out; a conversation is one example, its request scores its turns' sum or mean;
- a total (``cost (total)``): the sum over every result, unknown when a part is;
- the error and interrupt rates: the shares of results with that status; the latency
  percentiles over the calls made (not served from the cache);
- pass^k, pass@k and the flaky examples of each pass/fail metric, per example;
- a baseline file's run figures: those it was written with (its per-example means cannot
  give them again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from agenteval_cli.evaluators.registry import spec_catalog
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.prices import call_gap, price_gap
from agenteval_cli.metrics.summary import Summary, reported_nothing

if TYPE_CHECKING:
    from agenteval_cli.core.records import Result, Run
    from agenteval_cli.store.db import ExperimentRecord, Store


def experiment_catalog(record: ExperimentRecord) -> Catalog:
    """How a stored experiment's metrics read: the catalog its run kept, else (an
    experiment stored before catalogs were kept) what its spec's evaluator items declare."""
    if record.catalog is not None:
        return record.catalog
    return spec_catalog((record.spec or {}).get("evaluators") or [])


def from_store(store: Store, record: ExperimentRecord) -> Summary:
    """A stored experiment's figures, streamed from the columns they read."""
    return stored(
        store, record.id, repetitions=record.repetitions, catalog=experiment_catalog(record)
    )


def stored(
    store: Store, experiment_id: str, *, repetitions: int = 1, catalog: Catalog = BUILT_IN
) -> Summary:
    """The figures of the stored experiment ``experiment_id`` read by ``catalog``; with
    one repetition nothing is kept per example."""
    summary = Summary(track_outcomes=repetitions > 1, catalog=catalog)
    add = summary.add_row
    for row in store.figure_rows(experiment_id):
        calls = row.model_calls
        add(
            row.example_id,
            row.repetition,
            row.error,
            row.latency_s,
            row.scores,
            [call["model"] for call in calls],
            cached=row.cached,
            interrupted=row.interrupted,
            price_gaps=[(call["model"], price_gap(call)) for call in calls],
            conversation=row.conversation,
            without_usage=[
                call.get("no_usage_reason") or ""
                for call in calls
                if reported_nothing(
                    call.get("input_tokens", 0),
                    call.get("output_tokens", 0),
                    bool(call.get("failed")),
                    bool(call.get("cut_off")),
                )
            ],
        )
    return summary


def from_results(
    results: Iterable[Result], *, repetitions: int | None = None, catalog: Catalog = BUILT_IN
) -> Summary:
    """The figures of ``results``; with ``repetitions=1`` nothing is kept per example
    (pass^k and the flaky examples need repeats), so memory does not grow with the
    experiment."""
    summary = Summary(track_outcomes=repetitions is None or repetitions > 1, catalog=catalog)
    for result in results:
        summary.add(result)
    return summary


def from_runs(
    runs: Iterable[Run],
    *,
    catalog: Catalog = BUILT_IN,
    has_latency: bool = True,
    kept: Mapping[str, float | None] | None = None,
) -> Summary:
    """The figures of an experiment read as runs (``results.sources.ExperimentData``: a
    file's, LangSmith's, or the store's for a comparison); each example's means kept (its
    runs are in memory already), which compare pairs. ``has_latency`` is False for runs
    read without their timing; ``kept``: the run figures a baseline file was written with."""
    summary = Summary(
        catalog=catalog, has_latency=has_latency, track_outcomes=True, kept=dict(kept or {})
    )
    add = summary.add_row
    for run in runs:
        add(
            run.example_id,
            run.repetition,
            run.error,
            run.latency_s,
            list(run.scores.items()),
            (call.model for call in run.model_calls),
            cached=run.cached,
            interrupted=run.interrupt is not None,
            price_gaps=[(call.model, call_gap(call)) for call in run.model_calls],
            conversation=run.turns is not None,
        )
    return summary
