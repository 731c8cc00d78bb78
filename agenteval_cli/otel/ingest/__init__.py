"""OpenTelemetry in: recorded OTLP JSON files read back as agenteval traces, their spans in
the GenAI semantic conventions or OpenInference's attributes; LangChain's spans replayed into
the local tracer so a request is attributed as a callback-traced run is. Needs no
OpenTelemetry package."""
