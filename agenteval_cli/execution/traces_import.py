"""Recorded OpenTelemetry traces scored as a run's results, no target called.

Each trace in the files is one request of the spec's target (``--target``, or its only one;
when the files name their requests' targets, as ``agenteval run --otel`` does, its own);
it is read back into an agenteval trace (:mod:`agenteval_cli.otel.ingest`), matched to its dataset
row (:mod:`agenteval_cli.otel.ingest.matching`), and scored by the spec's evaluators with its
pricing, then stored as a finished experiment like a run's. A row no trace answers is an
errored result saying so; a trace no row claims is a note; traces with model calls under
no agent span are refused when their rows expect agents (:mod:`.traces_attribution`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.records import Example, Result, Trace
from agenteval_cli.metrics.prices import price_calls, result_calls
from agenteval_cli.spec.model import Spec, TargetSpec
from agenteval_cli.store.db import ExperimentRecord, Store

if TYPE_CHECKING:
    from agenteval_cli.otel.ingest.requests import RecordedRequest

__all__ = ["import_traces"]

Note = Callable[[str], None]
NO_TRACE = "no recorded trace answers this row (none carries its agenteval.example_id or input)"
CONVERSATION = "a conversation row: traces are imported for single-turn rows only"


def import_traces(
    spec: Spec,
    store: Store,
    files: Sequence[str | Path],
    *,
    target: str | None = None,
    note: Note = lambda _: None,
) -> ExperimentRecord:
    """One finished experiment of ``target`` from the traces in ``files``."""
    from agenteval_cli.data.examples import dataset_hash, open_examples
    from agenteval_cli.evaluators.loading import catalog_of
    from agenteval_cli.execution.experiment import (
        git_commit,
        run_settings,
        score_stored_summaries,
    )
    from agenteval_cli.execution.loading import load_evaluators
    from agenteval_cli.execution.rescore import score_into
    from agenteval_cli.execution.traces_attribution import check_attributed
    from agenteval_cli.otel.ingest.matching import match
    from agenteval_cli.otel.ingest.otlp import read_spans
    from agenteval_cli.otel.ingest.requests import requests_of

    chosen = _target(spec, target)
    if spec.dataset.path is None:
        raise UserError(
            "importing traces needs a dataset file",
            file=spec.source,
            line=spec.line_of("dataset"),
            hint="give dataset: path: (pull a LangSmith dataset with 'agenteval dataset pull')",
        )
    if not files:
        raise UserError("no trace files given", hint="name OTLP JSON files with --otlp PATH")
    spans = [span for path in files for span in read_spans(Path(path))]
    if not spans:
        shown = ", ".join(str(p) for p in files)
        raise UserError(f"{shown}: no spans in the file(s)", hint="give OTLP JSON trace exports")
    examples = list(open_examples(spec.dataset.path))
    coordinators, declared = _declared(spec, chosen, note)
    requests = _of_target(requests_of(spans, coordinators, **declared), chosen.name, note)
    for request in requests:
        for said in request.notes:
            note(said)
    matched = match(requests, examples, chosen.input_key)
    for request, why in matched.unclaimed:
        note(f"{request.origin}: trace {request.trace_id} answers no row: {why}")
    check_attributed(examples, matched.by_row)
    evaluators = load_evaluators(spec, examples, warn=note)
    repetitions = max(matched.repetitions, 1)
    record = store.create_experiment(
        prefix=spec.experiment_prefix,
        target=chosen.name,
        target_path="otlp:" + ",".join(str(p) for p in files),
        spec=spec.raw,
        spec_path=str(spec.source),
        spec_hash=spec.content_hash,
        dataset_path=str(spec.dataset.path),
        dataset_name=spec.dataset.name,
        dataset_hash=dataset_hash(spec.dataset.path),
        git_commit=git_commit(spec.base_dir),
        repetitions=repetitions,
        example_count=len(examples),
        catalog=catalog_of(evaluators),
    )
    pairs = [(e, r) for e in examples for r in _results(e, matched.by_row.get(e.id, []))]
    missing = [e.id for e in examples if not matched.by_row.get(e.id)]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        note(f"{len(missing)} row(s) have no recorded trace, stored as errors: {shown}")
    status = "interrupted"
    try:
        settings = run_settings(spec)
        for _, result in pairs:  # each call priced as a run's is, and keeps its price
            price_calls(result_calls(result), spec.pricing)
        asyncio.run(score_into(store, record, pairs, evaluators, settings, spec.pricing or {}))
        earlier = _twin_imported(spec, store, chosen.name)
        score_stored_summaries(spec, evaluators, store, [record], earlier)
        status = "finished"
    finally:
        store.finish_experiment(record.id, status)
    return store.experiment(record.id)


def _twin_imported(spec: Spec, store: Store, name: str) -> list[ExperimentRecord]:
    """The latest finished experiment of ``name``'s fault-free twin this spec stored (its
    traces imported, or run, before), for fault_cost to pair with; none without one."""
    from agenteval_cli.execution.twins import fault_free_twin

    twin = fault_free_twin(spec, name)
    if twin is None:
        return []
    for record in store.experiments(target=twin):  # newest first
        if record.spec_hash == spec.content_hash and record.status == "finished":
            return [record]
    return []


def _of_target(requests: list[RecordedRequest], target: str, note: Note) -> list[RecordedRequest]:
    """The requests of ``target`` when the files hold several workflows' (an export of a
    run of several targets names each request's root after its target); all of them when
    none is named after it."""
    if not any(r.workflow == target for r in requests):
        return requests
    others = Counter(r.workflow for r in requests if r.workflow != target)
    if others:
        shown = ", ".join(f"{count} of {name or 'no workflow'}" for name, count in others.items())
        note(f"traces of other workflows than {target!r} left out: {shown}")
    return [r for r in requests if r.workflow == target]


def _target(spec: Spec, name: str | None) -> TargetSpec:
    names = [t.name for t in spec.targets]
    if name is None:
        if len(spec.targets) == 1:
            return spec.targets[0]
        raise UserError(
            "which target recorded these traces?",
            file=spec.source,
            line=spec.line_of("targets"),
            hint=f"name one with --target ({', '.join(names)})",
        )
    for target in spec.targets:
        if target.name == name:
            return target
    raise UserError(
        f"--target {name!r} is not a target of this spec",
        file=spec.source,
        line=spec.line_of("targets"),
        hint=did_you_mean(name, names) or f"targets: {', '.join(names)}",
    )


def _declared(spec: Spec, target: TargetSpec, note: Note) -> tuple[tuple[str, ...], dict[str, Any]]:
    """What the target declares to its recorder, as a run of it would: loaded when its
    import path loads (coordinators found in its graph too), else from the spec alone."""
    from agenteval_cli.execution.loading import load_targets
    from agenteval_cli.trace.declarations import ActiveAgent

    try:
        loaded = load_targets(spec, [target.name])[0]
    except UserError as exc:
        note(
            f"target {target.name!r} does not load ({exc}): its traces are read with what the "
            "spec declares for it (coordinators, active_agent, skill_tools) only"
        )
        active = target.active_agent
        return tuple(target.coordinators), {
            "own_agent": target.name,
            "active_agent": None if active is None else ActiveAgent(active.key, active.default),
            "skill_tools": dict(target.skill_tools) or None,
        }
    return tuple(loaded.coordinators), {
        "own_agent": loaded.name,
        "active_agent": loaded.active_agent,
        "skill_tools": loaded.skill_tools or None,
    }


def _results(example: Example, requests: Sequence[Any]) -> list[Result]:
    """The row's results, one per request (its repetitions); an errored one when it has none."""
    if not requests or "turns" in example.inputs:
        reason = CONVERSATION if "turns" in example.inputs else NO_TRACE
        return [Result(example.id, 0, None, Trace(untraced=reason, error=reason), error=reason)]
    return [
        Result(
            example_id=example.id,
            repetition=number,
            outputs=request.outputs,
            trace=request.trace,
            error=request.error,
            latency_s=request.latency_s,
            interrupt=request.interrupt,
        )
        for number, request in enumerate(requests)
    ]
