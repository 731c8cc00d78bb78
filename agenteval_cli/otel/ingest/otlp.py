"""Spans from OTLP JSON files, as an OpenTelemetry Collector's file exporter writes them.

A file holds one ``ExportTraceServiceRequest`` as a JSON document, or one per line (the file
exporter's form). Values follow OTLP's JSON mapping: ids are hex (base64, protobuf's own JSON
form, is read too), integers may be strings, attributes are ``{"key", "value": AnyValue}``.
Every problem is a :class:`~agenteval_cli.core.errors.UserError` naming the file and line.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.nesting import nested_deeper

__all__ = ["Span", "read_spans"]

_ERROR_CODES = (2, "STATUS_CODE_ERROR")
_LATEST_NS = 253_402_300_799 * 10**9  # the last second of the year 9999: a time is no later
_FIX = "give OTLP JSON: an ExportTraceServiceRequest ({'resourceSpans': [...]}) per line or file"
# JSON levels a document may nest: a span's attribute sits at 9, an array value takes 3 more
# per level, so a value nested 60 deep still reads; deeper is no export's
MAX_DEPTH = 200


@dataclass
class Span:
    """One span: ids as lowercase hex, times in nanoseconds since the epoch, attributes and
    its events' attributes as plain Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int | None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: bool = False
    status_message: str = ""
    scope: str = ""  # the instrumentation scope's name
    resource: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # "file:line", for messages


def read_spans(path: Path) -> list[Span]:
    """Every span in the file, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(
            "no such file", file=path, hint="give the path of an OTLP JSON file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read it ({exc})", file=path) from None
    spans: list[Span] = []
    for line, document in _documents(text, path):
        spans.extend(_request_spans(document, path, line))
    return spans


def _documents(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """(line, document): the whole file as one JSON document, else one per non-empty line.
    A line nested deeper than the JSON reader recurses, or holding a number of more digits
    than Python converts, is refused as one that is no JSON is: no export writes either."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        pass
    else:
        if not _too_deep(text, document):
            yield 1, document
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"not JSON ({exc.msg}, column {exc.colno})", file=path, line=number, hint=_FIX
            ) from None
        except RecursionError:
            document = _TOO_DEEP
        except ValueError:  # an integer of more digits than Python converts
            raise UserError(
                "not JSON (a number of more digits than can be read)",
                file=path,
                line=number,
                hint=_FIX,
            ) from None
        if document is _TOO_DEEP or _too_deep(line, document):
            raise UserError(
                f"JSON nested deeper than {MAX_DEPTH} levels (no OTLP export nests so deep)",
                file=path,
                line=number,
                hint=_FIX,
            )
        yield number, document


_TOO_DEEP = object()


def _too_deep(text: str, document: Any) -> bool:
    """Whether a document nests deeper than :data:`MAX_DEPTH` (looked into only when its
    text opens that many containers at all)."""
    return text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper(document, MAX_DEPTH)


def _request_spans(document: Any, path: Path, line: int) -> Iterator[Span]:
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        raise UserError(
            "not an OTLP trace export: no 'resourceSpans' list", file=path, line=line, hint=_FIX
        )
    for resource_spans in _objects(document["resourceSpans"], "resourceSpans", path, line):
        resource = _attributes(_object(resource_spans.get("resource")).get("attributes"))
        for scope_spans in _objects(resource_spans.get("scopeSpans"), "scopeSpans", path, line):
            scope = str(_object(scope_spans.get("scope")).get("name") or "")
            for raw in _list(scope_spans.get("spans")):
                yield _span(raw, scope, resource, path, line)


def _span(raw: Any, scope: str, resource: dict[str, Any], path: Path, line: int) -> Span:
    origin = f"{path}:{line}"
    if not isinstance(raw, dict):
        raise UserError("a span is not a JSON object", file=path, line=line, hint=_FIX)
    trace_id = _id(raw.get("traceId"), 16)
    span_id = _id(raw.get("spanId"), 8)
    if trace_id is None or span_id is None:
        name = raw.get("name")
        raise UserError(
            f"span {name!r} has no valid traceId and spanId",
            file=path,
            line=line,
            hint="ids are hex strings, as OTLP JSON writes them",
        )
    try:
        start = int(raw.get("startTimeUnixNano") or 0)
        end_raw = raw.get("endTimeUnixNano")
        end = int(end_raw) if end_raw not in (None, "", 0, "0") else None
    except (TypeError, ValueError):
        raise UserError(
            f"span {raw.get('name')!r} has a time that is no integer", file=path, line=line
        ) from None
    if not all(0 <= t <= _LATEST_NS for t in (start, end) if t is not None):
        raise UserError(
            f"span {raw.get('name')!r} has a time out of range (nanoseconds since 1970, "
            "before the year 10000)",
            file=path,
            line=line,
        )
    status = _object(raw.get("status"))
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_id(raw.get("parentSpanId"), 8),
        name=str(raw.get("name") or ""),
        start_ns=start,
        end_ns=end,
        attributes=_attributes(raw.get("attributes")),
        events=[
            (str(e.get("name") or ""), _attributes(e.get("attributes")))
            for e in _list(raw.get("events"))
            if isinstance(e, dict)
        ],
        error=status.get("code") in _ERROR_CODES,
        status_message=str(status.get("message") or ""),
        scope=scope,
        resource=resource,
        origin=origin,
    )


def _objects(value: Any, name: str, path: Path, line: int) -> list[dict[str, Any]]:
    """A list of JSON objects the export's structure needs; anything else is no export."""
    items = _list(value)
    if not all(isinstance(item, dict) for item in items):
        raise UserError(
            f"not an OTLP trace export: '{name}' holds something that is no JSON object",
            file=path,
            line=line,
            hint=_FIX,
        )
    return items


def _object(value: Any) -> dict[str, Any]:
    """An optional JSON object: absent, null or of another type reads as empty."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    """An optional JSON list: absent, null or of another type reads as empty."""
    return value if isinstance(value, list) else []


def _id(value: Any, size: int) -> str | None:
    """An id as lowercase hex: OTLP JSON's hex, or protobuf JSON's base64; None when empty
    or all zeros."""
    if not isinstance(value, str) or not value:
        return None
    text = value.lower()
    if len(text) == 2 * size and all(c in "0123456789abcdef" for c in text):
        return None if set(text) == {"0"} else text
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size and any(raw) else None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        str(item["key"]): _value(item.get("value"))
        for item in items
        if isinstance(item, dict) and "key" in item
    }


def _value(value: Any) -> Any:
    """An ``AnyValue`` as a plain value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:  # "NaN" and "Infinity" are how OTLP JSON writes those
        try:
            return float(value["doubleValue"])
        except (TypeError, ValueError):  # no number: kept, for whoever reads it to judge
            return value["doubleValue"]
    if "arrayValue" in value:
        return [_value(v) for v in _list(_object(value["arrayValue"]).get("values"))]
    if "kvlistValue" in value:
        return _attributes(_object(value["kvlistValue"]).get("values"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None
