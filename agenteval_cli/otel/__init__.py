"""OpenTelemetry out (each request's trace as GenAI semantic-convention spans) and in (recorded
OTLP JSON read back as agenteval traces): docs/otel.md, docs/otel-import.md."""
