"""HTTP plumbing: the request handler, JSON and multipart bodies, fault headers."""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from .state import ApiError, Fault, Recorded

if TYPE_CHECKING:
    from .server import LangSmithStandIn


def json_body(r: Recorded) -> Any:
    try:
        return json.loads(r.body or b"null")
    except json.JSONDecodeError:
        raise ApiError(422, "body is not JSON") from None


def multipart(r: Recorded) -> list[tuple[str, bytes]]:
    """(field name, payload) of every part of a multipart/form-data body."""
    content_type = r.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise ApiError(422, "expected multipart/form-data")
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + r.body
    )
    parts = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts.append((str(name), part.get_payload(decode=True) or b""))
    return parts


def retry_headers(fault: Fault) -> dict[str, str]:
    return {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}


class Handler(BaseHTTPRequestHandler):
    stand_in: LangSmithStandIn
    protocol_version = "HTTP/1.1"
    # a kept-alive connection's answer is written as headers then body: with Nagle's
    # algorithm on, the body waits for the client's delayed ACK (40 ms on Linux) each time
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = Recorded(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        status, payload, headers = self.stand_in.handle(record)
        record.status = status
        data = json.dumps(payload, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
