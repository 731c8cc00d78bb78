"""A served graph's server that stops mid-stream is named as the stall, never blamed on the
target's code, however busy the event loop: what holds the loop during its calls
(agenteval's own work, the SDK's) is not the target's, whose code runs on the server, and
the SDK client is made off the loop (agenteval_cli.targets.waits). The server here speaks
the Agent Server's wire format (a thread, then a run's server-sent events) to the real
langgraph-sdk client, on 127.0.0.1, and goes quiet after the run's first state."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from serving import serve

from agenteval_cli.core.records import Example
from agenteval_cli.execution.guards.deadline import Call, within
from agenteval_cli.execution.runner import Runner, RunSettings
from agenteval_cli.targets import adapt
from agenteval_cli.targets.remote import RemoteGraph, remote_target

RUN_ID = "1ef4a9b8-0000-6000-8000-000000000001"
STATE = {"messages": [{"type": "human", "content": "q", "id": "m1"}]}
STARTED = {  # the graph's run began: the one callback event streamed before the stall
    "event": "on_chain_start",
    "name": "LangGraph",
    "run_id": "1ef4a9b8-0000-6000-8000-000000000002",
    "parent_ids": [],
    "metadata": {},
    "tags": [],
    "data": {"input": STATE},
}


class _Stalling(BaseHTTPRequestHandler):
    """Creates threads, and streams a run's metadata, its graph's start and first state,
    then nothing."""

    quiet: threading.Event  # set when the test is over: the stream then ends
    creates = True  # False: a request to create a thread is never answered

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path == "/threads" and not self.creates:
            self.quiet.wait(30)
            return
        if self.path == "/threads":
            body = json.dumps({"thread_id": "t1", "metadata": {}, "status": "idle"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
        sent = (("metadata", {"run_id": RUN_ID, "attempt": 1}), ("events", STARTED))
        for event, data in (*sent, ("values", STATE)):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.quiet.wait(30)  # stalled mid-run: the connection stays open, nothing comes


@pytest.fixture
def server() -> Iterator[str]:
    yield from _serve(creates=True)


@pytest.fixture
def mute_server() -> Iterator[str]:
    yield from _serve(creates=False)


def _serve(creates: bool) -> Iterator[str]:
    quiet = threading.Event()
    handler = type("Handler", (_Stalling,), {"quiet": quiet, "creates": creates})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    serve(httpd)
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        quiet.set()
        httpd.shutdown()
        httpd.server_close()


async def busy(inputs: dict[str, Any]) -> dict[str, Any]:
    """A neighbour that holds the loop in steps of 0.2 s (blocking code of its own, short
    of its time-out)."""
    for _ in range(2):
        time.sleep(0.2)
        await asyncio.sleep(0)
    return {"final_response": "busy"}


def _run(url: str, timeout_s: float, neighbour: bool = False) -> tuple[Runner, dict[Any, Any]]:
    targets = [remote_target(RemoteGraph(url, "g"), name="served", import_path=f"remote:{url}")]
    if neighbour:
        targets.append(adapt(busy, name="busy", import_path="x:busy"))
    runner = Runner(
        targets=targets,
        evaluators=[],
        settings=RunSettings(timeout_s=timeout_s, concurrency=4),
    )
    results: dict[Any, Any] = {}

    def keep(item: Any, result: Any) -> None:
        results[(item.target.name, item.example.id)] = result

    data = [Example(f"e{i}", {"question": f"q{i}"}) for i in range(2)]
    asyncio.run(runner.run(runner.work(data), keep))
    return runner, results


def _stalled(error: str | None, url: str, timeout_s: float) -> None:
    assert error is not None
    assert error.startswith(f"TimeoutError: no answer within {timeout_s:g} s: ")
    assert f"the Agent Server at {url} sent nothing for " in error
    assert error.endswith(" s of the stream (graph 'g')")
    assert "blocked the event loop" not in error


def test_a_server_that_stops_mid_stream_is_named_as_the_stall(server: str) -> None:
    runner, results = _run(server, 0.6)
    for example in ("e0", "e1"):
        _stalled(results[("served", example)].error, server, 0.6)
    assert runner.stall_warnings() == []


def test_the_stall_is_the_servers_while_a_neighbour_holds_the_loop(server: str) -> None:
    runner, results = _run(server, 0.6, neighbour=True)
    for example in ("e0", "e1"):
        _stalled(results[("served", example)].error, server, 0.6)
        assert results[("busy", example)].error is None
    # the neighbour is named for its own blocking; the served graph never is
    assert all("'served'" not in warning for warning in runner.stall_warnings())


def test_the_client_is_made_off_the_event_loop(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langgraph_sdk.client

    made = langgraph_sdk.client.LangGraphClient
    on: list[bool] = []  # whether each client was made on the loop's thread

    def slow(*args: Any, **kwargs: Any) -> Any:
        on.append(threading.current_thread() is threading.main_thread())
        time.sleep(0.6)  # as loading TLS certificates can take on a loaded machine
        return made(*args, **kwargs)

    monkeypatch.setattr(langgraph_sdk.client, "LangGraphClient", slow)
    runner, results = _run(server, 2.0)
    assert on == [False]  # one client for the run's loop, made on a worker thread
    for example in ("e0", "e1"):
        _stalled(results[("served", example)].error, server, 2.0)
    assert runner.stall_warnings() == []


def test_agentevals_own_work_on_the_loop_is_not_blamed_on_the_target(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenteval_cli.trace.remote_events import EventReplay

    replayed = EventReplay.feed

    def slow(self: EventReplay, event: Any) -> None:
        time.sleep(0.3)  # replaying the server's events, on a loaded machine
        replayed(self, event)

    monkeypatch.setattr(EventReplay, "feed", slow)
    runner, results = _run(server, 0.6)
    for example in ("e0", "e1"):
        _stalled(results[("served", example)].error, server, 0.6)
    assert runner.stall_warnings() == []


def test_a_server_that_never_creates_the_thread_is_named(mute_server: str) -> None:
    runner, results = _run(mute_server, 0.5)
    for example in ("e0", "e1"):
        error = results[("served", example)].error
        assert re.fullmatch(
            r"TimeoutError: no answer within 0\.5 s: the Agent Server at "
            + re.escape(mute_server)
            + r" did not answer for \d+\.\d s",
            error,
        ), error
    assert runner.stall_warnings() == []


def test_a_served_graphs_call_that_keeps_the_loop_is_agentevals_not_the_targets() -> None:
    runner = Runner(targets=[], evaluators=[], settings=RunSettings())
    said: list[str] = []

    async def stuck() -> dict[str, Any]:  # where a stopped run's watchdog finds the loop
        said.append(runner._stuck(sys._getframe()))
        return {}

    async def calls() -> None:
        await within(stuck(), 1.0, None, Call("served", "e0", runs_here=False))
        await within(stuck(), 1.0, None, Call("local", "e0"))

    asyncio.run(calls())
    served, local = said
    assert served.startswith("agenteval's own code, calling target 'served' (example 'e0'), held")
    assert "not the target's code" in served and "async target" not in served
    assert local.startswith("target 'local' (example 'e0') held the event loop")
    assert local.endswith("(blocking code or a busy loop in an async target)")
