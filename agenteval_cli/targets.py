"""Targets: an import path becomes ``async (inputs: dict) -> dict``.

A compiled LangGraph graph gets ``{"messages": [HumanMessage(inputs[input_key])],
**initial_state}``; a LangChain Runnable gets the inputs dict; a plain function (sync or
async) is called with the inputs dict, as a LangSmith ``evaluate()`` target is.

A target's ``input`` (a mapping of ``{field}`` templates, or a function) replaces those
defaults, ``output`` names where the final answer is in what comes back, and ``config`` is
merged into the RunnableConfig of graphs and Runnables. Every graph or Runnable call runs
on a thread of its own (a fresh ``thread_id``), so a checkpointer never carries one
example's conversation into the next.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.spec.model import SpecValueError, split_import_path, template_parts
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
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's module raised (or called sys.exit) while importing
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


class TargetOptionError(ValueError):
    """A target option that does not fit the object it names, found before any call.

    ``at`` is where the option is inside the target's spec entry (``("input", "query")``),
    so the error can point at its line.
    """

    def __init__(self, message: str, *, hint: str | None = None, at: tuple[Any, ...] = ()):
        super().__init__(message)
        self.hint = hint
        self.at = at


class MissingInputField(LookupError):
    """An ``input:`` placeholder names a field this example's inputs do not have."""


class MissingOutput(LookupError):
    """``output:`` names a path that the target's result does not have."""


InputBuilder = Callable[[dict[str, Any]], Any]  # returns the target's input, or an awaitable


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
                build = _pass_through(through, input_key)
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
                no_answer=None if output is not None else _no_answer(obj),
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


def graph_input_keys(graph: Any) -> list[str] | None:
    """The keys a compiled graph takes as input, or None when it does not say.

    A StateGraph's builder holds its input schema's channels, whatever the schema is
    (TypedDict, pydantic model, dataclass, ``MessagesState``); other graphs are asked for
    their input JSON schema, which has no properties when the input is not a mapping.
    """
    builder = getattr(graph, "builder", None)
    schemas = getattr(builder, "schemas", None)
    schema = getattr(builder, "input_schema", None)
    if isinstance(schemas, dict) and schema in schemas:
        keys = [str(key) for key in schemas[schema]]
        return None if not keys or "__root__" in keys else keys
    try:
        properties = graph.get_input_jsonschema().get("properties")
    except Exception:  # a schema pydantic cannot describe: nothing to check against
        return None
    return [str(key) for key in properties] if isinstance(properties, dict) and properties else None


def passed_through(graph: Any, input: Any) -> tuple[str, ...]:
    """The graph's input keys when each example's inputs go to it as they are, as
    LangSmith's ``evaluate(graph.invoke, ...)`` passes them: its input has no ``messages``
    for a question and no ``input:`` maps the fields. Empty otherwise."""
    if input is not None:
        return ()
    keys = graph_input_keys(graph)
    return () if keys is None or "messages" in keys else tuple(keys)


