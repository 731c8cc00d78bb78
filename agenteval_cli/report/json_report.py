"""The ``--json`` export: a stable shape for users' scripts.

``{"experiments": [{"name", "target", "metrics": {<metric>: <mean>}, "agents": {<path>: {...}},
"results": [...]}]}``; ``agents`` is :mod:`agenteval_cli.report.agents` over every result
(those that errored or stopped at an interrupt too: every call made), keyed ``"team >
agent"``. :func:`write_json` writes it as the store's rows are read, one result at a time,
so its memory does not grow with the experiment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agenteval_cli.core.records import ModelCall, Run, Trace, Turn
from agenteval_cli.metrics.prices import stored_price
from agenteval_cli.metrics.summary import Summary
from agenteval_cli.report.agents import aggregate
from agenteval_cli.results.calibration import calibrated, row_has_labels
from agenteval_cli.results.figures import experiment_catalog, from_store
from agenteval_cli.store.db import Store
from agenteval_cli.store.results import StoredResult, strict_json
from agenteval_cli.store.summaries import summary_scores


def experiment_json(store: Store, experiment_id: str) -> dict[str, Any]:
    """One experiment of the export as a dict, all of its results in memory (for a small
    experiment; :func:`write_json` streams them)."""
    pricing = store.experiment(experiment_id).spec.get("pricing") or {}
    stored = list(store.results(experiment_id))
    data = {
        **experiment_header(store, experiment_id),
        "results": [result_json(s, pricing) for s in stored],
    }
    calibration = _calibration(store, experiment_id, [_labelled(s) for s in stored])
    if calibration is not None:
        data["calibration"] = calibration
    return data


def _labelled(stored: StoredResult) -> Run | None:
    """The result as a run, when its row carries people's labels (``outputs.human``)."""
    if not row_has_labels(stored.reference_outputs):
        return None
    return Run.from_result(stored.result, stored.inputs, stored.reference_outputs)


def _calibration(
    store: Store, experiment_id: str, labelled: Sequence[Run | None]
) -> list[dict[str, Any]] | None:
    """The experiment's judges against people's labels; None (no key) when no row has any."""
    runs = [run for run in labelled if run is not None]
    if not runs:
        return None
    record = store.experiment(experiment_id)
    found, error = calibrated(record.target, record.name, runs)
    if error is not None:  # a malformed label: said here, the export still written
        return [{"error": error}]
    return [c.to_json() for c in found]


def experiment_metrics(store: Store, experiment_id: str) -> dict[str, float | None]:
    """The ``metrics`` of an experiment's export: its figures (the run table's)."""
    return from_store(store, store.experiment(experiment_id)).metrics()


def experiment_header(store: Store, experiment_id: str) -> dict[str, Any]:
    """Everything of an experiment's export but its results, read in passes over its rows
    that keep no result: its figures (the run table's), per-agent usage, the routing
    confusion."""
    from agenteval_cli.evaluators.routing import confusion_ignore, confusion_matrix, routing_rows

    experiment = store.experiment(experiment_id)
    pricing = experiment.spec.get("pricing") or {}
    catalog = experiment_catalog(experiment)
    summary = from_store(store, experiment)
    usage = aggregate(  # every call made, failed requests too
        (stored.result.trace.model_calls for stored in store.results(experiment_id)), pricing
    )
    metrics = summary.metrics()
    # the conversation metrics every conversation row is scored on, whichever evaluators
    # the spec names: described in the export's catalog as its evaluators' keys are
    scored = [k for k in catalog.conversation_metrics() if metrics.get(k) is not None]
    routed = (  # a conversation's turns
        row
        for s in store.results(experiment_id)
        for row in routing_rows(s.reference_outputs, s.result.trace, s.result.turns)
    )
    return {
        "name": experiment.name,
        "target": experiment.target,
        "id": experiment.id,
        "status": experiment.status,
        "dataset_hash": experiment.dataset_hash,
        "git_commit": experiment.git_commit,
        "started_at": experiment.started_at,
        "ended_at": experiment.ended_at,
        "metrics": metrics,
        # results of each status: the trace figures are over all of them, the answer's
        # over the ``ok`` ones
        "statuses": {
            "ok": summary.count - summary.errors - summary.interrupts,
            "error": summary.errors,
            "interrupted": summary.interrupts,
        },
        "metric_counts": dict(summary.counts),  # results each metric was computed over
        "pass_k": pass_k_json(summary),
        # how each metric reads: label, direction, format
        "catalog": catalog.with_keys(scored).to_json(),
        "pricing": pricing,
        "agents": usage.to_json(),
        "dataset_results": {
            sc.key: {"score": sc.score, "comment": sc.comment}
            for sc in summary_scores(store, experiment_id)
        },
        "routing_confusion": confusion_matrix(
            routed,
            ignore_agents=confusion_ignore(experiment.spec.get("evaluators") or []),
        ),
    }


def pass_k_json(summary: Summary) -> dict[str, Any] | None:
    """pass@k and pass^k of each pass/fail key for every k, and the flaky examples (of any
    key, and of each); null when no example was repeated."""
    flaky = summary.flaky()
    if flaky is None:
        return None
    outcomes = {key: found.to_json() for key, found in summary.repeated().items()}
    return {"flaky": flaky.to_json(), "outcomes": outcomes}


