"""OpenLLMetry's LangChain spans (``opentelemetry-instrumentation-langchain``) laid out as
OpenInference's, so that its traces are replayed as the LangChain runs they record.

Its callback handler opens a span per LangChain run, as OpenInference's does, but spells
the run differently: the run's metadata (LangGraph's node, step, path and namespace,
``lc_agent_name``) is in ``traceloop.entity.input``'s ``metadata`` and, a key an attribute,
under ``traceloop.association.properties.``; its name is ``traceloop.entity.name`` (the
span's is decorated: ``execute_task NAME``, ``NAME.workflow``); a chain's or tool's inputs
and outputs are JSON in ``traceloop.entity.input`` / ``traceloop.entity.output``, messages
in LangChain's serialized form; a model run has no such JSON, only the GenAI messages and
usage, which :func:`agenteval_cli.otel.ingest.runs.run_of` reads as any model span's (a
cache-write count of 0 is unknown: see :func:`_attributes`).

It also writes spans that are no run, which are left out: a graph's structure
(``invoke_agent NAME`` with ``gen_ai.workflow.nodes``, opened beside the agent's node, never
around its model calls), a ``Command``'s ``goto``, an agent's ``create_agent``. Agents are
then read from the runs' ``lc_agent_name`` and LangGraph's metadata, as in a callback-traced
run; a trace holding none of its runs (an agent built outside any request) is no request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.messages import json_value
from agenteval_cli.otel.ingest.otlp import Span

__all__ = ["as_openinference"]

# LangChain's message classes, by the type their plain dumps carry
_MESSAGE_TYPES = {
    "AIMessage": "ai",
    "HumanMessage": "human",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    "RemoveMessage": "remove",
}


def as_openinference(spans: Sequence[Span]) -> list[Span]:
    """``spans`` with OpenLLMetry's LangChain runs rewritten in OpenInference's attributes
    and its spans that are no run left out (their children hung on their nearest kept
    ancestor); every other span as it is."""
    if not any(s.scope == names.OPENLLMETRY_LANGCHAIN_SCOPE for s in spans):
        return list(spans)
    by_id = {s.span_id: s for s in spans}
    dropped = {s.span_id for s in spans if _is_structure(s)}
    kept = []
    for span in spans:
        if span.span_id in dropped:
            continue
        parent = _kept_ancestor(span.parent_id, by_id, dropped)
        if span.scope == names.OPENLLMETRY_LANGCHAIN_SCOPE:
            name = span.attributes.get(names.TRACELOOP_ENTITY_NAME)
            span = replace(span, name=str(name or span.name), attributes=_attributes(span))
        kept.append(replace(span, parent_id=parent) if parent != span.parent_id else span)
    return kept


def _is_structure(span: Span) -> bool:
    """One of OpenLLMetry's spans that records no LangChain run: every run's span has a
    ``traceloop.span.kind`` but a model's, which has a model operation."""
    if span.scope != names.OPENLLMETRY_LANGCHAIN_SCOPE:
        return False
    attributes = span.attributes
    if attributes.get(names.TRACELOOP_SPAN_KIND):
        return False
    return attributes.get(names.OPERATION) not in names.MODEL_OPERATIONS


def _kept_ancestor(parent: str | None, by_id: dict[str, Span], dropped: set[str]) -> str | None:
    seen: set[str] = set()
    while parent is not None and parent in dropped and parent not in seen:
        seen.add(parent)
        parent = by_id[parent].parent_id
    return parent


def _attributes(span: Span) -> dict[str, Any]:
    """The run's attributes as OpenInference writes them: its kind, ``metadata`` and, for a
    chain or tool, ``input.value`` / ``output.value`` (a model's GenAI attributes stay)."""
    attributes = dict(span.attributes)
    given = _dumped(json_value(attributes.get(names.TRACELOOP_ENTITY_INPUT)))
    given = given if isinstance(given, dict) else {}
    returned = _dumped(json_value(attributes.get(names.TRACELOOP_ENTITY_OUTPUT)))
    returned = returned if isinstance(returned, dict) else {}
    metadata = given.get("metadata")
    if not isinstance(metadata, dict):  # no inputs recorded: the association properties
        prefix = names.TRACELOOP_METADATA_PREFIX
        metadata = {k[len(prefix) :]: v for k, v in attributes.items() if k.startswith(prefix)}
    attributes[names.METADATA] = json.dumps(metadata)
    if attributes.get(names.OPERATION) in names.MODEL_OPERATIONS:
        attributes[names.SPAN_KIND] = "LLM"
        if attributes.get(names.CACHE_CREATION_TOKENS) in (0, "0"):
            # it copies LangChain's cache_creation only, which LangChain's Anthropic model
            # leaves 0 when it splits the writes by cache lifetime: a 0 is unknown
            del attributes[names.CACHE_CREATION_TOKENS]
        return attributes
    if attributes.get(names.TRACELOOP_SPAN_KIND) == names.TRACELOOP_TOOL:
        attributes[names.SPAN_KIND] = "TOOL"
        text = given.get("input_str")
        if isinstance(text, str):
            attributes[names.INPUT_VALUE] = text
        if "output" in returned:
            attributes[names.OUTPUT_VALUE] = json.dumps(returned["output"])
            attributes[names.OUTPUT_MIME] = names.JSON_MIME
        return attributes
    attributes[names.SPAN_KIND] = "CHAIN"
    for key, value_key, mime_key, found in (
        ("inputs", names.INPUT_VALUE, names.INPUT_MIME, given),
        ("outputs", names.OUTPUT_VALUE, names.OUTPUT_MIME, returned),
    ):
        if key in found:
            attributes[value_key] = json.dumps(found[key])
            attributes[mime_key] = names.JSON_MIME
    return attributes


def _dumped(value: Any) -> Any:
    """LangChain's serialized messages (``{"lc": 1, "type": "constructor", ...}``) as the
    ``messages_to_dict`` dumps OpenInference writes, anywhere in ``value``."""
    if isinstance(value, list):
        return [_dumped(v) for v in value]
    if not isinstance(value, dict):
        return value
    ids, fields = value.get("id"), value.get("kwargs")
    if value.get("lc") == 1 and value.get("type") == "constructor" and isinstance(fields, dict):
        name = ids[-1] if isinstance(ids, list) and ids else ""
        kind = fields.get("type") or _MESSAGE_TYPES.get(str(name).removesuffix("Chunk"))
        if isinstance(kind, str) and "content" in fields:
            return {"type": kind, "data": {**_dumped(fields), "type": kind}}
    return {k: _dumped(v) for k, v in value.items()}
