"""Targets: an import path becomes ``async (inputs: dict) -> dict``.

A compiled LangGraph graph gets ``{"messages": [HumanMessage(inputs[input_key])],
**initial_state}``; a LangChain Runnable gets the inputs dict; a plain function (sync or
async) is called with the inputs dict, as the seed's ``supervisor_target(inputs)`` is.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval_cli.errors import UserError, did_you_mean
from agenteval_cli.spec import SpecValueError, split_import_path

TargetFn = Callable[[dict[str, Any], list[Any]], Awaitable[dict[str, Any]]]


@dataclass
class Target:
    """A loaded target, ready to call. ``callbacks`` are passed in the run config when
    the target is LangChain code; plain functions are traced through a context hook."""

    name: str
    import_path: str
    kind: str  # "graph", "runnable" or "function"
    call: TargetFn = field(repr=False)

    async def __call__(self, inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        return await self.call(inputs, callbacks)


def import_object(
    import_path: str, *, base_dir: Path, file: str | None = None, line: int | None = None
) -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr`` (relative to base_dir)."""
    try:
        module_part, attr_path = split_import_path(import_path)
    except SpecValueError:
        raise UserError(
            f"import path {import_path!r} is not 'package.module:attr' or 'file.py:attr'",
            file=file,
            line=line,
        ) from None
    try:
        if module_part.endswith(".py"):
            module = _import_file(base_dir / module_part, file=file, line=line)
        else:
            module = importlib.import_module(module_part)
    except UserError:
        raise
    except ModuleNotFoundError as exc:
        missing = exc.name or module_part
        hint = "check the spelling, or install the package into this environment"
        if missing == module_part or module_part.startswith(missing + "."):
            hint = did_you_mean(module_part, _sibling_modules(module_part)) or hint
        raise UserError(
            f"cannot import {module_part!r}: no module named {missing!r}",
            file=file,
            line=line,
            hint=hint,
        ) from None
    except Exception as exc:  # the user's module raised while importing
        raise UserError(
            f"importing {module_part!r} raised {type(exc).__name__}: {exc}",
            file=file,
            line=line,
            hint="fix the module so it imports cleanly",
        ) from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise UserError(
                f"{module_part!r} has no attribute {attr_path!r}",
                file=file,
                line=line,
                hint=did_you_mean(part, names) or f"it defines: {', '.join(names[:8])}",
            )
        obj = getattr(obj, part)
    return obj


def _import_file(path: Path, *, file: str | None, line: int | None) -> Any:
    path = path.resolve()
    if not path.is_file():
        raise UserError(f"target file {str(path)!r} does not exist", file=file, line=line)
    module_name = f"_agenteval_target_{abs(hash(str(path)))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load {str(path)!r} as a Python module", file=file, line=line)
    module = importlib.util.module_from_spec(spec)
    # The file imports its neighbours, when loaded and when called (a lazy import inside
    # the target function), so its folder stays on the path for the rest of the run.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    try:
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _sibling_modules(dotted: str) -> list[str]:
    parent, _, _ = dotted.rpartition(".")
    import pkgutil

    if not parent:
        return [m.name for m in pkgutil.iter_modules()]
    try:
        package = importlib.import_module(parent)
    except Exception:
        return []
    paths = getattr(package, "__path__", None) or []
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(paths)]


def adapt(
    obj: Any,
    *,
    name: str,
    import_path: str,
    input_key: str = "question",
    initial_state: dict[str, Any] | None = None,
) -> Target:
    """Wrap a graph, Runnable or function as a uniform async target."""
    initial_state = dict(initial_state or {})
    # An object can only be a graph or a Runnable if its library is loaded; a plain
    # function's module that never imported them does not pay for importing them here.
    if "langgraph" in sys.modules:
        from langgraph.graph import StateGraph

        if isinstance(obj, StateGraph):
            obj = obj.compile()
        if _is_graph(obj):
            return Target(name, import_path, "graph", _graph_call(obj, input_key, initial_state))
    if "langchain_core" in sys.modules:
        from langchain_core.runnables import Runnable

        if isinstance(obj, Runnable):
            return Target(name, import_path, "runnable", _runnable_call(obj))
    if callable(obj):
        return Target(name, import_path, "function", _function_call(obj))
    raise TypeError(f"{import_path!r} is a {type(obj).__name__}, not a graph, Runnable or function")


def _is_graph(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def _graph_call(graph: Any, input_key: str, initial_state: dict[str, Any]) -> TargetFn:
    from langchain_core.messages import HumanMessage

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        if input_key not in inputs:
            raise KeyError(f"inputs have no {input_key!r} (set input_key for this target)")
        state = {"messages": [HumanMessage(str(inputs[input_key]))], **_fresh(initial_state)}
        result = await graph.ainvoke(state, config={"callbacks": callbacks})
        return graph_outputs(result)

    return call


def _fresh(state: dict[str, Any]) -> dict[str, Any]:
    """A copy per call, so one example's state never leaks into the next."""
    import copy

    return copy.deepcopy(state)


def _runnable_call(runnable: Any) -> TargetFn:
    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        return as_outputs(await runnable.ainvoke(inputs, config={"callbacks": callbacks}))

    return call


def _function_call(fn: Callable[..., Any]) -> TargetFn:
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (async callable objects)
    )

    async def call(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        if is_async:
            return as_outputs(await fn(inputs))
        return as_outputs(await asyncio.to_thread(fn, inputs))

    return call


def message_text(message: Any) -> str:
    """The text of a message whose content may be a string or a list of content blocks."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def graph_outputs(state: Any) -> dict[str, Any]:
    """Map a graph's final state to ``final_response``, ``resolution_notes``, ``messages``."""
    if not isinstance(state, dict):
        return as_outputs(state)
    from langchain_core.messages import AIMessage

    from agenteval_cli.openai_format import to_openai_messages

    messages = list(state.get("messages") or [])
    final = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    outputs: dict[str, Any] = {
        "final_response": message_text(final) if final is not None else "",
        "resolution_notes": list(state.get("resolution_notes") or []),
        "messages": to_openai_messages(messages),
    }
    for key, value in state.items():
        if key not in outputs and key != "messages":
            outputs[key] = value
    return outputs


def as_outputs(value: Any) -> dict[str, Any]:
    """A function's return value as an outputs dict; a graph state is mapped like a graph's."""
    if isinstance(value, dict):
        if "messages" in value and "final_response" not in value:
            return graph_outputs(value)
        return value
    if isinstance(value, str):
        return {"final_response": value}
    if hasattr(value, "content"):  # a message
        return {"final_response": message_text(value)}
    raise TypeError(f"target returned {type(value).__name__}; return a dict (or a string)")
