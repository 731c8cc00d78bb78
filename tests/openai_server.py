"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 and a free port.

It answers ``POST .../chat/completions`` from a script of replies and records every request,
so judges are tested through the real openevals and the real ``openai`` client
(``base_url=server.base_url``). A reply is a dict (sent as the JSON answer, as a tool call
when the request offers tools), a string (sent verbatim as the message text, e.g. malformed
JSON), or an int (an HTTP error status); ``reply_for``, when set, chooses each reply from
its request instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from serving import serve


class OpenAIServer:
    def __init__(self, replies: list[Any] | None = None, *, model: str = "judge-test-model"):
        self.replies = list(replies or [])
        self.default: Any = {"score": True, "reasoning": "fine"}
        # request -> reply, when set: a reply chosen by what was asked, whatever the order
        # concurrent requests arrive in
        self.reply_for: Callable[[dict[str, Any]], Any] | None = None
        self.model = model
        self.usage = (120, 30)  # prompt, completion tokens per reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIServer:
        serve(self._httpd)
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, request: dict[str, Any]) -> Any:
        with self._lock:
            self.requests.append(request)
            if self.reply_for is not None:
                return self.reply_for(request)
            return self.replies.pop(0) if self.replies else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                reply = server._next(request)
                if isinstance(reply, int):
                    return self._send(reply, {"error": {"message": "scripted failure"}})
                return self._send(200, server._completion(request, reply))

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _completion(self, request: dict[str, Any], reply: Any) -> dict[str, Any]:
        text = reply if isinstance(reply, str) else json.dumps(reply)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        tools = request.get("tools") or []
        if tools and not isinstance(reply, str):
            name = tools[0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": text},
                    }
                ],
            }
            finish = "tool_calls"
        prompt, completion = self.usage
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


@contextmanager
def openai_server(replies: list[Any] | None = None, **kwargs: Any) -> Iterator[OpenAIServer]:
    server = OpenAIServer(replies, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
