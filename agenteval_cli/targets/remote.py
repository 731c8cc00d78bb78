"""A graph served by LangGraph's Agent Server (``langgraph dev``, ``langgraph up``, a
LangSmith deployment) as a target: each example runs on a fresh thread of the server, a
conversation on one thread, through ``langgraph_sdk``; the server's streamed events are
replayed into the call's recorder (:mod:`agenteval_cli.trace.remote_events`), so its trace
is the one the same graph run in-process gives.

A header's value comes from the environment and is a secret: the loader remembers it for
redaction (:func:`agenteval_cli.core.redact.remember`); it is never part of the target's
description.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.interrupts import INTERRUPT_KEY
from agenteval_cli.data.conversations import Resume, TurnInput
from agenteval_cli.targets.adapt import Target, graph_state, input_messages
from agenteval_cli.targets.configs import THREAD_ID, RowConfig
from agenteval_cli.targets.inputs import InputBuilder, input_builder, template_fields
from agenteval_cli.targets.outputs import graph_outputs
from agenteval_cli.targets.session import Session
from agenteval_cli.targets.waits import waiting_on

__all__ = [
    "RemoteGraph",
    "RemoteGraphError",
    "remote_target",
    "served_by",
    "served_coordinators",
]

# What the server streams: the callback events the trace is built from, and the state after
# each step (the last one is the run's result, its pending interrupts included).
_STREAM_MODES = ["events", "values"]


# The SDK's time limits: connecting, and waiting for the next part of a streamed run.
_CONNECT_S, _READ_S = 5.0, 300.0
# A call cut short this soon after the server's last event was no stall of the server's.
_QUIET_S = 0.1
# What every HTTP client sends: not the graph's headers (nor secrets).
_CLIENT_HEADERS = frozenset({"user-agent", "accept", "accept-encoding", "connection"})


class RemoteGraphError(Exception):
    """The server could not be reached, refused the request, or the run failed on it."""


@dataclass(frozen=True)
class RemoteGraph:
    """Where the graph is served: the server's URL, the graph's id (or an assistant's), and
    the HTTP headers every request carries (their values are secrets)."""

    url: str
    graph: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


def served_by(obj: Any) -> RemoteGraph | None:
    """Where a LangGraph ``RemoteGraph`` object (``langgraph.pregel.remote``) sends its
    runs: its client's URL and headers and its graph (assistant) id; None for anything else.
    A target that names one is run as a ``remote:`` target is, so it is traced."""
    module = sys.modules.get("langgraph.pregel.remote")
    if module is None or not isinstance(obj, module.RemoteGraph):
        return None
    client = obj.client or obj.sync_client
    http = getattr(getattr(client, "http", None), "client", None)
    if http is None:
        return None
    headers = {k: v for k, v in http.headers.items() if k.lower() not in _CLIENT_HEADERS}
    return RemoteGraph(str(http.base_url).rstrip("/"), str(obj.assistant_id), headers)


def remote_target(
    remote: RemoteGraph,
    *,
    name: str,
    import_path: str,
    input_key: str = "question",
    initial_state: dict[str, Any] | None = None,
    input: Mapping[str, Any] | Callable[..., Any] | None = None,
    output: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Target:
    """The target that sends each example (or turn) to the served graph; ``import_path``
    says what it is in the experiment's record (its URL and graph id, never a header)."""
    import langgraph_sdk  # noqa: F401  (imported now, not on the run's event loop)

    import agenteval_cli.trace.remote_events  # noqa: F401

    build = None if input is None else input_builder(input)
    row_config = RowConfig(dict(config or {}))
    runner = _Runner(remote, input_key, dict(initial_state or {}), build, output, row_config)
    return Target(
        name,
        import_path,
        "remote",
        runner.call,
        input_fields=(input_key,) if input is None else template_fields(input),
        input_key=input_key,
        turn_call=runner.turn,
        keeps_state=True,  # the server keeps every thread's state
        config_fields=row_config.fields,
        runs_here=False,  # the graph runs on the server
    )


@dataclass
class _Runner:
    remote: RemoteGraph
    input_key: str
    initial_state: dict[str, Any]
    build: InputBuilder | None
    output: str | None
    config: RowConfig
    clients: _Clients = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.clients = _Clients(self.remote)

    async def call(self, inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        state = await graph_state(inputs, self.input_key, self.initial_state, self.build)
        config = self.config.filled(inputs)
        own = config.get("configurable", {}).get(THREAD_ID)
        client = await self.clients.get()
        if own is None:
            thread = await _checked(self.remote, client.threads.create())
        else:  # the row's own thread, which may hold what earlier calls left
            thread = await _checked(
                self.remote, client.threads.create(thread_id=str(own), if_exists="do_nothing")
            )
        final = await self._run(client, thread["thread_id"], callbacks, config, input=state)
        return graph_outputs(final, self.output, given=input_messages(state))

    async def turn(
        self, inputs: TurnInput, session: Session, callbacks: list[Any]
    ) -> dict[str, Any]:
        """One turn on the conversation's thread: the thread holds what came before, so
        only the new turn (or the resume) is sent."""
        first = session.turns == 0
        config = self.config.for_turn(session, inputs)
        client = await self.clients.get()
        if first:
            await _checked(
                self.remote,
                client.threads.create(thread_id=session.thread_id, if_exists="do_nothing"),
            )
        if isinstance(inputs, Resume):
            given = list(session.messages)
            final = await self._run(
                client, session.thread_id, callbacks, config, command={"resume": inputs.value}
            )
        else:
            value = await graph_state(
                inputs, self.input_key, self.initial_state, self.build, initial=first
            )
            given = [*session.messages, *input_messages(value)]
            final = await self._run(client, session.thread_id, callbacks, config, input=value)
        outputs = graph_outputs(final, self.output, given=given)
        returned = final.get("messages") if isinstance(final, dict) else None
        if isinstance(returned, list):
            session.messages = list(returned)
        return outputs

    async def _run(
        self,
        client: Any,
        thread_id: str,
        callbacks: list[Any],
        config: dict[str, Any],
        **sent: Any,
    ) -> Any:
        """Stream one run with the row's ``config`` (its thread is the run's), replaying its
        events into ``callbacks``; its final state."""
        from agenteval_cli.trace.remote_events import EventReplay, decoded

        replay = EventReplay(callbacks)
        final: Any = None
        stream = client.runs.stream(
            thread_id,
            self.remote.graph,
            stream_mode=_STREAM_MODES,
            config=_without_thread(config) or None,
            on_disconnect="cancel",
            **sent,
        )
        failed: Any = None
        try:
            with waiting_on(self._silent) as waiting:
                async for part in stream:
                    if part.event == "events" and isinstance(part.data, dict):
                        replay.feed(part.data)
                    elif part.event == "values":
                        final = part.data
                    elif part.event == "error":
                        failed = part.data
                        break
                    waiting.heard()  # once it is read: the wait is on the server again
        except Exception as exc:
            failure = _failure(self.remote, exc)
            if failure is exc:
                raise
            raise failure from exc
        finally:
            await stream.aclose()  # the response ends here, not when the generator is freed
        if failed is not None:
            replay.stopped(_raised(failed))
            raise RemoteGraphError(_run_failure(self.remote, failed))
        if final is None:
            raise RemoteGraphError(
                f"the run of {self.remote.graph!r} at {self.remote.url} sent no state"
            )
        if isinstance(final, dict) and final.get(INTERRUPT_KEY):
            from langgraph.errors import GraphInterrupt

            replay.stopped(GraphInterrupt(final[INTERRUPT_KEY]))
        return decoded(final)

    def _silent(self, seconds: float) -> str:
        """What a call cut short while streaming was waiting on: the server's next event."""
        where, graph = f"the Agent Server at {self.remote.url}", f"graph {self.remote.graph!r}"
        if seconds < _QUIET_S:
            return f"{where} was still streaming the run ({graph})"
        return f"{where} sent nothing for {seconds:.1f} s of the stream ({graph})"


def served_coordinators(remote: RemoteGraph) -> list[str]:
    """The agents of the served graph that coordinate, read off the drawing the server
    gives of it (``GET /assistants/{graph}/graph?xray=true``), as they are off the graph
    itself in-process; none when the server cannot be asked now (its calls will say why)."""
    import httpx
    from langgraph_sdk.client import SyncLangGraphClient

    from agenteval_cli.trace.attribution import drawn_coordinators

    client = SyncLangGraphClient(
        httpx.Client(
            base_url=remote.url,
            transport=httpx.HTTPTransport(retries=0),
            timeout=httpx.Timeout(_CONNECT_S, read=_READ_S),
            headers=dict(remote.headers),
        )
    )
    try:
        drawing = client.assistants.get_graph(remote.graph, xray=True)
    except Exception:
        return []
    finally:
        client.close()
    return drawn_coordinators(drawing) if isinstance(drawing, dict) else []


class _Clients:
    """One SDK client per event loop the target is called on (its connections belong to
    that loop), made once, on a worker thread: building one loads TLS certificates, which
    would hold the loop, and every call in flight with it.
    Made as ``langgraph_sdk.get_client`` makes one, but with the spec's headers only (never
    an API key the environment happens to hold) and no retries of its own: a refused
    connection is the call's error at once, which the spec's ``retries:`` may retry."""

    def __init__(self, remote: RemoteGraph) -> None:
        self._remote = remote
        self._made: tuple[Any, asyncio.Future[Any]] | None = None  # (the loop, its client)

    async def get(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._made is None or self._made[0] is not loop:
            self._made = (loop, loop.run_in_executor(None, _client, self._remote))
        # shielded: a call timed out meanwhile leaves the client to the calls that follow
        return await asyncio.shield(self._made[1])


def _client(remote: RemoteGraph) -> Any:
    """The SDK's async client for ``remote`` (made off the event loop)."""
    import httpx
    from langgraph_sdk.client import LangGraphClient

    return LangGraphClient(
        httpx.AsyncClient(
            base_url=remote.url,
            transport=httpx.AsyncHTTPTransport(retries=0),
            timeout=httpx.Timeout(_CONNECT_S, read=_READ_S),
            headers=dict(remote.headers),
        )
    )


async def _checked(remote: RemoteGraph, request: Any) -> Any:
    """The answer to ``request``; a time-out meanwhile names the server's silence."""

    def silent(seconds: float) -> str:
        return f"the Agent Server at {remote.url} did not answer for {seconds:.1f} s"

    try:
        with waiting_on(silent):
            return await request
    except Exception as exc:
        raise _failure(remote, exc) from exc


def _failure(remote: RemoteGraph, exc: Exception) -> Exception:
    """One line saying what went wrong with the server, or ``exc`` itself when it is not
    the server's (the graph's own errors arrive as the stream's ``error`` event)."""
    import httpx

    where = f"the LangGraph server at {remote.url}"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, httpx.HTTPStatusError) and status is not None:
        detail = _detail(exc)
        if status == 404:
            path = exc.request.url.path
            return RemoteGraphError(
                f"{where} answered HTTP 404 ({detail}) for {path}: check the server's URL "
                "and the graph id"
            )
        if status in (401, 403):
            return RemoteGraphError(
                f"{where} refused the request with HTTP {status} ({detail}): check the "
                "headers the target sends"
            )
        return RemoteGraphError(f"{where} answered HTTP {status}: {detail}")
    if isinstance(exc, httpx.TransportError):
        reason = str(exc) or type(exc).__name__
        return RemoteGraphError(f"cannot reach {where}: {reason}")
    return exc


def _detail(exc: Exception) -> str:
    """The server's reason, on one line."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        text = str(body["detail"])
    else:
        text = str(getattr(exc, "message", None) or exc)
    return " ".join(text.split())


def _raised(data: Any) -> Exception:
    """The exception the run's ``error`` event names, as the graph raised it (its class
    name and message), to end the runs it stopped with, as in-process."""
    kind = data.get("error") if isinstance(data, dict) else None
    message = data.get("message") if isinstance(data, dict) else data
    name = kind if isinstance(kind, str) and kind.isidentifier() else "RemoteGraphError"
    return type(name, (Exception,), {})(str(message or ""))


def _run_failure(remote: RemoteGraph, data: Any) -> str:
    """The run's ``error`` event (``{"error": "ValueError", "message": "..."}``) as a line."""
    if isinstance(data, dict):
        kind, message = data.get("error"), data.get("message")
        text = ": ".join(str(part) for part in (kind, message) if part)
    else:
        text = str(data)
    text = " ".join(text.split())
    return f"the graph {remote.graph!r} at {remote.url} failed: {text or 'no reason given'}"


def _without_thread(config: dict[str, Any]) -> dict[str, Any]:
    """The config sent with a run: the thread is the run's own, not a configurable."""
    configurable = {k: v for k, v in config.get("configurable", {}).items() if k != THREAD_ID}
    rest = {k: v for k, v in config.items() if k != "configurable"}
    return {**rest, "configurable": configurable} if configurable else rest
