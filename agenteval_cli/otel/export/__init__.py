"""OpenTelemetry out: each request's trace as GenAI semantic-convention spans, its scores as
evaluation events, sent over OTLP/HTTP or written as an OTLP JSON file (the ``otel`` extra)."""
