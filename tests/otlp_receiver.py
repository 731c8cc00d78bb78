"""An OTLP/HTTP trace receiver on 127.0.0.1 for the export tests, and the spans it got.

It decodes each ``ExportTraceServiceRequest`` with opentelemetry-proto (the collector's own
message types), so what the tests read is what a collector would: the spans flattened to
plain data, attribute values unwrapped.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from serving import serve


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start: int  # ns since the epoch
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any] = field(default_factory=dict)


@dataclass
class Receiver:
    url: str
    requests: list[Any] = field(default_factory=list)  # ExportTraceServiceRequest
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    status: int = 200  # what it answers

    def spans(self) -> list[Span]:
        return [span for request in self.requests for span in flatten(request)]


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver on a free port: ``receiver.url`` is its base URL (no path)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    receiver = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            encoding = self.headers.get("Content-Encoding")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            receiver.paths.append(self.path)
            receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
            if receiver.status != 200:
                self.send_response(receiver.status)
                self.end_headers()
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.requests.append(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    serve(server)
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def flatten(request: Any) -> list[Span]:
    found = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                found.append(
                    Span(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        events=[
                            (e.name, e.time_unix_nano, _attributes(e.attributes))
                            for e in span.events
                        ],
                        status_code=span.status.code,
                        status_message=span.status.message,
                        resource=resource,
                    )
                )
    return found


def read_jsonl(path: Path) -> list[Span]:
    """The spans of an OTLP JSON file (one request a line, hex ids), parsed into the proto
    message: a file a collector could not read fails here."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    spans = []
    for line in path.read_text().splitlines():
        data = _base64_ids(json.loads(line))
        spans += flatten(ParseDict(data, ExportTraceServiceRequest()))
    return spans


def _base64_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ("traceId", "spanId", "parentSpanId")
            else _base64_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_base64_ids(v) for v in value]
    return value


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None
