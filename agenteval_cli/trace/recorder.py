"""Record what one target request did, from the outside, through LangChain callbacks.

Users' graphs stay untouched: a :class:`TraceRecorder` is passed in
``config={"callbacks": [...]}``, or, for plain-function targets that call ``graph.invoke``
themselves, injected by :func:`capture` through a configure hook (the mechanism behind
``langchain_core.callbacks.get_usage_metadata_callback``).

The recorder keeps the tree of runs it saw; :mod:`agenteval_cli.trace.attribution` reads agents,
their order and the handoffs between them off that tree when the trace is taken.
A tool call's status comes from its run (an error raised, a ToolMessage with
``status="error"``); what a call that no tool run answered was (structured output, a handoff
its node acted on) is read by :mod:`agenteval_cli.trace.unran`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook

from agenteval_cli.core.records import (
    ERROR,
    HANDOFF,
    NOT_RUN,
    TOOL,
    Handoff,
    ModelCall,
    ToolCall,
    Trace,
)
from agenteval_cli.core.safe_text import message_of
from agenteval_cli.trace.attribution import (
    Attribution,
    RunNode,
    attribute,
    command_destinations,
    tool_kind,
)
from agenteval_cli.trace.blind_spots import (
    ModelSeen,
    ToolSeen,
    blind_spot,
    model_prompt,
    model_tools,
    state_keys_set,
)
from agenteval_cli.trace.conversation import Conversation, state_messages, update_messages
from agenteval_cli.trace.declarations import ActiveAgent, active_value, skills_loaded, updated_value
from agenteval_cli.trace.handoff_inputs import inputs_text, last_human
from agenteval_cli.trace.routing_tools import ends_turn, name_tool_handoffs, turn_passing_tools
from agenteval_cli.trace.unran import (
    StructuredOutput,
    same_tool_as_ran,
    sets_structured_response,
    task_of,
    unran_verdict,
)
from agenteval_cli.trace.unran import named_agent as _named_agent
from agenteval_cli.trace.usage import USAGE_AS_GIVEN, read_token_usage, read_usage

__all__ = ["TraceRecorder", "agent_from_metadata", "capture", "error_text"]

_Record = TypeVar("_Record", ModelCall, ToolCall)
_DESTINATION_KEY = "__handoff_destination"  # metadata of langgraph-supervisor/swarm handoff tools
# ChatOpenAI's providers (AzureChatOpenAI's too): a stream reports usage only when asked
_STREAM_USAGE_OFF = frozenset({"openai", "azure"})
_STREAM_USAGE_HINT = (
    "streamed without usage: set stream_usage=True on ChatOpenAI "
    "(off by default with a custom base_url)"
)

_current: ContextVar[TraceRecorder | None] = ContextVar("agenteval_recorder", default=None)
# Registered once, at import: every callback manager configured while the variable is set
# gets the recorder (inheritably), unless that very object is already among its handlers.
register_configure_hook(_current, inheritable=True)


@contextmanager
def capture(
    recorder: TraceRecorder | None = None,
    *,
    coordinators: Sequence[str] = (),
    own_agent: str | None = None,
    active_agent: ActiveAgent | None = None,
    skill_tools: Mapping[str, str | None] | None = None,
) -> Iterator[TraceRecorder]:
    """Record every LangChain/LangGraph run started inside the block, config or not.

    Works in sync and async code (``with capture() as rec: await target(inputs)``) and
    follows the context into asyncio tasks and ``asyncio.to_thread``; during a run,
    :mod:`agenteval_cli.trace.threads` carries it into executors and threads as well. The block's
    wall time and any exception escaping it end up in ``rec.trace()``. ``own_agent`` (the
    target's name) names the target's own agent where its graph gives it no name.
    """
    recorder = recorder or TraceRecorder(
        coordinators=coordinators,
        own_agent=own_agent,
        active_agent=active_agent,
        skill_tools=skill_tools,
    )
    token = _current.set(recorder)
    recorder.start()
    try:
        yield recorder
    except BaseException as exc:
        recorder.finish(exc)
        raise
    else:
        recorder.finish()
    finally:
        _current.reset(token)


def agent_from_metadata(metadata: dict[str, Any] | None) -> str | None:
    """The top-level graph node an event ran under, or ``None`` outside LangGraph."""
    metadata = metadata or {}
    namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns")
    if isinstance(namespace, str) and namespace:
        return namespace.partition("|")[0].partition(":")[0]
    node = metadata.get("langgraph_node")
    return node if isinstance(node, str) and node else None


def error_text(error: BaseException | str) -> str:
    """``"TimeoutError: ..."``, or just the type name when the exception has no message."""
    if isinstance(error, str):
        return error
    message = message_of(error)  # never raises, even when the exception's __str__ does
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


@dataclass(slots=True)
class _ModelRun:
    """A model run as its start gave it: what only some traces need (its schema, system
    prompt and tools) is read from what it was given when the trace asks."""

    call: ModelCall
    started: float
    named: bool  # the model name was declared (metadata, params), not the class name
    run: RunNode
    inputs: list[BaseMessage] | None = None  # the messages it was given (LangChain's list)
    params: Any = None  # its invocation parameters (the tools bound to it)
    options: Any = None  # its options and metadata (a structured-output schema asked for)
    metadata: Any = None

    @property
    def structured(self) -> StructuredOutput | None:
        """The structured-output schema it asked for, if any."""
        return StructuredOutput.of(self.options) or StructuredOutput.of(self.metadata)

    def seen(self) -> ModelSeen:
        """Its system prompt and the tools bound to it."""
        prompt = model_prompt(self.inputs) if self.inputs else None
        return ModelSeen(self.run, prompt, model_tools(self.params))


@dataclass
class _ToolRun:
    call: ToolCall
    call_id: str | None
    origin: RunNode | None  # the model run that asked for it, or the run that wrote it
    run: RunNode | None = None  # its own run, once on_tool_start was seen
    keys: dict[str, str] | None = None  # state keys its Command set, messages left out
    ends: bool = False  # its Command went to the end of the graph


class TraceRecorder(BaseCallbackHandler):
    """Callback handler that records one target request into a :class:`Trace`.

    Use one recorder per request. Its events may arrive from several threads (a sync graph
    with parallel branches), so every handler runs under one lock.
    """

    run_inline = True  # async runs call us in place instead of hopping to a thread pool
    # LangChain reads these for every event it dispatches: plain attributes, not the base
    # class's properties, and the events nothing here records are not sent at all.
    ignore_llm = ignore_chain = ignore_chat_model = ignore_agent = False  # agent: tools
    ignore_retry = ignore_retriever = ignore_custom_event = True

    def __init__(
        self,
        *,
        coordinators: Sequence[str] = (),
        own_agent: str | None = None,
        active_agent: ActiveAgent | None = None,
        skill_tools: Mapping[str, str | None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        # Handlers that must see each event after the recorder (a fault injector, which
        # raises): the call's callbacks are the recorder and these, in order.
        self.followers: list[BaseCallbackHandler] = []
        # Declared by the target: the state key naming the agent at work, the skill tools.
        self._active = active_agent
        self._skill_tools = dict(skill_tools) if skill_tools is not None else None
        self._conversation = Conversation()
        self._coordinators = tuple(coordinators)  # declared for the target, or found in it
        self._own_agent = own_agent  # the target's own agent, when its graph names none
        # Runs are keyed by their UUID's integer: a UUID hashes and compares in Python code.
        self._runs: dict[int, RunNode] = {}  # every run seen
        self._roots: list[RunNode] = []  # runs whose parent we never saw: the request's entry
        self._seq = 0  # events so far: the order runs started and ended in
        self._open_models: dict[int, _ModelRun] = {}
        self._models: list[_ModelRun] = []
        self._tools: list[_ToolRun] = []
        self._tools_by_call_id: dict[str, _ToolRun] = {}
        self._open_tools: dict[int, _ToolRun] = {}
        self._structured_answers: set[str] = set()  # call ids the graph answered as output
        self._root_error: str | None = None
        self._error: str | None = None
        self._span: list[float | None] = [None, None]  # request start and end
        # Until start() is called, events time the request: the first and the last one.
        self._untimed = True
        self._events: list[float | None] = [None, None]
        # clock() + this is the time since the epoch: calls are timed by the one and dated
        # by the other. The clock is perf_counter(), or the recorded times a replay of a
        # recorded trace gives (seconds since the epoch already)
        self._clock = time.perf_counter if clock is None else clock
        self._epoch = time.time() - time.perf_counter() if clock is None else 0.0

    def start(self, at: float | None = None) -> None:
        """Mark the start of the request (otherwise the first event's time is used); ``at``
        is a time of the recorder's clock when the request began before the recorder."""
        self._span[0] = self._clock() if at is None else at
        self._untimed = False

    def finish(self, error: BaseException | str | None = None) -> None:
        """Mark the end of the request and, if it failed, why."""
        self._span[1] = self._clock()
        if error is not None:
            self._error = error_text(error)

    # -- chains: request roots, graph structure, state updates --------------------------
    # LangChain passes run_id, parent_run_id, metadata etc. by keyword; naming them in the
    # signature spares a dictionary lookup each, on events that arrive dozens per call.

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        **_: Any,
    ) -> None:
        lock = self._lock
        lock.acquire()  # not ``with``: half the cost, on the commonest events
        try:
            node = self._register(run_id.int, parent_run_id, metadata, "chain", name or "")
            active = self._active
            if active is not None:
                node.active = active_value(inputs, active.key)
                if node.active is None and node.is_task:  # the state does not say (yet)
                    node.active = active.default
            if node.parent is None:  # the request's input: prior turns are history
                self._conversation.merge(state_messages(inputs))
        finally:
            lock.release()

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **_: Any) -> None:
        lock = self._lock
        lock.acquire()
        try:
            if self._untimed:
                self._touch()
            node = self._runs.get(run_id.int)
            if node is not None:
                self._seq = node.end = self._seq + 1
                if node.parent is None:
                    self._root_error = None
                if type(outputs) is dict:  # a state or an update: the usual case
                    if "messages" in outputs:  # nothing to merge otherwise
                        self._chain_messages(outputs, node, update_messages(outputs))
                    return
                node.goto = command_destinations(outputs)
            self._chain_messages(outputs, node, state_messages(outputs))
        finally:
            lock.release()

    def _chain_messages(
        self, outputs: Any, node: RunNode | None, messages: Sequence[BaseMessage]
    ) -> None:
        """Merge the messages a chain ended with (a state, an update, Commands)."""
        if messages:  # nothing to merge otherwise
            added = self._absorb(messages, node)
            if added and sets_structured_response(outputs):
                # create_agent's ToolStrategy: the ToolMessage it wrote for its schema call
                self._structured_answers.update(
                    m.tool_call_id for m in added if isinstance(m, ToolMessage)
                )

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        lock = self._lock
        lock.acquire()
        try:
            if self._untimed:
                self._touch()
            node = self._end(run_id.int)
            if node is None:
                return
            bubbling = _bubbling(error)
            if node.parent is None and not bubbling:
                self._root_error = error_text(error)
            elif bubbling:  # a Command to a parent graph
                node.goto = command_destinations(getattr(error, "args", ())[:1])
        finally:
            lock.release()

    # -- chat models -------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        invocation_params: Any = None,
        name: str | None = None,
        options: Any = None,
        **_: Any,
    ) -> None:
        lock = self._lock
        lock.acquire()
        try:
            model = _declared_model(metadata, invocation_params)
            named = model is not None
            model = model or _class_name(serialized, name)
            node = self._register(run_id.int, parent_run_id, metadata, "model", model)
            call = ModelCall(agent=model, model=model, provider=_provider(metadata))
            inputs = messages[0] if messages else None
            run = _ModelRun(
                call, self._clock(), named, node, inputs, invocation_params, options, metadata
            )
            call.started_at = self._epoch + run.started
            self._open_models[run_id.int] = run
            self._models.append(run)
            for batch in messages:
                self._conversation.merge(batch)
        finally:
            lock.release()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **_: Any) -> None:
        lock = self._lock
        lock.acquire()
        try:
            if self._untimed:
                self._touch()
            self._end(run_id.int)
            run = self._open_models.pop(run_id.int, None)
            if run is None:
                return
            run.call.latency_s = self._clock() - run.started
            message = _output_message(response)
            _read_usage(run.call, message, response)
            if message is None:
                return
            reported = message.response_metadata.get("model_name")
            if not run.named and isinstance(reported, str) and reported:
                run.call.model = run.run.name = reported
            self._conversation.merge([message], fresh=[message])
            self._add_tool_calls(message, run.run)
        finally:
            lock.release()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        with self._lock:
            if self._untimed:
                self._touch()
            self._end(run_id.int)
            run = self._open_models.pop(run_id.int, None)
            if run is not None:  # it answered nothing: no call of the agent's, no tokens
                run.call.latency_s = self._clock() - run.started
                run.call.input_tokens = run.call.output_tokens = None
                run.call.failed = True

    # -- tools -------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        lock = self._lock
        lock.acquire()
        try:
            name = (serialized or {}).get("name") or kw.get("name") or "tool"
            node = self._register(run_id.int, parent_run_id, metadata, "tool", name)
            call_id = kw.get("tool_call_id")
            tool = self._tools_by_call_id.get(call_id) if call_id else None
            if tool is None or tool.run is not None:  # no model asked for it (or it ran)
                inputs = kw.get("inputs")
                args = dict(inputs) if isinstance(inputs, dict) else {"input": input_str}
                # a node running its model's call itself, without the call's id: that call
                tool = self._asked_in_task(node, name, args) or self._new_tool(
                    ToolCall(agent=name, name=name, args=args), call_id, None
                )
            tool.run = node
            tool.call.started_at = self._epoch + self._clock()
            if tool.origin is not None and tool.origin.kind == "model":
                node.turn = tool.origin.seq  # one model turn's calls run side by side
                if self._active is not None:  # a tool works for the agent that asked
                    node.active = _active_of(tool.origin)
            destination = (metadata or {}).get(_DESTINATION_KEY)
            if isinstance(destination, str):
                node.destination = destination
            self._open_tools[run_id.int] = tool
        finally:
            lock.release()

    def on_tool_end(self, output: Any, *, run_id: UUID, **_: Any) -> None:
        lock = self._lock
        lock.acquire()
        try:
            if self._untimed:
                self._touch()
            node = self._end(run_id.int)
            if node is not None:
                node.goto = command_destinations(output)
                if self._active is not None:
                    self._state_handoff(node, output, self._active.key)
            tool = self._open_tools.pop(run_id.int, None)
            if tool is not None:
                tool.call.ended_at = self._epoch + self._clock()
                tool.keys = state_keys_set(output)
                tool.ends = ends_turn(output)
            # A ToolMessage, or a Command (handoff tools) whose update holds the state's
            # messages plus this call's ToolMessage, or any other value.
            messages = [output] if isinstance(output, BaseMessage) else state_messages(output)
            results = [m for m in messages if isinstance(m, ToolMessage)]
            call_id = tool.call_id if tool else None
            mine = [m for m in results if m.tool_call_id == call_id][-1:] or results[-1:]
            self._absorb(messages, node, fresh=mine)
            if tool is not None and mine:
                tool.call.output = str(mine[0].text)
                if mine[0].status == "error":  # a tool that reports its failure
                    tool.call.status = ERROR
            elif tool is not None and output is not None:
                tool.call.output = output if isinstance(output, str) else str(output)
        finally:
            lock.release()

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        with self._lock:
            if self._untimed:
                self._touch()
            node = self._end(run_id.int)
            tool = self._open_tools.pop(run_id.int, None)
            if tool is not None:
                tool.call.ended_at = self._epoch + self._clock()
            if tool is not None and _pausing(error):  # interrupt() in the tool: no answer yet
                tool.call.status = NOT_RUN
            elif node is not None and _bubbling(error):  # a handoff tool's Command
                node.goto = command_destinations(getattr(error, "args", ())[:1])
                if tool is not None:
                    command = next(iter(getattr(error, "args", ())), None)
                    tool.keys, tool.ends = state_keys_set(command), ends_turn(command)
            elif tool is not None:
                tool.call.output = error_text(error)
                tool.call.status = ERROR

    def saw(self, run_id: UUID) -> bool:
        """Whether the run's start reached the recorder."""
        with self._lock:
            return run_id.int in self._runs

    def injected(self, run_id: UUID, fault: str, error: BaseException) -> None:
        """The run just started failed by an injected ``fault``: it ends here, marked, and
        no error event follows (LangChain sends none for a start that raised)."""
        with self._lock:
            self._end(run_id.int)
            now = self._clock()
            tool = self._open_tools.pop(run_id.int, None)
            if tool is not None:
                tool.call.ended_at = self._epoch + now
                tool.call.output = error_text(error)
                tool.call.status = ERROR
                tool.call.injected = fault
            run = self._open_models.pop(run_id.int, None)
            if run is not None:  # it never reached the model: no tokens spent
                run.call.latency_s = now - run.started
                run.call.input_tokens = run.call.output_tokens = 0
                run.call.failed = True
                run.call.injected = fault

    # -- the result --------------------------------------------------------------------

    @property
    def saw_runs(self) -> bool:
        """Whether any LangChain run (a chain, a graph node, a model, a tool) was seen."""
        return bool(self._runs)

    def trace(self) -> Trace:
        """A copy of everything recorded so far; calls still in flight have unknown tokens."""
        with self._lock:
            now = self._clock()
            start, end = self._span if not self._untimed else self._events
            if end is None and start is not None:  # still running
                end = now
            latency = end - start if start is not None and end is not None else 0.0
            started_at = None if start is None else self._epoch + start
            if not self._runs:  # no LangChain run at all: nothing to assemble
                return Trace(
                    latency_s=latency, error=self._error or self._root_error, started_at=started_at
                )
            for run in self._open_models.values():  # cut off by a timeout or an error
                run.call.latency_s = now - run.started
                run.call.input_tokens = run.call.output_tokens = None
                run.call.cut_off = True
            found = attribute(self._roots, self._coordinators, self._own_agent)
            paths = found.paths
            model_calls = []
            for run in self._models:
                path = paths.get(id(run.run)) or [run.call.model]
                model_calls.append(_copy(run.call, agent=path[-1], path=path))
            tool_calls = self._tool_calls(found, model_calls) if self._tools else []
            if found.handoffs:
                _name_returns(found.handoffs, tool_calls)
            same_tool_as_ran(tool_calls)  # after the returns are named: it changes kinds
            request = _received(found.handoffs, found.receivers, self._models)
            skills = None
            if self._skill_tools is not None:
                skills = skills_loaded(tool_calls, self._skill_tools)
            return Trace(
                skills=skills,
                agent_path=found.agent_path,
                handoffs=found.handoffs,
                tool_calls=tool_calls,
                model_calls=model_calls,
                messages=self._conversation.openai_messages(),
                latency_s=latency,
                error=self._error or self._root_error,
                coordinators=found.coordinators,
                started_at=started_at,
                unattributed=self._unattributed(found) if self._tools else None,
                request=request,
            )

    def _tool_calls(self, found: Attribution, model_calls: list[ModelCall]) -> list[ToolCall]:
        """The trace's copies of the tool calls, each of the kind it turned out to be; the
        handoffs a tool passing the turn made are named after it."""
        paths = found.paths
        ran = [t.run for t in self._tools if t.run is not None]
        passed = (
            turn_passing_tools(ran, [run.run for run in self._models], paths, found.coordinators)
            if ran
            else {}
        )
        # What only some calls need, built when one does: the ToolMessages of the
        # conversation (for calls no tool run answered), the agents the model calls ran as.
        answers: dict[str, ToolMessage] | None = None
        agents: set[str] | None = None
        tool_calls: list[ToolCall] = []
        passing: list[ToolCall] = []
        for tool in self._tools:
            call, run, origin = tool.call, tool.run, tool.origin
            if call.output is None:
                if answers is None:
                    answers = self._conversation.tool_messages()
                answer = answers.get(tool.call_id)  # type: ignore[arg-type]
                if answer is not None:
                    call.output = str(answer.text)
            where = run if run is not None else origin
            path = (paths.get(id(where)) if where is not None else None) or [call.agent]
            synthesized = None
            if run is None and (origin is None or origin.kind != "model"):
                if agents is None:
                    agents = {name for model_call in model_calls for name in model_call.path}
                synthesized = _named_agent(call.name, agents)
            kind, target = tool_kind(id(run), found, synthesized)
            if kind == TOOL and tool.ends:  # it ended the turn: routing
                kind = HANDOFF
            elif kind == TOOL and id(run) in passed:  # its agent stopped, another ran
                kind, target = HANDOFF, passed[id(run)]
            status = call.status
            if run is None and origin is not None and origin.kind == "model":
                if answers is None:
                    answers = self._conversation.tool_messages()
                kind, target, status = self._unran(tool, origin, answers, found)
            copied = _copy(
                call,
                args=dict(call.args),
                agent=path[-1],
                path=path,
                kind=kind,
                target=target,
                status=status,
            )
            tool_calls.append(copied)
            if run is not None and id(run) in passed:
                passing.append(copied)
        if passing:
            name_tool_handoffs(found.handoffs, passing)
        return tool_calls

    def _unran(
        self,
        tool: _ToolRun,
        origin: RunNode,
        answers: dict[str, ToolMessage],
        found: Attribution,
    ) -> tuple[str, str | None, str]:
        """What a call the model run ``origin`` asked for, and no tool run answered, was."""
        model = next((run for run in self._models if run.run is origin), None)
        answered = self._structured_answers
        return unran_verdict(
            tool.call,
            origin,
            answers.get(tool.call_id) if tool.call_id else None,
            structured=model.structured if model is not None else None,
            output_names={t.call.name for t in self._tools if t.call_id in answered},
            aliases=found.aliases,
            accepted=tool.call_id in answered,
        )

    def _unattributed(self, found: Attribution) -> str | None:
        """Why the request's agents cannot be told apart, if a tool run shows they switched
        unseen (see :mod:`agenteval_cli.trace.blind_spots`)."""
        seen = [
            ToolSeen(tool.call.name, tool.run, tool.origin, tool.keys or {})
            for tool in self._tools
            if tool.run is not None
        ]
        if not seen:
            return None
        return blind_spot(
            # what the models were given matters only where a tool set a state key
            [run.seen() for run in self._models] if any(t.keys for t in seen) else [],
            seen,
            found.paths,
            found.delegations,
            declared_key=self._active.key if self._active is not None else None,
        )

    # -- internals (callers hold the lock) ---------------------------------------------

    def _touch(self) -> None:
        now = self._clock()
        if self._events[0] is None:
            self._events[0] = now
        self._events[1] = now

    def _register(
        self, run: int, parent: UUID | None, metadata: Any, kind: str, name: str
    ) -> RunNode:
        """Remember a starting run in the tree. A run whose parent we never saw is a root."""
        if self._untimed:
            self._touch()
        self._seq = seq = self._seq + 1
        runs = self._runs
        above = runs.get(parent.int) if parent is not None else None
        node = RunNode(above, kind, name, seq)
        if metadata:
            namespace = metadata.get("langgraph_checkpoint_ns")
            if above is not None and namespace == above.namespace:
                node.namespace = namespace  # within its parent's task: nothing else changes
            elif namespace and isinstance(namespace, str):  # a task starts (or a root)
                node.namespace = namespace
                node.node = metadata.get("langgraph_node")
                node.step = metadata.get("langgraph_step")
                node.branch = repr(metadata.get("langgraph_path", ""))
            lc_name = metadata.get("lc_agent_name")
            if lc_name and isinstance(lc_name, str):
                node.lc_name = lc_name
        if above is None:
            self._roots.append(node)
        elif isinstance(above.children, list):
            above.children.append(node)
        else:  # its first
            above.children = [node]
        runs[run] = node
        return node

    def _end(self, run: int) -> RunNode | None:
        node = self._runs.get(run)
        if node is not None:
            self._seq = node.end = self._seq + 1
        return node

    def _state_handoff(self, node: RunNode, output: Any, key: str) -> None:
        """A tool that sets the active-agent key to another agent hands off to it."""
        value = updated_value(output, key)
        if value is not None and value != _active_of(node):
            node.destination = node.destination or value

    def _new_tool(self, call: ToolCall, call_id: str | None, origin: RunNode | None) -> _ToolRun:
        tool = _ToolRun(call=call, call_id=call_id, origin=origin)
        self._tools.append(tool)
        if call_id:  # ids may repeat within a request (some models reuse them): latest wins
            self._tools_by_call_id[call_id] = tool
        return tool

    def _asked_in_task(self, run: RunNode, name: str, args: dict[str, Any]) -> _ToolRun | None:
        """The model call of the same graph node asking for this very tool run (same name,
        same arguments) that no tool run answered yet, if any: one call, recorded once."""
        task = task_of(run)
        if task is None:
            return None
        for tool in reversed(self._tools):
            origin = tool.origin
            if (
                tool.run is None
                and origin is not None
                and origin.kind == "model"
                and tool.call.name == name
                and tool.call.args == args
                and task_of(origin) is task
            ):
                return tool
        return None

    def _add_tool_calls(self, message: AIMessage, origin: RunNode | None) -> None:
        agent = message.name or "unknown"
        for call in message.tool_calls:
            args = dict(call.get("args") or {})
            self._new_tool(
                ToolCall(agent=agent, name=call["name"], args=args), call.get("id"), origin
            )

    def _absorb(
        self,
        messages: Sequence[BaseMessage],
        origin: RunNode | None,
        fresh: Sequence[BaseMessage] = (),
    ) -> list[BaseMessage]:
        """Merge messages a node or tool wrote to the state; return those first seen here.

        An AI message first seen here came from no model call we saw: the graph made it up,
        like langgraph-supervisor's ``transfer_back_to_<supervisor>`` pair.
        """
        added = self._conversation.merge(messages, fresh=fresh)
        for message in added:
            if isinstance(message, AIMessage) and message.tool_calls:
                self._add_tool_calls(message, origin)
        return added


