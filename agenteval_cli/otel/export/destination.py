"""Where ``--otel`` sends the spans: an OTLP/HTTP endpoint or an OTLP JSON file.

Checked before any target runs, with the libraries the export needs, so a wrong value or
a missing extra costs no calls.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agenteval_cli.core.errors import UserError

INSTALL_HINT = "install it with: pip install 'agenteval-cli[otel]'"
TRACES_PATH = "/v1/traces"  # OTLP/HTTP's path for traces under a collector's base URL
_NEEDED = (
    "opentelemetry.sdk",
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.semconv",
)


@dataclass(frozen=True)
class OtelDestination:
    """An endpoint (``url``) or a file (``path``): exactly one is set."""

    url: str | None = None
    path: Path | None = None

    def __str__(self) -> str:
        return self.url if self.url is not None else str(self.path)


def otel_destination(value: str) -> OtelDestination:
    """``--otel``'s value: ``http(s)://host:port`` (``/v1/traces`` added when no path is
    given), ``env`` (the endpoint the OTLP environment names) or a file path, whose folder
    must exist. The OpenTelemetry libraries must be installed: one line with the install
    hint when they are not."""
    for module in _NEEDED:
        if not _importable(module):
            raise UserError(
                f"--otel needs the OpenTelemetry SDK and OTLP exporter ({module} is missing)",
                hint=INSTALL_HINT,
            )
    text = value.strip()
    if not text:
        raise UserError("--otel needs a value", hint="--otel http://localhost:4318 or traces.jsonl")
    if text == "env":  # used as given: OTLP's variables say how they are read
        return OtelDestination(url=_endpoint_from_environment())
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        if not parts.hostname:
            raise UserError(f"--otel {text!r} names no host", hint="--otel http://localhost:4318")
        if parts.path in ("", "/"):
            text = text.rstrip("/") + TRACES_PATH
        return OtelDestination(url=text)
    if "://" in text:
        raise UserError(
            f"--otel {text!r}: only http:// and https:// endpoints (OTLP/HTTP) are supported",
            hint="--otel http://localhost:4318, or a file such as traces.jsonl",
        )
    path = Path(text)
    if path.is_dir():
        raise UserError(f"--otel {text}: is a folder", hint="name a file, such as traces.jsonl")
    if not path.parent.is_dir():
        raise UserError(
            f"--otel {text}: the folder {path.parent} does not exist", hint="create it first"
        )
    return OtelDestination(path=path)


def _endpoint_from_environment() -> str:
    """The traces endpoint as OTLP's environment variables give it: the signal's own URL as
    it is, else the base URL with ``/v1/traces``."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    found = traces or (base.rstrip("/") + TRACES_PATH if base else "")
    if found.startswith(("http://", "https://")):
        return found
    if found:
        raise UserError(
            f"--otel env: the OTLP endpoint {found!r} is not an http:// or https:// URL",
            hint="OTLP/HTTP, such as http://localhost:4318",
        )
    raise UserError(
        "--otel env: neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT "
        "is set",
        hint="export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318, or give the URL",
    )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
