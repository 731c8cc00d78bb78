"""Adapting: a graph, Runnable or function becomes a uniform ``async (inputs, callbacks)``
target, called on a fresh thread each time, which can also take one turn of a conversation
(:mod:`agenteval_cli.targets.session`)."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.data.conversations import Resume, TurnInput
from agenteval_cli.spec.faults import FaultSpec
from agenteval_cli.targets.checkpointers import (
    check_worker_thread_read,
    refused_by_saver,
    runs_only_sync,
    saver_of,
)
from agenteval_cli.targets.configs import RowConfig, call_config
from agenteval_cli.targets.errors import TargetOptionError
from agenteval_cli.targets.inputs import (
    InputBuilder,
    built_input,
    check_graph_input,
    graph_input_keys,
    input_builder,
    pass_through_builder,
    passed_through,
    template_fields,
)
from agenteval_cli.targets.names import SystemNames
from agenteval_cli.targets.outputs import as_outputs, graph_outputs, why_no_answer
from agenteval_cli.targets.session import Session, new_thread, turn_value
from agenteval_cli.trace.declarations import ActiveAgent

TargetFn = Callable[[dict[str, Any], list[Any]], Awaitable[dict[str, Any]]]
# One turn of a conversation: (the turn's inputs or a Resume, the session, callbacks).
TurnFn = Callable[[TurnInput, Session, list[Any]], Awaitable[dict[str, Any]]]


@dataclass
class Target:
    """A loaded target, ready to call. ``callbacks`` are passed in the run config when
    the target is LangChain code; plain functions are traced through a context hook."""

    name: str
    import_path: str
    kind: str  # "graph", "runnable", "function" or "remote" (served: targets.remote)
    call: TargetFn = field(repr=False)
    coordinators: tuple[str, ...] = ()  # agents that regain control by design
    # The example input fields every call reads (the graph's input_key, or the fields of an
    # input template); empty when only the target knows (a function, an input function).
    input_fields: tuple[str, ...] = ()
    # A graph given each example's inputs as they are (its input has no 'messages' and no
    # input: maps them): its input keys, which must cover every example's fields.
    passes_through: tuple[str, ...] = ()
    input_key: str = "question"  # the field a message input would be read from (for hints)
    active_agent: ActiveAgent | None = None  # the state key naming the agent at work
    # Why the final response will be empty on every call (a state with no place for an
    # answer and no output: naming one), said before the run; None when it can be found.
    no_answer: str | None = None
    skill_tools: dict[str, str | None] = field(default_factory=dict)  # tool -> its skill arg
    # One turn of a conversation; None (a target built by hand): ``call`` is given each
    # turn as a function target is (see targets.session.turn_value).
    turn_call: TurnFn | None = field(default=None, repr=False)
    # It keeps a conversation itself (a graph compiled with a checkpointer): each turn is
    # sent alone on the conversation's thread, and an interrupt can be resumed.
    keeps_state: bool = False
    # The row fields its config: fills placeholders from (targets.configs.row_fields).
    config_fields: tuple[str, ...] = ()
    # The agents, tools and skills it has, read from its graph when it is loaded (None
    # where they cannot be read before the run: checked against its traces after it).
    names: SystemNames = field(default_factory=SystemNames)
    # Calls made to fail from the outside (the spec's faults:), in the spec's order.
    faults: tuple[FaultSpec, ...] = ()
    # Its code runs in this process, so a step of its call that holds the event loop is
    # its own; a served graph's code runs on its server (what holds the loop is not its).
    runs_here: bool = True

    async def __call__(self, inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        return await self.call(inputs, callbacks)

    async def turn(
        self, inputs: TurnInput, session: Session, callbacks: list[Any]
    ) -> dict[str, Any]:
        """Send one turn of a conversation (the turn's fields, or a :class:`Resume`); the
        session's messages are updated by a graph, its history by the caller
        (:meth:`Session.took`), who knows whether the turn was answered."""
        if self.turn_call is None:
            return await self.call(turn_value(inputs, session), callbacks)
        return await self.turn_call(inputs, session, callbacks)


def adapt(
    obj: Any,
    *,
    name: str,
    import_path: str,
    input_key: str = "question",
    initial_state: dict[str, Any] | None = None,
    input: Mapping[str, Any] | Callable[..., Any] | None = None,
    output: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Target:
    """Wrap a graph, Runnable or function as a uniform async target.

    ``input`` is a mapping of ``{field}`` templates or a function ``fn(inputs) -> dict``;
    ``output`` the key or dotted path of the final answer; ``config`` RunnableConfig keys
    for graphs and Runnables. A graph whose input keys are known is checked against them
    here, before any call (:class:`TargetOptionError`).
    """
    initial_state = dict(initial_state or {})
    build = None if input is None else input_builder(input)
    run_config = RowConfig(dict(config or {}))
    # An object can only be a graph or a Runnable if its library is loaded; a plain
    # function's module that never imported them does not pay for importing them here.
    if "langgraph" in sys.modules:
        from langgraph.graph import StateGraph

        if isinstance(obj, StateGraph):
            obj = obj.compile()
        if _is_graph(obj):
            check_graph_input(obj, input, input_key)
            check_worker_thread_read(obj)
            through = passed_through(obj, input)
            if through:
                build = pass_through_builder(through, input_key)
            call, turn = _graph_call(obj, input_key, initial_state, build, output, run_config)
            fields = (input_key,) if input is None and not through else template_fields(input)
            return Target(
                name,
                import_path,
                "graph",
                call,
                input_fields=fields,
                passes_through=through,
                input_key=input_key,
                no_answer=None if output is not None else why_no_answer(obj),
                turn_call=turn,
                keeps_state=keeps_conversation(obj),
                config_fields=run_config.fields,
            )
    if "langchain_core" in sys.modules:
        from langchain_core.runnables import Runnable

        if isinstance(obj, Runnable):
            call, turn = _runnable_call(obj, build, output, run_config)
            fields = template_fields(input)
            return Target(
                name,
                import_path,
                "runnable",
                call,
                input_fields=fields,
                turn_call=turn,
                config_fields=run_config.fields,
            )
    if callable(obj):
        if run_config.template:
            raise TargetOptionError(
                "'config' is for graphs and Runnables; a function target calls its graph itself",
                hint="pass config=... to the graph call inside the function",
                at=("config",),
            )
        call, turn = _function_call(obj, build, output)
        fields = template_fields(input)
        return Target(
            name,
            import_path,
            "function",
            call,
            input_fields=fields,
            input_key=input_key,
            turn_call=turn,
        )
    raise TypeError(f"{import_path!r} is a {type(obj).__name__}, not a graph, Runnable or function")


def _is_graph(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def keeps_conversation(graph: Any) -> bool:
    """Whether a compiled graph keeps a conversation itself: compiled with a checkpointer
    (a saver); a root graph with none remembers nothing between calls."""
    return saver_of(graph) is not None


def _graph_call(
    graph: Any,
    input_key: str,
    initial_state: dict[str, Any],
    build: InputBuilder | None,
    output: str | None,
    config: RowConfig,
) -> tuple[TargetFn, TurnFn]:
    """A graph's single call and its turn of a conversation (see :mod:`.session`)."""
    from langchain_core.messages import AIMessage
    from langgraph.types import Command

    # Runs only synchronously (its checkpointer has no async methods, or middleware with no
    # async hook): invoked on a worker thread. None until the checkpointer is asked.
    sync_only: list[bool | None] = [None]
    keeps = keeps_conversation(graph)

    async def state_of(inputs: dict[str, Any], *, initial: bool = True) -> Any:
        return await graph_state(inputs, input_key, initial_state, build, initial=initial)

    async def invoke(value: Any, run_config: dict[str, Any], retry_config: Any) -> Any:
        """``graph.ainvoke``, or ``graph.invoke`` on a thread for a graph that runs only
        synchronously (``retry_config()``: the config of a call after a refused one)."""
        if sync_only[0] is None:
            sync_only[0] = await runs_only_sync(graph)
        if sync_only[0]:
            return await asyncio.to_thread(graph.invoke, value, config=run_config)
        try:
            return await graph.ainvoke(value, config=run_config)
        except NotImplementedError as exc:
            if not (_sync_only(exc) or refused_by_saver(exc, graph)):
                raise
            sync_only[0] = True  # middleware with no async hook: as graph.invoke runs it
            return await asyncio.to_thread(graph.invoke, value, config=retry_config())

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        state = await state_of(inputs)
        filled = config.filled(inputs)
        result = await invoke(
            state,
            call_config(filled, callbacks),
            lambda: call_config(filled, callbacks),  # a thread the attempt never saw
        )
        return graph_outputs(result, output, given=input_messages(state))

    async def turn(inputs: TurnInput, session: Session, callbacks: list[Any]) -> dict[str, Any]:
        value: Any
        if isinstance(inputs, Resume):
            if not keeps:
                raise ValueError(NO_CHECKPOINTER_TO_RESUME)
            value = Command(resume=inputs.value)
            given = list(session.messages)
        elif keeps:  # the checkpointer has the conversation: only the new turn
            value = await state_of(inputs, initial=session.turns == 0)
            given = [*session.messages, *input_messages(value)]
        else:
            value = _with_history(await state_of(inputs), session.messages, graph)
            given = input_messages(value)

        filled = config.for_turn(session, inputs)

        def retry_config() -> dict[str, Any]:
            # the refused call may have left the thread's first step (a thread of the row's
            # own is the row's, whatever it holds)
            if session.turns == 0 and not config.sets_thread:
                session.thread_id = new_thread()
            return call_config(filled, callbacks, session.thread_id)

        run_config = call_config(filled, callbacks, session.thread_id)
        result = await invoke(value, run_config, retry_config)
        outputs = graph_outputs(result, output, given=given)
        returned = result.get("messages") if isinstance(result, dict) else None
        if isinstance(returned, list | tuple):
            session.messages = list(returned)
        else:  # no messages come back: the user's and the answer stand for them
            answer = outputs.get("final_response")
            session.messages = [*given, *([AIMessage(str(answer))] if answer else [])]
        return outputs

    return call, turn


async def graph_state(
    inputs: dict[str, Any],
    input_key: str,
    initial_state: dict[str, Any],
    build: InputBuilder | None,
    *,
    initial: bool = True,
) -> Any:
    """A graph's input for ``inputs``: a message, or the ``input:`` mapping, with the
    target's initial state when ``initial`` (a conversation's first turn, a single call)."""
    if build is None:
        if input_key not in inputs:
            raise KeyError(f"inputs have no {input_key!r} (set input_key for this target)")
        from langchain_core.messages import HumanMessage

        state: Any = {"messages": [HumanMessage(str(inputs[input_key]))]}
        return {**state, **_fresh(initial_state)} if initial else state
    state = await built_input(build, inputs)
    if initial and initial_state and isinstance(state, dict):
        state = {**_fresh(initial_state), **state}
    return state


NO_CHECKPOINTER_TO_RESUME = (
    "the graph has no checkpointer, so it cannot resume from interrupt(): compile it with "
    "one (graph.compile(checkpointer=InMemorySaver()))"
)


def _with_history(state: Any, history: list[Any], graph: Any) -> Any:
    """A graph without a checkpointer's input for a later turn: the conversation so far
    before the new turn's messages. A graph whose input has no ``messages`` cannot be given
    it, which is the conversation's error rather than a turn answered without it."""
    if not history:
        return state
    keys = graph_input_keys(graph)
    if not isinstance(state, dict) or (keys is not None and "messages" not in keys):
        raise ValueError(
            "the graph has no checkpointer and its input has no 'messages' to carry the "
            "conversation's history: compile it with a checkpointer, or give it messages"
        )
    return {**state, "messages": [*history, *input_messages(state)]}


def _sync_only(error: NotImplementedError) -> bool:
    """LangChain's refusal to run sync-only middleware (``@wrap_model_call`` on a plain
    function) under ``ainvoke``: the graph works, called as ``graph.invoke``."""
    return "Asynchronous implementation of awrap_" in str(error)


def input_messages(state: Any) -> list[Any]:
    """The messages a graph was given (one, or a list), which are never its answer."""
    raw = state.get("messages") if isinstance(state, dict) else None
    if raw is None:
        return []
    return list(raw) if isinstance(raw, list | tuple) else [raw]


def _fresh(state: dict[str, Any]) -> dict[str, Any]:
    """A copy per call, so one example's state never leaks into the next."""
    import copy

    return copy.deepcopy(state)


def _runnable_call(
    runnable: Any, build: InputBuilder | None, output: str | None, config: RowConfig
) -> tuple[TargetFn, TurnFn]:
    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        value = inputs if build is None else await built_input(build, inputs)
        run_config = call_config(config.filled(inputs), callbacks)
        return as_outputs(await runnable.ainvoke(value, config=run_config), output)

    async def turn(inputs: TurnInput, session: Session, callbacks: list[Any]) -> dict[str, Any]:
        filled = config.for_turn(session, inputs)
        value = turn_value(inputs, session, await _built_turn(build, inputs))
        run_config = call_config(filled, callbacks, session.thread_id)
        return as_outputs(await runnable.ainvoke(value, config=run_config), output)

    return call, turn


def _function_call(
    fn: Callable[..., Any], build: InputBuilder | None, output: str | None
) -> tuple[TargetFn, TurnFn]:
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (async callable objects)
    )

    async def answer(value: Any) -> dict[str, Any]:
        if is_async:
            return as_outputs(await fn(value), output)
        answered = await asyncio.to_thread(fn, value)
        if inspect.isawaitable(answered):  # ``def target(inputs): return graph.ainvoke(...)``
            answered = await answered
        return as_outputs(answered, output)

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        if build is None and is_async:  # the common case: no coroutine between
            return as_outputs(await fn(inputs), output)
        return await answer(inputs if build is None else await built_input(build, inputs))

    async def turn(inputs: TurnInput, session: Session, callbacks: list[Any]) -> dict[str, Any]:
        return await answer(turn_value(inputs, session, await _built_turn(build, inputs)))

    return call, turn


async def _built_turn(build: InputBuilder | None, inputs: TurnInput) -> Any:
    """What ``input:`` makes of a turn's fields (None: no ``input:``, or a resume turn)."""
    if build is None or isinstance(inputs, Resume):
        return None
    return await built_input(build, inputs)


# --- outputs ------------------------------------------------------------------------------
