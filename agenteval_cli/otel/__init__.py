"""Recorded OpenTelemetry traces read back as agenteval traces: OTLP JSON files, their spans
in the GenAI semantic conventions or OpenInference's attributes, each request's spans replayed
into the local tracer so it is attributed as a callback-traced run is."""