def _active_of(node: RunNode | None) -> str | None:
    """The agent the nearest run (this one or one above it) says is at work."""
    while node is not None and node.active is None:
        node = node.parent
    return node.active if node is not None else None


def _received(
    handoffs: Sequence[Handoff], receivers: Sequence[RunNode | None], models: Sequence[_ModelRun]
) -> str | None:
    """Give each handoff the text its target's first own model call was given; return the
    turn's human message (the last one the request's first model call was given)."""
    if handoffs or receivers:
        inputs = {id(run.run): run.inputs for run in models}
        for handoff, receiver in zip(handoffs, receivers, strict=True):
            given = inputs.get(id(receiver)) if receiver is not None else None
            if given is not None:
                handoff.received = inputs_text(given)
    first = models[0].inputs if models else None
    return last_human(first) if first else None


def _name_returns(handoffs: Sequence[Any], tool_calls: Sequence[ToolCall]) -> None:
    """A handoff made by the graph's edges is named after the handoff message the graph wrote
    for it, if any (langgraph-supervisor's ``transfer_back_to_<supervisor>``)."""
    written = [t for t in tool_calls if t.kind == "handoff" and t.target is not None]
    for handoff in handoffs:
        if handoff.via != "edge" or handoff.tool:
            continue
        for index, call in enumerate(written):
            if handoff.source in call.path and call.target == handoff.target:
                handoff.tool = call.name
                del written[index]  # by place: remove() would compare every call before it
                break


