"""OpenTelemetry out: each request's trace as GenAI semantic-convention spans (docs/otel.md)."""
