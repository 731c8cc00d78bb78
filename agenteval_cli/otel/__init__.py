"""OpenTelemetry out and in (docs/otel.md): :mod:`.export` lays each request's trace out as
GenAI semantic-convention spans and sends them; :mod:`.ingest` reads recorded OTLP JSON back
into agenteval traces. Both spell attribute names from one table, :mod:`.names`."""