def _read_usage(call: ModelCall, message: AIMessage | None, response: LLMResult) -> None:
    """The tokens the model reported, each part ``None`` where it reported none."""
    usage = getattr(message, "usage_metadata", None)
    if not usage and message is not None:  # a replayed message that could not hold it
        usage = message.response_metadata.get(USAGE_AS_GIVEN)
    if usage and (type(usage) is dict or isinstance(usage, Mapping)):
        read_usage(call, usage)
        return
    legacy = (response.llm_output or {}).get("token_usage") or {}  # older OpenAI-style
    if isinstance(legacy, dict) and legacy:
        read_token_usage(call, legacy)
        return
    call.input_tokens = call.output_tokens = None
    if call.provider in _STREAM_USAGE_OFF and response.llm_output is None:
        # LangChain assembles a streamed reply without llm_output; ChatOpenAI sends
        # stream_options.include_usage only with stream_usage=True (off for a custom base_url)
        call.no_usage_reason = _STREAM_USAGE_HINT


def _provider(metadata: dict[str, Any] | None) -> str | None:
    """Who serves the model, as the chat model says (``ls_provider``), or None."""
    provider = metadata.get("ls_provider") if metadata else None
    return provider if isinstance(provider, str) and provider else None


def _copy(record: _Record, **changes: Any) -> _Record:
    """A shallow copy of a records dataclass: what ``dataclasses.replace`` gives, at less
    than half its cost (it calls ``__init__`` through the fields' list)."""
    copied = object.__new__(type(record))
    fields = record.__dict__.copy()  # one copy of the whole table, then the few changes
    fields.update(changes)
    copied.__dict__ = fields
    return copied