def result_json(stored: StoredResult, pricing: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One result; each model call with the ``price`` its run kept with it (its rates and
    source), its ``cost_usd`` and ``price_source`` (``spec`` or the price database's
    version; null with ``price_note`` naming the model when neither priced it, or when the
    call was stored before prices were kept), and the result's ``price_source``. A
    conversation's ``turns`` are each turn's inputs, answer, scores, status and trace in
    the same shape (null for a single-turn result)."""
    r = stored.result
    calls = [_priced_call(m, pricing) for m in r.trace.model_calls]
    return {
        "example_id": r.example_id,
        "repetition": r.repetition,
        "inputs": stored.inputs,
        "outputs": r.outputs,
        "scores": r.score_map(),
        "comments": {sc.key: sc.comment for sc in r.scores if sc.comment},
        "trace": _trace_json(r.trace, calls),
        "latency_s": r.latency_s,
        "attempts": r.attempts,
        "cached": r.cached,
        "status": r.status,  # ok, error, or interrupted (stopped at interrupt())
        "error": r.error,
        "interrupt": r.interrupt,  # what an interrupted graph waits for
        "turns": None if r.turns is None else [_turn_json(t, pricing) for t in r.turns],
        "price_source": _price_source(calls),
        # where a request that failed a check went wrong ({agent, step, kind, why}; step
        # indexes trace.agent_path); null when it did not fail
        "blame": r.blame,
    }


def _turn_json(turn: Turn, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
    calls = [_priced_call(m, pricing) for m in turn.trace.model_calls]
    return {
        "inputs": turn.inputs,
        "outputs": turn.outputs,
        "scores": turn.score_map(),
        "comments": {sc.key: sc.comment for sc in turn.scores if sc.comment},
        "trace": _trace_json(turn.trace, calls),
        "latency_s": turn.latency_s,
        "status": turn.status,
        "error": turn.error,
        "interrupt": turn.interrupt,
        "price_source": _price_source(calls),
        # the simulated user's calls that wrote the turn, priced apart from the target's
        "user_calls": [_priced_call(m, pricing) for m in turn.user_calls],
        "sent": turn.sent,  # false: the turn never reached the target (it ended the conversation)
        "ended": turn.ended,  # on the last turn: why the conversation ended there
    }


def _trace_json(trace: Trace, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A result's or a turn's trace, its model calls priced (``calls``)."""
    return {
        "agent_path": trace.agent_path,
        "handoffs": [h.as_dict() for h in trace.handoffs],
        "tool_calls": [t.__dict__ for t in trace.tool_calls],
        "model_calls": calls,
        "coordinators": trace.coordinators,
        "tokens": trace.tokens,
        "untraced": trace.untraced,  # why nothing was recorded, if so
        "unattributed": trace.unattributed,  # what to declare so agents are told apart
        "skills": trace.skills,  # loaded by the target's skill_tools; None: none declared
        "started_at": trace.started_at,  # seconds since the epoch; None: not recorded
    }


def _price_source(calls: list[dict[str, Any]]) -> str | None:
    return " + ".join(dict.fromkeys(c["price_source"] for c in calls if c["price_source"])) or None


def _priced_call(call: ModelCall, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call at the price its run kept with it (``pricing``: the run's spec's)."""
    price = stored_price(call, pricing)
    return {
        **call.__dict__,
        "price": None if call.price is None else call.price.to_dict(),
        "cost_usd": None if price.usd is None else float(price.usd),
        "price_source": price.source,
        "price_note": price.reason or "; ".join(price.notes) or None,
    }


def _indented(text: str, depth: int) -> str:
    """``text`` (an ``indent=2`` dump) as nested ``depth`` levels deep in the document: a
    JSON string holds no raw newline, so every line break is the dump's own."""
    return text.replace("\n", "\n" + "  " * depth)


def json_chunks(
    store: Store,
    experiment_ids: Sequence[str],
    gate: dict[str, Any] | None = None,
    *,
    warnings: Sequence[str] = (),
) -> Iterator[str]:
    """The ``--json`` document in pieces, exactly ``strict_json({"experiments": [...],
    "gate": ..., "warnings": [...]}, indent=2)`` (``gate`` when the run was gated, a run's
    ``warnings`` when it has some): an experiment's header, then one result at a time as its
    row is read."""
    tail: dict[str, Any] = {}
    if gate is not None:
        tail["gate"] = gate
    if warnings:
        tail["warnings"] = list(warnings)
    if not experiment_ids:
        yield strict_json({"experiments": [], **tail}, indent=2)
        return
    yield '{\n  "experiments": ['
    for index, experiment_id in enumerate(experiment_ids):
        pricing = store.experiment(experiment_id).spec.get("pricing") or {}
        header = strict_json(experiment_header(store, experiment_id), indent=2)
        yield ("," if index else "") + "\n    " + _indented(header[: -len("\n}")], 2)
        yield ',\n      "results": ['
        empty = True
        labelled: list[Run | None] = []
        for stored in store.results(experiment_id):
            text = strict_json(result_json(stored, pricing), indent=2)
            yield ("\n" if empty else ",\n") + "        " + _indented(text, 4)
            empty = False
            labelled.append(_labelled(stored))
        yield "]" if empty else "\n      ]"
        calibration = _calibration(store, experiment_id, labelled)
        if calibration is not None:
            text = strict_json({"calibration": calibration}, indent=2)
            yield ",\n      " + _indented(text[len("{\n  ") : -len("\n}")], 2)
        yield "\n    }"
    yield "\n  ]"
    for key, value in tail.items():  # each at its own depth
        text = strict_json({key: value}, indent=2)
        yield ",\n  " + text[len("{\n  ") : -len("\n}")]
    yield "\n}"


def write_json(
    path: Path,
    store: Store,
    experiment_ids: Sequence[str],
    gate: dict[str, Any] | None = None,
    *,
    warnings: Sequence[str] = (),
) -> None:
    """Write as the rows are read, never holding every result; atomically: a half-written
    file never replaces a good one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for chunk in json_chunks(store, experiment_ids, gate, warnings=warnings):
                handle.write(chunk)
            handle.write("\n")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
