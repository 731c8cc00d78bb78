"""Shared building blocks: records, errors, redaction, safe text, positioned YAML, retries."""
