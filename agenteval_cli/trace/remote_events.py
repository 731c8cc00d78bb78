"""A served graph's run, recorded as an in-process run is: the callback events LangGraph's
Agent Server streams (``stream_mode="events"``, LangChain's ``astream_events`` v2 with
every run's id, its ancestors' ids and its metadata) are replayed into the run's callback
handlers, so the :class:`~agenteval_cli.trace.recorder.TraceRecorder` builds the same tree
of runs, and attribution and every evaluator read it unchanged.

The server sends values as JSON: messages, ``Command`` objects and chat results are made
objects again here (:func:`decoded`). One thing the events leave out is the id of the tool
call a tool run answers; the call is found among those its model asked for, by name and
arguments (:class:`_AskedCalls`), as LangChain passes it in-process.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agenteval_cli.core.nesting import Walk, run_walk

__all__ = ["EventReplay", "decoded"]

# LangChain's message types as their JSON form spells them (``BaseMessage.type``).
_MESSAGE_TYPES = frozenset(
    {"human", "ai", "system", "tool", "function", "chat", "developer", "AIMessageChunk"}
)
_COMMAND_KEYS = frozenset({"graph", "update", "resume", "goto"})
_ERROR_CALLBACKS = {
    "on_chain_start": "on_chain_error",
    "on_chat_model_start": "on_llm_error",
    "on_tool_start": "on_tool_error",
}


def decoded(value: Any, known: Mapping[str, Any] | None = None) -> Any:
    """A JSON value from the server with its messages and ``Command`` objects rebuilt; a
    message whose id is in ``known`` is that object. Walked on a list: a served graph's
    values nest as deep as it makes them."""
    return run_walk(_decoded(value, known))


def _decoded(value: Any, known: Mapping[str, Any] | None) -> Walk[Any]:
    if isinstance(value, list):
        items = []
        for item in value:
            items.append((yield _decoded(item, known)) if isinstance(item, list | dict) else item)
        return items
    if not isinstance(value, dict):
        return value
    if value.get("type") in _MESSAGE_TYPES and "content" in value:
        if known and value.get("id") in known:
            return known[value["id"]]
        from langchain_core.messages import messages_from_dict

        kind = "ai" if value["type"] == "AIMessageChunk" else value["type"]
        return messages_from_dict([{"type": kind, "data": value}])[0]
    if set(value) == _COMMAND_KEYS:
        from langgraph.types import Command

        return Command(
            graph=value["graph"],
            update=decoded(value["update"], known),
            resume=value["resume"],
            goto=value["goto"] if value["goto"] is not None else (),
        )
    rebuilt = {}
    for key, item in value.items():
        rebuilt[key] = (yield _decoded(item, known)) if isinstance(item, list | dict) else item
    return rebuilt


@dataclass(frozen=True)
class _OpenRun:
    error_callback: str  # the callback that ends it in error
    ancestors: frozenset[str]  # the ids of the runs above it
    call_id: str | None = None  # the tool call a tool run answers


class _AskedCalls:
    """The tool calls models asked for that no tool run has taken yet, oldest first."""

    def __init__(self) -> None:
        self._open: list[tuple[str, str, str]] = []  # (name, arguments as JSON, call id)

    def asked(self, message: Any) -> None:
        for call in getattr(message, "tool_calls", None) or ():
            if call.get("id"):
                self._open.append((call["name"], _canonical(call.get("args")), call["id"]))

    def take(self, name: str, args: Any) -> str | None:
        """The id of the call a tool run named ``name`` with ``args`` answers: the oldest
        open call with both the same, else the oldest with the same name."""
        wanted = _canonical(args)
        for matches in (
            lambda n, a: n == name and a == wanted,
            lambda n, a: n == name,
        ):
            for index, (called, arguments, call_id) in enumerate(self._open):
                if matches(called, arguments):
                    del self._open[index]
                    return call_id
        return None


def _canonical(args: Any) -> str:
    return json.dumps(args or {}, sort_keys=True, default=str)


class EventReplay:
    """Feeds one served run's events to callback handlers (a recorder, mostly), in order."""

    def __init__(self, handlers: Sequence[Any]) -> None:
        self._handlers = [h for h in handlers if hasattr(h, "on_chain_start")]
        self._asked = _AskedCalls()
        # The request's own messages as the root run got them, before the graph gave them
        # ids: in-process the graph sets the id on that very object, so the recorder knows
        # it again later; here the id is set on it when the message comes back with one,
        # and the message is that object wherever it comes again.
        self._unnamed: list[Any] = []
        self._own: dict[str, Any] = {}
        # Runs started and not ended, in start order: the events stream sends no error
        # event, so a run that raised is ended here, when a run above it ends (its error
        # caught there, as ToolNode catches a tool's) or the run stops (:meth:`stopped`).
        self._open: dict[str, _OpenRun] = {}

    def feed(self, event: Mapping[str, Any]) -> None:
        """One ``events`` part's data: ``{"event": "on_chain_start", "run_id": ..., ...}``."""
        kind = event.get("event")
        run_id = event.get("run_id")
        if not isinstance(kind, str) or not isinstance(run_id, str) or not self._handlers:
            return
        data = event.get("data") or {}
        ids = event.get("parent_ids") or []
        common: dict[str, Any] = {"run_id": UUID(run_id)}
        started = {
            **common,
            "parent_run_id": UUID(ids[-1]) if ids else None,
            "metadata": dict(event.get("metadata") or {}),
            "name": event.get("name"),
            "tags": list(event.get("tags") or []),
        }
        own = self._own
        if kind.endswith("_end"):
            self._open.pop(run_id, None)
            self._caught_under(run_id, data.get("output"))
        if kind == "on_chain_start":
            inputs = decoded(data.get("input"), own)
            if not ids:
                self._unnamed = [m for m in _messages_in(inputs) if m.id is None]
            elif self._unnamed:
                self._name_inputs(inputs)
            self._opened(run_id, kind, ids)
            self._send("on_chain_start", None, inputs, **started)
        elif kind == "on_chain_end":
            self._send("on_chain_end", decoded(data.get("output"), own), **common)
        elif kind == "on_chat_model_start":
            batches = (data.get("input") or {}).get("messages") or []
            messages = [decoded(batch, own) for batch in batches]
            self._opened(run_id, kind, ids)
            self._send("on_chat_model_start", None, messages, **started)
        elif kind == "on_chat_model_end":
            self._send("on_llm_end", _chat_result(decoded(data.get("output"), own)), **common)
        elif kind == "on_tool_start":
            name = str(event.get("name") or "tool")
            inputs = data.get("input")
            call_id = self._asked.take(name, inputs)
            self._opened(run_id, kind, ids, call_id)
            self._send(
                "on_tool_start",
                {"name": name},
                str(inputs),
                inputs=inputs if isinstance(inputs, dict) else None,
                tool_call_id=call_id,
                **started,
            )
        elif kind == "on_tool_end":
            self._send("on_tool_end", decoded(data.get("output"), own), **common)

    def stopped(self, error: BaseException) -> None:
        """End the runs still open with ``error``, innermost first, as LangChain does when
        ``interrupt()`` or an exception stops them in-process."""
        for run_id, run in reversed(list(self._open.items())):
            self._send(run.error_callback, error, run_id=UUID(run_id))
        self._open.clear()

    def _opened(
        self, run_id: str, kind: str, ids: Sequence[str], call_id: str | None = None
    ) -> None:
        self._open[run_id] = _OpenRun(_ERROR_CALLBACKS[kind], frozenset(ids), call_id)

    def _caught_under(self, ended: str, output: Any) -> None:
        """A tool run under one that ended, which has not ended itself but has an error
        result in that run's output, raised and was caught there (a ToolNode's
        ``handle_tool_errors``): ended with the error it raised. Other runs left open were
        stopped by ``interrupt()`` or the run's error, which :meth:`stopped` ends them with."""
        inside = [(i, run) for i, run in self._open.items() if ended in run.ancestors]
        if not inside:
            return
        results = {
            m.get("tool_call_id"): m
            for m in _message_dicts(output)
            if m.get("type") == "tool" and m.get("status") == "error"
        }
        for run_id, run in reversed(inside):
            result = results.get(run.call_id)
            if result is None:  # not caught: stopped by interrupt(), or the run's error
                continue
            del self._open[run_id]
            self._send(
                run.error_callback, _caught(str(result.get("content", ""))), run_id=UUID(run_id)
            )

    def _name_inputs(self, state: Any) -> None:
        """Put the root's own message objects back where they come again with an id, the
        id set on them: what the recorder sees in-process, where the state holds them."""
        raw = state.get("messages") if isinstance(state, dict) else None
        if not isinstance(raw, list):
            return
        for position, message in enumerate(raw):
            if getattr(message, "id", None) is None:
                continue
            for index, mine in enumerate(self._unnamed):
                if mine.type == message.type and mine.content == message.content:
                    mine.id = message.id
                    raw[position] = self._own[message.id] = mine
                    del self._unnamed[index]
                    break

    def _send(self, method: str, *args: Any, **kwargs: Any) -> None:
        if method == "on_llm_end":
            self._asked.asked(_message_of(args[0]))
        for handler in self._handlers:
            callback = getattr(handler, method, None)
            if callback is not None:
                callback(*args, **kwargs)


