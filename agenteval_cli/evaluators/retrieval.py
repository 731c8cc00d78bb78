"""Retrieval metrics for RAG targets: precision/recall/hit@k, reciprocal rank, NDCG@k, AP.

Written by hand: openevals only has LLM-judged retrieval prompts, and these are exact
set-and-rank formulas (their textbook definitions, checked by hand in the tests).

Edges, defined once here:
- duplicate retrieved ids count once, at their first rank (a repeat is no new evidence);
- k beyond the list: the list is not padded, but precision@k still divides by k (the empty
  slots were not relevant);
- nothing retrieved: every metric is 0.0 (when something is relevant);
- nothing relevant: the metrics are undefined, so the score is None with the reason, never a
  silent 0 or 1 that would move the mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.registry import declares, register
from agenteval_cli.metrics.registry import MetricInfo, metric


def dedupe(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def precision_at_k(retrieved: Sequence[str], relevant: set[str], k: int) -> float:
    return sum(1 for doc in dedupe(retrieved)[:k] if doc in relevant) / k


def recall_at_k(retrieved: Sequence[str], relevant: set[str], k: int) -> float:
    return sum(1 for doc in dedupe(retrieved)[:k] if doc in relevant) / len(relevant)


def hit_at_k(retrieved: Sequence[str], relevant: set[str], k: int) -> float:
    return 1.0 if any(doc in relevant for doc in dedupe(retrieved)[:k]) else 0.0


def reciprocal_rank(retrieved: Sequence[str], relevant: set[str]) -> float:
    """1/rank of the first relevant id; its mean over examples is MRR."""
    for rank, doc in enumerate(dedupe(retrieved), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def dcg(gains: Sequence[float]) -> float:
    """DCG = Σ rel_i / log2(i + 1), ranks i from 1."""
    return sum(rel / math.log2(i + 2) for i, rel in enumerate(gains))


def ndcg_at_k(retrieved: Sequence[str], grades: Mapping[str, float], k: int) -> float:
    """DCG of the top k over the DCG of the grades sorted best first (0.0 if that is 0)."""
    gains = [float(grades.get(doc, 0.0)) for doc in dedupe(retrieved)[:k]]
    ideal = dcg(sorted((float(g) for g in grades.values()), reverse=True)[:k])
    return dcg(gains) / ideal if ideal > 0 else 0.0


def average_precision_at_k(retrieved: Sequence[str], relevant: set[str], k: int) -> float:
    """Mean of precision@i over the ranks i ≤ k holding a relevant id, over min(|rel|, k)."""
    hits, total = 0, 0.0
    for rank, doc in enumerate(dedupe(retrieved)[:k], start=1):
        if doc in relevant:
            hits += 1
            total += hits / rank
    return total / min(len(relevant), k)


def _doc_id(item: Any, id_key: str) -> str | None:
    """An id from a plain id, a dict/Document with ``id`` or ``metadata[id_key]``."""
    if isinstance(item, str | int):
        return str(item)
    metadata = (
        item.get("metadata") if isinstance(item, Mapping) else getattr(item, "metadata", None)
    )
    if isinstance(metadata, Mapping) and metadata.get(id_key) is not None:
        return str(metadata[id_key])
    value = item.get(id_key) if isinstance(item, Mapping) else getattr(item, id_key, None)
    if value is None and isinstance(item, Mapping):
        value = item.get("id")
    return None if value is None else str(value)


def retrieved_ids(
    outputs: Mapping[str, Any], trace: Trace | None, *, key: str, id_key: str, tools: list[str]
) -> tuple[list[str], str]:
    """Ranked ids from ``outputs[key]``, else from the retriever tool calls in the trace."""
    items = (outputs or {}).get(key)
    if items is not None:
        if not isinstance(items, list | tuple):
            items = [items]
        return [i for i in (_doc_id(x, id_key) for x in items) if i is not None], f"outputs.{key}"
    found: list[str] = []
    for call in trace.tool_calls if trace else []:
        if call.name in tools or (not tools and "retriev" in call.name):
            found.extend(_ids_from_tool_output(call.output, id_key))
    return found, "retriever tool calls"


def _ids_from_tool_output(output: str | None, id_key: str) -> list[str]:
    import json

    if not output:
        return []
    try:
        data = json.loads(output)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    return [i for i in (_doc_id(x, id_key) for x in items) if i is not None]


def relevance(reference: Mapping[str, Any]) -> dict[str, float]:
    """Grades by id from ``relevance`` (id -> grade) or ``relevant`` (a list, grade 1)."""
    graded = reference.get("relevance")
    if isinstance(graded, Mapping):
        return {str(k): float(v) for k, v in graded.items()}
    listed = reference.get("relevant") or []
    if isinstance(listed, str):
        listed = [listed]
    return {str(doc): 1.0 for doc in listed}


def _ks(k: int | list[int]) -> list[int]:
    ks = [k] if isinstance(k, int) else list(k)
    if not ks or any(not isinstance(x, int) or isinstance(x, bool) or x < 1 for x in ks):
        raise ValueError(f"k must be a positive integer or a list of them, got {k!r}")
    return sorted(set(ks))


RATES = ("precision", "recall", "hit")  # shares of documents or examples: percentages
RECIPROCAL_RANK = metric("reciprocal_rank")


def _metrics(ks: list[int], names: Sequence[str]) -> list[MetricInfo]:
    """The keys the ``k`` given make, the shares of documents or examples (precision,
    recall, hit) as percentages, then ``reciprocal_rank``."""
    return [
        metric(f"{name}@{x}", fmt="percent" if name in RATES else "number")
        for x in ks
        for name in names
    ] + [RECIPROCAL_RANK]


@register(
    "retrieval",
    family="retrieval",
    reads="outputs.retrieved (or retriever tool calls); outputs.relevant / outputs.relevance",
    references=("relevant", "relevance"),
    description="precision@k, recall@k, hit@k, NDCG@k, AP@k for each k, and reciprocal rank",
    metrics=[RECIPROCAL_RANK],  # and one key per metric and k: precision@3, ...
    example="- {name: retrieval, k: [1, 3, 5]}",
)
def retrieval(
    *,
    k: int | list[int] = 5,
    key: str = "retrieved",
    id_key: str = "id",
    retriever_tools: list[str] | None = None,
) -> Any:
    """One score per metric and k: ``precision@3``, ``ndcg@5``... plus ``reciprocal_rank``."""
    ks = _ks(k)
    tools = list(retriever_tools or [])
    names = ("precision", "recall", "hit", "ndcg", "average_precision")

    def evaluate(outputs: dict, reference_outputs: dict, trace: Trace) -> list[dict]:
        grades = relevance(reference_outputs or {})
        relevant = {doc for doc, grade in grades.items() if grade > 0}
        ranked, source = retrieved_ids(outputs, trace, key=key, id_key=id_key, tools=tools)
        keys = [f"{n}@{x}" for x in ks for n in names] + ["reciprocal_rank"]
        if not relevant:
            why = "no relevant ids in outputs.relevant / outputs.relevance: metric undefined"
            return [{"key": name, "score": None, "comment": why} for name in keys]
        top = dedupe(ranked)
        comment = f"{source}: {top[: max(ks)]}; relevant {sorted(relevant)}"
        if len(top) < len(ranked):
            comment += f"; {len(ranked) - len(top)} duplicate id(s) ignored"
        results = []
        for x in ks:
            values = {
                "precision": precision_at_k(top, relevant, x),
                "recall": recall_at_k(top, relevant, x),
                "hit": hit_at_k(top, relevant, x),
                "ndcg": ndcg_at_k(top, grades, x),
                "average_precision": average_precision_at_k(top, relevant, x),
            }
            results += [{"key": f"{n}@{x}", "score": values[n], "comment": comment} for n in names]
        results.append(
            {"key": "reciprocal_rank", "score": reciprocal_rank(top, relevant), "comment": comment}
        )
        return results

    # the keys it writes, for k as configured (the registry lists only the one fixed key)
    return declares(*_metrics(ks, names))(evaluate)