def _pausing(error: BaseException) -> bool:
    """LangGraph's ``interrupt()``: the run waits for input, what raised it did not finish."""
    return any(c.__name__ == "GraphInterrupt" for c in type(error).__mro__)


def _bubbling(error: BaseException) -> bool:
    """LangGraph's control flow (interrupts, a ``Command`` to a parent graph), no failure."""
    kind = type(error)
    found = _BUBBLING.get(kind)
    if found is None:
        found = _BUBBLING[kind] = any(c.__name__ == "GraphBubbleUp" for c in kind.__mro__)
    return found


_BUBBLING: dict[type, bool] = {}  # by exception type, as met


def _output_message(response: LLMResult) -> AIMessage | None:
    """The chat model's reply in a result, or ``None`` when it holds none."""
    for generations in response.generations:
        for generation in generations:
            if type(generation) is ChatGeneration or isinstance(generation, ChatGeneration):
                message = generation.message
                if type(message) is AIMessage or isinstance(message, AIMessage):
                    return message
    return None


def _declared_model(metadata: dict[str, Any] | None, params: Any) -> str | None:
    """The model name the caller configured, which beats the name the provider reports."""
    name = metadata.get("ls_model_name") if metadata else None
    if isinstance(name, str) and name:
        return name
    if isinstance(params, dict):
        for key in ("model", "model_name", "model_id"):
            name = params.get(key)
            if isinstance(name, str) and name:
                return name
    return None


def _class_name(serialized: Any, run_name: Any) -> str:
    """The chat model's class name: a stand-in until the provider reports a model name."""
    ids = (serialized or {}).get("id")
    if isinstance(ids, list) and ids:
        return str(ids[-1])
    return str((serialized or {}).get("name") or run_name or "unknown-model")
