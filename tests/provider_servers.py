"""Loopback servers speaking OpenAI's chat-completions and Anthropic's Messages wire formats.

The real ``ChatOpenAI(base_url=...)`` and ``ChatAnthropic(base_url=...)`` talk to them on
127.0.0.1, so a test sees exactly what the provider clients make of a provider's usage
(cached, cache-written and reasoning tokens, Anthropic's 5-minute and 1-hour cache writes),
streamed or not. Each request is answered by a script, ``script(request) -> Reply``: which
tool to call (or what to say) and the usage to report, in the provider's own field names.
Every request and the reply it got are kept in ``exchanges``.

OpenAI streams send a final usage chunk only when the request asks for it
(``stream_options.include_usage``), as OpenAI does; Anthropic streams send
``message_start``, the content blocks and a ``message_delta`` carrying the usage.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from serving import serve


@dataclass
class Reply:
    """What the model answers: a call of ``tool`` with ``args``, else ``text``; ``usage`` is
    sent as it is, in the provider's own form (see :func:`openai_usage`,
    :func:`anthropic_usage`)."""

    usage: dict[str, Any] | None  # None: the response carries no usage (OpenAI only)
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str = "done"
    extra: dict[str, Any] = field(default_factory=dict)  # more top-level response fields
    status: int = 200  # another: the provider's error answer with that HTTP status


@dataclass
class Exchange:
    """One request as the provider got it, in a form scripts can read either provider's in."""

    path: str
    body: dict[str, Any]
    reply: Reply | None = None

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system(self) -> str:
        """The system prompt's text (Anthropic's ``system``, OpenAI's system message)."""
        system = self.body.get("system")
        if system is None:
            system = next(
                (m.get("content") for m in self.body.get("messages", []) if m["role"] == "system"),
                "",
            )
        return _text(system)

    @property
    def tools(self) -> list[str]:
        """The names of the tools the request offers, in either form."""
        tools = self.body.get("tools") or []
        return [str(t.get("name") or t.get("function", {}).get("name")) for t in tools]

    @property
    def question(self) -> str:
        """The first user message's text."""
        for message in self.body.get("messages", []):
            if message["role"] == "user":
                text = _text(message.get("content"))
                if text:
                    return text
        return ""

    @property
    def tool_results(self) -> list[str]:
        """The names of the tools whose results the request carries, in order."""
        names: dict[str, str] = {}  # call id -> tool name
        results: list[str] = []
        for message in self.body.get("messages", []):
            for call in message.get("tool_calls") or []:  # OpenAI
                names[call["id"]] = call["function"]["name"]
            if message["role"] == "tool":
                results.append(names.get(message.get("tool_call_id", ""), "?"))
            content = message.get("content")
            for block in content if isinstance(content, list) else []:  # Anthropic
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
                elif block.get("type") == "tool_result":
                    results.append(names.get(block.get("tool_use_id", ""), "?"))
        return results


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def openai_usage(
    prompt: int, completion: int, *, cached: int | None = None, reasoning: int | None = None
) -> dict[str, Any]:
    """OpenAI's ``usage``: ``prompt_tokens`` include the cached ones, ``completion_tokens``
    the reasoning ones; a detail left ``None`` is not sent."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    if reasoning is not None:
        usage["completion_tokens_details"] = {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        }
    return usage


def anthropic_usage(
    uncached: int,
    output: int,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    split: tuple[int, int] | None = None,
    thinking: int | None = None,
) -> dict[str, Any]:
    """Anthropic's ``usage``: ``input_tokens`` are the uncached ones only;
    ``cache_creation_input_tokens`` every cache write, ``split`` its 5-minute and 1-hour
    parts (``usage.cache_creation``); ``thinking`` the reasoning part of ``output_tokens``."""
    usage: dict[str, Any] = {
        "input_tokens": uncached,
        "output_tokens": output,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    if split is not None:
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": split[0],
            "ephemeral_1h_input_tokens": split[1],
        }
    if thinking is not None:
        usage["output_tokens_details"] = {"thinking_tokens": thinking}
    return usage


Script = Callable[[Exchange], Reply]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing its keep-alive connection is no error of the test's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ProviderServer:
    """A scripted provider on 127.0.0.1 and a free port; subclasses speak the wire format."""

    route = ""

    def __init__(self, script: Script, *, model: str) -> None:  # model: when none is asked
        self.script = script
        self.model = model
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ProviderServer:
        serve(self._httpd)
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answered(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.reply is not None]

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[Exchange, Reply]:
        exchange = Exchange(path, body)
        reply = self.script(exchange)
        exchange.reply = reply
        with self._lock:
            self.exchanges.append(exchange)
        return exchange, reply

    def body(self, exchange: Exchange, reply: Reply, number: int) -> dict[str, Any]:
        raise NotImplementedError

    def error(self, status: int) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, exchange: Exchange, reply: Reply, number: int) -> Iterator[bytes]:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as langsmith_stub.wire.Handler

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith(server.route):
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                exchange, reply = server._answer(self.path, body)
                number = len(server.exchanges)
                if reply.status != 200:
                    return self._json(reply.status, server.error(reply.status))
                if not exchange.streamed:
                    return self._json(200, server.body(exchange, reply, number))
                data = b"".join(server.events(exchange, reply, number))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class OpenAIChatServer(ProviderServer):
    """``POST /v1/chat/completions``; ``base_url`` for ``ChatOpenAI`` is ``url + "/v1"``."""

    route = "/chat/completions"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def error(self, status: int) -> dict[str, Any]:
        return {"error": {"message": "scripted failure", "type": "server_error", "code": status}}

    def _message(self, reply: Reply, number: int) -> tuple[dict[str, Any], str]:
        if reply.tool is None:
            return {"role": "assistant", "content": reply.text}, "stop"
        call = {
            "id": f"call_{number}",
            "type": "function",
            "function": {"name": reply.tool, "arguments": json.dumps(reply.args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"

    def body(self, exchange: Exchange, reply: Reply, number: int) -> dict[str, Any]:
        message, finish = self._message(reply, number)
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": exchange.body.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            **({} if reply.usage is None else {"usage": reply.usage}),
            **reply.extra,
        }

    def events(self, exchange: Exchange, reply: Reply, number: int) -> Iterator[bytes]:
        def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            data = {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": exchange.body.get("model") or self.model,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        message, finish = self._message(reply, number)
        yield chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}])
        if reply.tool is None:
            for part in (reply.text[: len(reply.text) // 2], reply.text[len(reply.text) // 2 :]):
                yield chunk([{"index": 0, "delta": {"content": part}}])
        else:
            call = message["tool_calls"][0]
            head = {"index": 0, "id": call["id"], "type": "function"}
            head["function"] = {"name": reply.tool, "arguments": ""}
            yield chunk([{"index": 0, "delta": {"tool_calls": [head]}}])
            arguments = call["function"]["arguments"]
            for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
                yield chunk([{"index": 0, "delta": delta}])
        yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        if (exchange.body.get("stream_options") or {}).get("include_usage") and reply.usage:
            yield chunk([], usage=reply.usage)
        yield b"data: [DONE]\n\n"


class AnthropicServer(ProviderServer):
    """``POST /v1/messages``; ``base_url`` for ``ChatAnthropic`` is ``url``."""

    route = "/v1/messages"

    @property
    def base_url(self) -> str:
        return self.url

    def error(self, status: int) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}

    def _content(self, reply: Reply, number: int) -> tuple[list[dict[str, Any]], str]:
        if reply.tool is None:
            return [{"type": "text", "text": reply.text}], "end_turn"
        block = {"type": "tool_use", "id": f"toolu_{number}", "name": reply.tool}
        return [{**block, "input": reply.args}], "tool_use"

    def body(self, exchange: Exchange, reply: Reply, number: int) -> dict[str, Any]:
        content, stop = self._content(reply, number)
        return {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": exchange.body.get("model") or self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": reply.usage,
        }

    def events(self, exchange: Exchange, reply: Reply, number: int) -> Iterator[bytes]:
        def event(kind: str, **data: Any) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        content, stop = self._content(reply, number)
        start = self.body(exchange, reply, number)
        start.update(content=[], stop_reason=None)
        start["usage"] = {**reply.usage, "output_tokens": 1}  # as Anthropic: so far
        yield event("message_start", message=start)
        block = content[0]
        if block["type"] == "text":
            yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            yield event("content_block_start", index=0, content_block=opened)
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield event("content_block_delta", index=0, delta=delta)
        yield event("content_block_stop", index=0)
        # the usage so far, cumulative: the whole request's by the end
        yield event(
            "message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=reply.usage
        )
        yield event("message_stop")