def uncovered_fields(inputs: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """The example's input fields a graph given them as they are would not take."""
    return [str(name) for name in inputs if name not in keys]


def cannot_take(fields: Sequence[str], keys: Sequence[str], where: str = "") -> str:
    """Why a graph cannot be given an example's inputs as they are."""
    listed = ", ".join(f"inputs.{name}" for name in fields)
    return (
        f"the graph does not take {listed}{where} (its input has no 'messages' key; its "
        f"input keys: {', '.join(keys)})"
    )


def cannot_take_hint(fields: Sequence[str], keys: Sequence[str], input_key: str) -> str:
    """The fix: an ``input:`` mapping that fills the graph's first key from a field of the
    example (its ``input_key`` when it has one)."""
    source = input_key if input_key in fields or not fields else fields[0]
    return f'add input: {{{keys[0]}: "{{{source}}}"}} to fill them from the inputs'


def _pass_through(keys: tuple[str, ...], input_key: str) -> InputBuilder:
    """The example's inputs as the graph's input (a copy), refused when a field is not
    one of the graph's keys: LangGraph would drop it without a word."""
    import copy

    def build(inputs: dict[str, Any]) -> Any:
        fields = uncovered_fields(inputs, keys)
        if fields:
            hint = cannot_take_hint(list(inputs), keys, input_key)
            raise MissingInputField(f"{cannot_take(fields, keys)}: {hint}")
        return copy.deepcopy(inputs)

    return build


def check_graph_input(graph: Any, input: Any, input_key: str) -> None:
    """Refuse a graph that the target's input cannot reach, before any call. A graph
    without ``messages`` in its input and no ``input:`` is given the inputs as they are;
    whether the examples' fields fit it is checked once they are read."""
    keys = graph_input_keys(graph)
    if keys is None:
        return
    if isinstance(input, Mapping):
        for key in input:
            if key not in keys:
                raise TargetOptionError(
                    f"input key {key!r} is not in the graph's input",
                    hint="; ".join(
                        filter(
                            None, [did_you_mean(key, keys), f"its input keys: {', '.join(keys)}"]
                        )
                    ),
                    at=("input", key),
                )


def graph_state_keys(graph: Any) -> list[str] | None:
    """Every state key of a compiled graph and of its subgraphs, or None when it cannot
    tell (a graph that is not a StateGraph)."""
    import contextlib

    graphs = [graph]
    with contextlib.suppress(Exception):
        graphs += [sub for _, sub in graph.get_subgraphs(recurse=True)]
    keys: dict[str, None] = {}
    for each in graphs:
        builder = getattr(each, "builder", None) or each  # compiled, or a StateGraph
        channels = getattr(builder, "channels", None)
        if isinstance(channels, dict):
            keys.update(dict.fromkeys(str(key) for key in channels))
    return list(keys) or None


def check_active_agent(graph: Any, key: str) -> None:
    """Refuse an ``active_agent`` key that no state of the graph holds: no call could ever
    say which agent is at work."""
    keys = graph_state_keys(graph)
    if keys is None or key in keys:
        return
    raise TargetOptionError(
        f"active_agent {key!r} is not a key of the graph's state",
        hint="; ".join(filter(None, [did_you_mean(key, keys), f"its keys: {', '.join(keys)}"])),
        at=("active_agent",),
    )


def input_builder(input: Mapping[str, Any] | Callable[..., Any]) -> InputBuilder:
    """``inputs -> the target's input`` from an ``input:`` mapping, or a function's call.

    A function gets a copy of the inputs, so it cannot change the example for the next
    target; it may be async (the builder then returns a coroutine).
    """
    import copy

    if callable(input):
        fn = input
        return lambda inputs: fn(copy.deepcopy(inputs))
    return _compile_template(dict(input))


def template_fields(template: Any) -> tuple[str, ...]:
    """The example input fields an ``input:`` template fills its placeholders from, in
    order; none for a function (or no template), which reads what it likes."""
    if isinstance(template, str):
        return tuple(dict.fromkeys(f for _, f in template_parts(template) if f is not None))
    if isinstance(template, Mapping):
        template = list(template.values())
    if isinstance(template, list):
        return tuple(dict.fromkeys(f for item in template for f in template_fields(item)))
    return ()


def _compile_template(template: Any) -> InputBuilder:
    """A function filling ``template``'s ``{field}`` placeholders from an example's inputs.

    A string that is exactly one placeholder takes the field's value as it is (a copy);
    any other string gets the fields' text; mappings and lists are filled item by item.
    """
    import copy

    if isinstance(template, str):
        parts = template_parts(template)
        if len(parts) == 1 and not parts[0][0] and parts[0][1] is not None:
            only = parts[0][1]
            return lambda inputs: copy.deepcopy(_field(inputs, only))
        if all(field is None for _, field in parts):
            text = "".join(literal for literal, _ in parts)
            return lambda inputs: text
        return lambda inputs: "".join(
            literal if field is None else literal + str(_field(inputs, field))
            for literal, field in parts
        )
    if isinstance(template, Mapping):
        items = [(key, _compile_template(value)) for key, value in template.items()]
        return lambda inputs: {key: fill(inputs) for key, fill in items}
    if isinstance(template, list):
        fills = [_compile_template(value) for value in template]
        return lambda inputs: [fill(inputs) for fill in fills]
    return lambda inputs: copy.deepcopy(template)


def _field(inputs: dict[str, Any], name: str) -> Any:
    try:
        return inputs[name]
    except KeyError:
        fields = ", ".join(str(key) for key in inputs) or "none"
        raise MissingInputField(
            f"input: this example's inputs have no field {name!r} (its fields: {fields})"
        ) from None


async def _built(build: InputBuilder, inputs: dict[str, Any]) -> Any:
    value = build(inputs)
    return await value if inspect.isawaitable(value) else value


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
            state = await _built(build, inputs)
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
        value = inputs if build is None else await _built(build, inputs)
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
        value = inputs if build is None else await _built(build, inputs)
        if is_async:
            return as_outputs(await fn(value), output)
        return as_outputs(await asyncio.to_thread(fn, value), output)

    return call


# --- outputs ------------------------------------------------------------------------------

_OPENAI_ROLES = frozenset({"user", "assistant", "system", "developer", "tool", "function"})


def message_text(message: Any) -> str:
    """The text of a message (an object, an OpenAI or LangChain dict, a ``(role, text)``
    tuple) whose content may be a string or a list of content blocks."""
    if isinstance(message, dict):
        content = message.get("content")
    elif isinstance(message, tuple) and len(message) == 2:
        content = message[1]
    else:
        content = getattr(message, "content", message)
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [block if isinstance(block, str) else _block_text(block) for block in content]
        return "".join(parts)
    return str(content)


def _block_text(block: Any) -> str:
    text = block.get("text") if isinstance(block, dict) else None
    return text if isinstance(text, str) else ""


def _is_ai(message: Any) -> bool:
    """An assistant message, in any of the forms a target may return."""
    if isinstance(message, dict):
        if "role" in message:
            return message["role"] in ("assistant", "ai")
        return message.get("type") in ("ai", "AIMessageChunk")
    if isinstance(message, tuple):
        return len(message) == 2 and message[0] in ("assistant", "ai")
    messages = sys.modules.get("langchain_core.messages")  # no message objects without it
    return messages is not None and isinstance(message, messages.AIMessage)


def _is_named_human(message: Any) -> bool:
    """A human message that names its writer: how LangGraph's supervisor tutorial's workers
    return their answer (``HumanMessage(content=..., name="researcher")``)."""
    if isinstance(message, dict):
        human = message.get("role") == "user" or message.get("type") == "human"
        return human and bool(message.get("name"))
    messages = sys.modules.get("langchain_core.messages")
    return (
        messages is not None
        and isinstance(message, messages.HumanMessage)
        and bool(getattr(message, "name", None))
    )


def final_text(messages: list[Any], given: Sequence[Any] = ()) -> str:
    """The text of the last message an agent wrote that has any: an assistant message, or
    a human message carrying an agent's name. A closing tool call, or an empty reply, does
    not hide the answer before it; the ``given`` messages (the request's own input, its
    history included) are never the answer. Unknown input (a function target's result):
    the conversation's opening message, the question, is not."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if position == 0 and not given and _is_named_human(message):
            break  # the opening message: the question, whoever it names
        inputs = given if position < len(given) else ()  # the input opens the conversation
        if (_is_ai(message) or _is_named_human(message)) and not _among(message, inputs):
            text = message_text(message)
            if text.strip():
                return text
    return ""


def _among(message: Any, given: Sequence[Any]) -> bool:
    """Whether ``message`` is one of the request's input messages: the same object, the
    same id, or the same role, name and content (an input converted on its way in)."""
    if not given:
        return False
    mine = getattr(message, "id", None)
    for other in given:
        if other is message or (mine is not None and getattr(other, "id", None) == mine):
            return True
        if (
            _writer(other) == _writer(message)
            and _is_ai(other) == _is_ai(message)
            and message_text(other) == message_text(message)
        ):
            return True
    return False


def stored_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages in OpenAI form for the outputs: message objects and LangChain dicts are
    converted; OpenAI dicts are kept as they are, tool calls without ids included."""
    if not any(isinstance(message, dict) for message in messages):
        from langchain_core.messages import convert_to_openai_messages

        return convert_to_openai_messages(messages)
    stored: list[dict[str, Any]] = []
    made = [0]  # ids synthesized so far, for call_0, call_1, ...
    for message in messages:
        if isinstance(message, dict) and message.get("role") in _OPENAI_ROLES:
            stored.append(dict(message))
        elif isinstance(message, dict):
            stored.extend(_converted_dict(message, made))
        else:
            from langchain_core.messages import convert_to_openai_messages

            stored.extend(convert_to_openai_messages([message]))
    return stored


def _converted_dict(message: dict[str, Any], made: list[int]) -> list[dict[str, Any]]:
    """A LangChain-form dict (``{"type": "ai", ...}``) in OpenAI form. The converter needs
    tool-call ids: missing ones are made up (``call_0``...) for it and left out again."""
    from langchain_core.messages import convert_to_openai_messages

    patched = dict(message)
    synthesized: list[int] = []
    calls = patched.get("tool_calls")
    if isinstance(calls, list):
        patched["tool_calls"] = [dict(call) if isinstance(call, dict) else call for call in calls]
        for index, call in enumerate(patched["tool_calls"]):
            if isinstance(call, dict) and not call.get("id"):
                call["id"] = f"call_{made[0]}"
                made[0] += 1
                synthesized.append(index)
    tool_id_made = patched.get("type") == "tool" and not patched.get("tool_call_id")
    if tool_id_made:
        patched["tool_call_id"] = f"call_{made[0]}"
        made[0] += 1
    converted = convert_to_openai_messages([patched])
    for oai in converted:
        for index in synthesized:
            tool_calls = oai.get("tool_calls") or []
            if index < len(tool_calls):
                tool_calls[index].pop("id", None)
        if tool_id_made and oai.get("role") == "tool":
            oai.pop("tool_call_id", None)
    return converted


# State keys that hold a graph's answer, first found first: agenteval's own, the key
# LangChain's router and many tutorials write, and a plain ``answer``.
ANSWER_KEYS = ("final_response", "final_answer", "answer")


def graph_outputs(
    state: Any, output: str | None = None, *, given: Sequence[Any] = ()
) -> dict[str, Any]:
    """Map a graph's final state to ``final_response``, ``resolution_notes``, ``messages``
    and its other keys. The final response is, first found first: the value at ``output``
    when given; a key of :data:`ANSWER_KEYS`; the structured response (``create_agent``'s
    ``response_format``); the text of the last message an agent wrote (see
    :func:`final_text`; ``given`` are the request's input messages, never the answer)."""
    if not isinstance(state, dict):
        return as_outputs(state, output)
    outputs: dict[str, Any] = {
        "final_response": "",
        "resolution_notes": list(state.get("resolution_notes") or []),
    }
    if "messages" in state:
        raw = state["messages"]
        messages = list(raw) if isinstance(raw, list | tuple) else [] if raw is None else [raw]
        outputs["final_response"] = final_text(messages, given)
        outputs["messages"] = stored_messages(messages)
    for key, value in state.items():
        if key not in outputs:
            outputs[key] = value
    if output is not None:
        outputs["final_response"] = _answer_at(state, output)
    elif (key := next((k for k in ANSWER_KEYS if state.get(k) is not None), None)) is not None:
        outputs["final_response"] = _answer(state[key])
    elif state.get("structured_response") is not None:
        outputs["final_response"] = structured_answer(state["structured_response"])
    return outputs


def _no_answer(graph: Any) -> str | None:
    """Why no final response can be read off the graph's state, or None when it can."""
    keys = graph_state_keys(graph)
    if keys is None or {"messages", "structured_response", *ANSWER_KEYS} & set(keys):
        return None
    return (
        f"its state ({', '.join(keys)}) has no messages and no {', '.join(ANSWER_KEYS)} key, "
        "so its final response is empty: set output: to the key that holds its answer"
    )


def _writer(message: Any) -> Any:
    """The name a message carries (an object's or a dict's), if any."""
    return message.get("name") if isinstance(message, dict) else getattr(message, "name", None)


def structured_answer(value: Any) -> Any:
    """A structured response as JSON-ready data: a pydantic model's or a dataclass's fields,
    anything else (a mapping, a TypedDict's dict) as it is."""
    import dataclasses

    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def as_outputs(value: Any, output: str | None = None) -> dict[str, Any]:
    """A target's return value as an outputs dict; a graph state is mapped like a graph's,
    and ``output`` (a key or dotted path) names the final response in it."""
    if output is not None:
        answer = _answer_at(value, output)
        outputs = as_outputs(value) if isinstance(value, dict) else {}
        return {**outputs, "final_response": answer}
    if isinstance(value, dict):
        if "messages" in value and "final_response" not in value:
            return graph_outputs(value)
        return value
    if isinstance(value, str):
        return {"final_response": value}
    if hasattr(value, "content"):  # a message
        return {"final_response": message_text(value)}
    raise TypeError(f"target returned {type(value).__name__}; return a dict (or a string)")


def _answer_at(value: Any, path: str) -> Any:
    """:func:`answer_at`; for a state that stopped at ``interrupt()`` before writing its
    answer there, None (the result is interrupted, not a missing output)."""
    try:
        return answer_at(value, path)
    except MissingOutput:
        if returned_interrupt(value) is not None:
            return None
        raise


def answer_at(value: Any, path: str) -> Any:
    """The value at ``path`` (``answer``, ``result.text``, ``messages.-1``) in a result; a
    message becomes its text."""
    node = value
    walked: list[str] = []
    for part in path.split("."):
        found, node, keys = _step(node, part)
        if not found:
            where = f"{'.'.join(walked)!r}" if walked else "the result"
            known = f" (its keys: {', '.join(keys)})" if keys else ""
            raise MissingOutput(f"output {path!r}: {where} has no {part!r}{known}")
        walked.append(part)
    return _answer(node)


def _step(node: Any, part: str) -> tuple[bool, Any, list[str]]:
    """One step of a dotted path: ``(found, value, the keys there were)``."""
    if isinstance(node, Mapping):
        if part in node:
            return True, node[part], []
        return False, None, [str(key) for key in node]
    if isinstance(node, list | tuple):
        try:
            return True, node[int(part)], []
        except (ValueError, IndexError):
            return False, None, []
    if not part.startswith("_") and hasattr(node, part):
        return True, getattr(node, part), []
    fields = getattr(type(node), "model_fields", None) or getattr(node, "__dataclass_fields__", {})
    return False, None, [str(key) for key in fields]


def _answer(value: Any) -> Any:
    """A message as its text; anything else as it is."""
    if isinstance(value, dict):
        is_message = "content" in value and ("role" in value or "type" in value)
        return message_text(value) if is_message else value
    messages = sys.modules.get("langchain_core.messages")
    if messages is not None and isinstance(value, messages.BaseMessage):
        return message_text(value)
    return value
