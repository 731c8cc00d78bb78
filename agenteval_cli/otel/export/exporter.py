"""Sending the spans: the OpenTelemetry SDK makes them from the laid-out plans with the
trace's own times, and the OTLP/HTTP exporter (or the OTLP JSON file writer) sends them.
A failed export is reported with the exporter's reason, never dropped silently.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agenteval_cli.core.nesting import Walk, run_walk
from agenteval_cli.otel.export.destination import OtelDestination

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

    from agenteval_cli.core.records import Result
    from agenteval_cli.otel.export.spans import Request, SpanPlan

BATCH_SPANS = 512  # spans per export request, a request's spans never split
_EXPORTER_LOGGER = "opentelemetry.exporter"


@dataclass
class OtelExport:
    """What an export sent: requests (results) and spans, or why it stopped."""

    destination: str
    requests: int = 0
    spans: int = 0
    error: str | None = None


def export_results(
    destination: OtelDestination, results: Iterable[tuple[Request, Result, float]]
) -> OtelExport:
    """Export each ``(request, result, fallback_start)`` as its spans; stop at the first
    batch that could not be sent and say why."""
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    from agenteval_cli.otel.export.spans import result_span

    class Kept(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[ReadableSpan] = []

        def on_end(self, span: ReadableSpan) -> None:
            self.spans.append(span)

    done = OtelExport(str(destination))
    kept = Kept()
    provider = TracerProvider(resource=_resource(), sampler=ALWAYS_ON)  # recorded: all sent
    provider.add_span_processor(kept)
    tracer = provider.get_tracer("agenteval")
    errors = _ExporterErrors()
    try:
        with contextlib.ExitStack() as files, errors:
            exporter = _exporter(destination, files)
            pending = 0
            for request, result, fallback_start in results:
                plan = result_span(result, request, fallback_start=fallback_start)
                run_walk(_emit(tracer, plan, None))
                pending += 1
                if len(kept.spans) >= BATCH_SPANS:
                    if not _send(exporter, kept.spans, done, pending, errors):
                        return done
                    pending = 0
            if kept.spans and not _send(exporter, kept.spans, done, pending, errors):
                return done
    except OSError as exc:  # the file could not be written
        done.error = f"cannot write {destination}: {exc.strerror or exc}"
    finally:
        provider.shutdown()
    return done


def _send(
    exporter: SpanExporter,
    spans: list[ReadableSpan],
    done: OtelExport,
    requests: int,
    errors: _ExporterErrors,
) -> bool:
    from opentelemetry.sdk.trace.export import SpanExportResult

    errors.messages.clear()
    if exporter.export(spans) is not SpanExportResult.SUCCESS:
        reason = errors.reason()
        done.error = (
            f"the OTLP/HTTP export to {done.destination} failed after {done.requests} "
            f"request(s) were sent: {reason}"
        )
        return False
    done.requests += requests
    done.spans += len(spans)
    spans.clear()
    return True


def _emit(tracer: Tracer, plan: SpanPlan, parent: Context | None) -> Walk[None]:
    """Start ``plan``'s span, its children's inside it, then end it. A walk (``run_walk``):
    agents nest as deep as they like."""
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

    kind = SpanKind.CLIENT if plan.client else SpanKind.INTERNAL
    span = tracer.start_span(
        plan.name, context=parent, kind=kind, attributes=plan.attributes, start_time=_ns(plan.start)
    )
    for event in plan.events:
        span.add_event(event.name, event.attributes, timestamp=_ns(event.time))
    if plan.error is not None:
        span.set_status(Status(StatusCode.ERROR, plan.error))
    context = set_span_in_context(span)
    for child in plan.children:
        yield _emit(tracer, child, context)
    span.end(end_time=_ns(plan.end))


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _resource() -> Any:
    """The SDK's resource from the environment (``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``), named ``agenteval`` when those name no service."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        return found.merge(Resource({SERVICE_NAME: "agenteval"}))
    return found


def _exporter(destination: OtelDestination, files: contextlib.ExitStack) -> SpanExporter:
    """The OTLP/HTTP exporter (headers, timeout, compression and certificates from the
    ``OTEL_EXPORTER_OTLP_*`` environment), or the file writer; shut down (the file closed)
    when ``files`` closes."""
    if destination.url is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter: SpanExporter = OTLPSpanExporter(endpoint=destination.url)
    else:
        assert destination.path is not None
        opened = open(destination.path, "w", encoding="utf-8")  # noqa: SIM115 - closed by files
        file = files.enter_context(opened)
        exporter = _JsonLinesExporter(file)
    files.callback(exporter.shutdown)
    return exporter


def _JsonLinesExporter(file: TextIO) -> SpanExporter:
    """A span exporter writing each batch as one line of OTLP JSON, as a collector's file
    exporter does: an ``ExportTraceServiceRequest`` with hex ids and integer enums."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class JsonLines(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            message = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
            file.write(json.dumps(_hex_ids(message), separators=(",", ":")) + "\n")
            file.flush()
            return SpanExportResult.SUCCESS

    return JsonLines()


_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids(value: Any) -> Any:
    """OTLP JSON writes trace and span ids in hex, where protobuf's JSON writes base64."""
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex()
            if key in _ID_KEYS and isinstance(item, str)
            else _hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


class _ExporterErrors(logging.Handler):
    """Keeps what the OTLP exporter logs while an export runs, instead of the lines it
    would print: the failure is reported once, as one line."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self._logger = logging.getLogger(_EXPORTER_LOGGER)
        self._propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage().strip()
        if message:
            self.messages.append(message.splitlines()[0])

    def reason(self) -> str:
        """The exporter's last word, and its first when that said more (a retried
        connection error is first said, then given up on)."""
        if not self.messages:
            return "the exporter gave no reason"
        first, last = self.messages[0], self.messages[-1]
        return last if first == last else f"{last} ({first})"

    def __enter__(self) -> _ExporterErrors:
        self._logger.addHandler(self)
        self._propagate, self._logger.propagate = self._logger.propagate, False
        return self

    def __exit__(self, *_: object) -> None:
        self._logger.removeHandler(self)
        self._logger.propagate = self._propagate
