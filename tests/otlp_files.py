"""Finished OpenTelemetry SDK spans written as OTLP JSON, as a Collector's file exporter
writes them (one ``ExportTraceServiceRequest`` per line, hex ids, integers as strings), so
tests import what a real instrumentation recorded through the same file format users give."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def attributes(values: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in dict(values or {}).items()]


def span_json(span: Any) -> dict[str, Any]:
    """One SDK ``ReadableSpan`` in OTLP JSON."""
    status = span.status.status_code.value  # UNSET 0, OK 1, ERROR 2
    return {
        "traceId": format(span.context.trace_id, "032x"),
        "spanId": format(span.context.span_id, "016x"),
        "parentSpanId": format(span.parent.span_id, "016x") if span.parent else "",
        "name": span.name,
        "kind": span.kind.value + 1,
        "startTimeUnixNano": str(span.start_time),
        "endTimeUnixNano": str(span.end_time),
        "attributes": attributes(span.attributes),
        "events": [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": attributes(e.attributes),
            }
            for e in span.events
        ],
        "status": {
            "code": status,
            **({"message": span.status.description} if span.status.description else {}),
        },
    }


def request_json(spans: Sequence[Any]) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` holding ``spans``, grouped by scope."""
    scopes: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
        scopes.setdefault(scope, []).append(span_json(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "agenteval-tests"})},
                "scopeSpans": [
                    {"scope": {"name": name}, "spans": items} for name, items in scopes.items()
                ],
            }
        ]
    }


def write_otlp(path: Path, batches: Iterable[Sequence[Any]]) -> Path:
    """Each batch of spans as one line, as the file exporter appends an export per line."""
    with path.open("w", encoding="utf-8") as out:
        for batch in batches:
            if batch:
                out.write(json.dumps(request_json(batch)) + "\n")
    return path
