"""The ``--json`` export: a stable shape for users' scripts.

``{"experiments": [{"name", "target", "metrics": {<metric>: <mean>}, "agents": {<path>: {...}},
"results": [...]}]}``; ``agents`` is :mod:`agenteval_cli.report.agents` over the successful
results, keyed ``"team > agent"``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval_cli.metrics import summarize
from agenteval_cli.redact import redact
from agenteval_cli.report.agents import aggregate_results
from agenteval_cli.store import Store, dumps


def experiment_json(store: Store, experiment_id: str) -> dict[str, Any]:
    experiment = store.experiment(experiment_id)
    stored = list(store.results(experiment_id))
    results = [s.result for s in stored]
    summary = summarize(results)
    pricing = experiment.spec.get("pricing") or {}
    return {
        "name": experiment.name,
        "target": experiment.target,
        "id": experiment.id,
        "status": experiment.status,
        "dataset_hash": experiment.dataset_hash,
        "git_commit": experiment.git_commit,
        "started_at": experiment.started_at,
        "ended_at": experiment.ended_at,
        "metrics": summary.metrics(),
        "metric_counts": dict(summary.counts),  # results each metric was computed over
        "pricing": pricing,
        "agents": aggregate_results(results, pricing).to_json(),
        **dataset_level(store, experiment_id, stored),
        "results": [
            {
                "example_id": r.example_id,
                "repetition": r.repetition,
                "inputs": s.inputs,
                "outputs": r.outputs,
                "scores": r.score_map(),
                "comments": {sc.key: sc.comment for sc in r.scores if sc.comment},
                "trace": {
                    "agent_path": r.trace.agent_path,
                    "handoffs": [h.__dict__ for h in r.trace.handoffs],
                    "tool_calls": [t.__dict__ for t in r.trace.tool_calls],
                    "model_calls": [m.__dict__ for m in r.trace.model_calls],
                    "coordinators": r.trace.coordinators,
                    "tokens": r.trace.tokens,
                    "untraced": r.trace.untraced,  # why nothing was recorded, if so
                },
                "latency_s": r.latency_s,
                "attempts": r.attempts,
                "cached": r.cached,
                "error": r.error,
            }
            for s, r in zip(stored, results, strict=True)
        ],
    }


def dataset_level(store: Store, experiment_id: str, stored: list[Any]) -> dict[str, Any]:
    """Summary evaluators' scores and the routing confusion matrix (expected x invoked)."""
    from agenteval_cli.evaluators.routing import confusion_matrix
    from agenteval_cli.evaluators.summaries import summary_scores

    rows = [(s.reference_outputs, s.result.trace) for s in stored if s.result.error is None]
    return {
        "dataset_results": {
            sc.key: {"score": sc.score, "comment": sc.comment}
            for sc in summary_scores(store, experiment_id)
        },
        "routing_confusion": confusion_matrix(rows),
    }


def write_json(path: Path, store: Store, experiment_ids: Sequence[str]) -> None:
    """Write atomically: a half-written file never replaces a good one."""
    data = {"experiments": [experiment_json(store, e) for e in experiment_ids]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(strict_json(data, indent=2) + "\n")
    tmp.replace(path)


def _null(_constant: str) -> None:
    return None


def strict_json(value: Any, **options: Any) -> str:
    """JSON every parser accepts: NaN and ±Infinity, which ``json`` writes by default and
    strict parsers (JavaScript's ``JSON.parse``, ``jq``, Go, Rust) refuse, become null;
    known secrets are redacted. Values JSON cannot hold are converted as the store does."""
    plain = json.loads(redact(dumps(value)), parse_constant=_null)
    return json.dumps(plain, ensure_ascii=False, allow_nan=False, **options)
