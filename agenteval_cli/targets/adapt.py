"""Adapting: a graph, Runnable or function becomes a uniform ``async (inputs, callbacks)``
target, called on a fresh thread each time."""

from __future__ import annotations

import asyncio
import inspect
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.targets.errors import TargetOptionError
from agenteval_cli.targets.inputs import (
    InputBuilder,
    built_input,
    check_graph_input,
    input_builder,
    pass_through_builder,
    passed_through,
    template_fields,
)
from agenteval_cli.targets.outputs import as_outputs, graph_outputs, why_no_answer
from agenteval_cli.trace.declarations import ActiveAgent

TargetFn = Callable[[dict[str, Any], list[Any]], Awaitable[dict[str, Any]]]


@dataclass
class Target:
    """A loaded target, ready to call. ``callbacks`` are passed in the run config when
    the target is LangChain code; plain functions are traced through a context hook."""

    name: str
    import_path: str
    kind: str  # "graph", "runnable" or "function"
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

    async def __call__(self, inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        return await self.call(inputs, callbacks)


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
    run_config = dict(config or {})
    # An object can only be a graph or a Runnable if its library is loaded; a plain
    # function's module that never imported them does not pay for importing them here.
    if "langgraph" in sys.modules:
        from langgraph.graph import StateGraph

        if isinstance(obj, StateGraph):
            obj = obj.compile()
        if _is_graph(obj):
            check_graph_input(obj, input, input_key)
            through = passed_through(obj, input)
            if through:
                build = pass_through_builder(through, input_key)
            call = _graph_call(obj, input_key, initial_state, build, output, run_config)
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
            )
    if "langchain_core" in sys.modules:
        from langchain_core.runnables import Runnable

        if isinstance(obj, Runnable):
            call = _runnable_call(obj, build, output, run_config)
            return Target(name, import_path, "runnable", call, input_fields=template_fields(input))
    if callable(obj):
        if run_config:
            raise TargetOptionError(
                "'config' is for graphs and Runnables; a function target calls its graph itself",
                hint="pass config=... to the graph call inside the function",
                at=("config",),
            )
        call = _function_call(obj, build, output)
        return Target(name, import_path, "function", call, input_fields=template_fields(input))
    raise TypeError(f"{import_path!r} is a {type(obj).__name__}, not a graph, Runnable or function")


def _is_graph(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def _run_config(base: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
    """The RunnableConfig of one call: the target's ``config``, a thread of its own (a
    checkpointer keeps each example's conversation apart) and the trace recorder."""
    configurable = {**base.get("configurable", {}), "thread_id": str(uuid.uuid4())}
    return {**base, "configurable": configurable, "callbacks": callbacks}


def _graph_call(
    graph: Any,
    input_key: str,
    initial_state: dict[str, Any],
    build: InputBuilder | None,
    output: str | None,
    config: dict[str, Any],
) -> TargetFn:
    from langchain_core.messages import HumanMessage

    sync_only: list[bool] = [False]  # found to run only synchronously: invoked on a thread

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        if build is None:
            if input_key not in inputs:
                raise KeyError(f"inputs have no {input_key!r} (set input_key for this target)")
            state = {"messages": [HumanMessage(str(inputs[input_key]))], **_fresh(initial_state)}
        else:
            state = await built_input(build, inputs)
            if initial_state and isinstance(state, dict):
                state = {**_fresh(initial_state), **state}
        run_config = _run_config(config, callbacks)
        if sync_only[0]:
            result = await asyncio.to_thread(graph.invoke, state, config=run_config)
        else:
            try:
                result = await graph.ainvoke(state, config=run_config)
            except NotImplementedError as exc:
                if not _sync_only(exc):
                    raise
                sync_only[0] = True  # middleware with no async hook: as graph.invoke runs it
                run_config = _run_config(config, callbacks)  # a thread the attempt never saw
                result = await asyncio.to_thread(graph.invoke, state, config=run_config)
        return graph_outputs(result, output, given=_input_messages(state))

    return call


def _sync_only(error: NotImplementedError) -> bool:
    """LangChain's refusal to run sync-only middleware (``@wrap_model_call`` on a plain
    function) under ``ainvoke``: the graph works, called as ``graph.invoke``."""
    return "Asynchronous implementation of awrap_" in str(error)


def _input_messages(state: Any) -> list[Any]:
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
    runnable: Any, build: InputBuilder | None, output: str | None, config: dict[str, Any]
) -> TargetFn:
    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        value = inputs if build is None else await built_input(build, inputs)
        result = await runnable.ainvoke(value, config=_run_config(config, callbacks))
        return as_outputs(result, output)

    return call


def _function_call(
    fn: Callable[..., Any], build: InputBuilder | None, output: str | None
) -> TargetFn:
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (async callable objects)
    )

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        value = inputs if build is None else await built_input(build, inputs)
        if is_async:
            return as_outputs(await fn(value), output)
        answer = await asyncio.to_thread(fn, value)
        if inspect.isawaitable(answer):  # ``def target(inputs): return graph.ainvoke(...)``
            answer = await answer
        return as_outputs(answer, output)

    return call


# --- outputs ------------------------------------------------------------------------------