# ToolNode's answer for a tool that raised (``handle_tool_errors=True``): the exception's repr
_CAUGHT = re.compile(r"Error: (?P<kind>\w+)\((?P<args>.*)\)\n Please fix your mistakes\.", re.S)


def _caught(content: str) -> Exception:
    """The exception a ToolNode turned into ``content``, rebuilt (its class name and
    message) where its template says them; else one whose text is the content."""
    found = _CAUGHT.fullmatch(content)
    if found is not None:
        try:
            args = ast.literal_eval(f"({found['args']},)")
        except (ValueError, SyntaxError):
            args = None
        if isinstance(args, tuple):
            return type(found["kind"], (Exception,), {})(*args)
    return type("ToolError", (Exception,), {})(content)


def _message_dicts(value: Any) -> list[dict[str, Any]]:
    """The messages (as the server sends them) in a run's output: a state, an update of
    one per node, a list, a Command's update."""
    found: list[dict[str, Any]] = []
    stack = [value]  # walked on a list, in order: values nest as deep as a graph makes them
    while stack:
        current = stack.pop()
        if isinstance(current, list):
            stack.extend(reversed(current))
        elif isinstance(current, dict):
            if current.get("type") in _MESSAGE_TYPES and "content" in current:
                found.append(current)
            else:
                stack.extend(reversed(list(current.values())))
    return found


def _messages_in(state: Any) -> list[Any]:
    from langchain_core.messages import BaseMessage

    raw = state.get("messages") if isinstance(state, dict) else None
    items = raw if isinstance(raw, list) else [raw]
    return [m for m in items if isinstance(m, BaseMessage)]


def _chat_result(output: Any) -> Any:
    """The chat model's reply as the ``LLMResult`` ``on_llm_end`` is given in-process."""
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, LLMResult

    if not isinstance(output, AIMessage):
        return LLMResult(generations=[[]])
    return LLMResult(generations=[[ChatGeneration(message=output)]])


def _message_of(result: Any) -> Any:
    for generations in getattr(result, "generations", None) or ():
        for generation in generations:
            return getattr(generation, "message", None)
    return None
