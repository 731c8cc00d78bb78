"""Inputs: what a target is given for an example (a message, a template's fields, the row
as it is), checked against what a graph takes before any call."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agenteval_cli.core.errors import did_you_mean
from agenteval_cli.spec.model import template_parts
from agenteval_cli.targets.errors import MissingInputField, TargetOptionError

InputBuilder = Callable[[dict[str, Any]], Any]  # returns the target's input, or an awaitable


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


def pass_through_builder(keys: tuple[str, ...], input_key: str) -> InputBuilder:
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
    return compile_template(dict(input))


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


def compile_template(template: Any, option: str = "input") -> InputBuilder:
    """A function filling ``template``'s ``{field}`` placeholders from an example's inputs
    (``option``: the spec's key it came from, named when a field is missing).

    A string that is exactly one placeholder takes the field's value as it is (a copy);
    any other string gets the fields' text; mappings and lists are filled item by item.
    """
    import copy

    if isinstance(template, str):
        parts = template_parts(template)
        if len(parts) == 1 and not parts[0][0] and parts[0][1] is not None:
            only = parts[0][1]
            return lambda inputs: copy.deepcopy(_field(inputs, only, option))
        if all(field is None for _, field in parts):
            text = "".join(literal for literal, _ in parts)
            return lambda inputs: text
        return lambda inputs: "".join(
            literal if field is None else literal + str(_field(inputs, field, option))
            for literal, field in parts
        )
    if isinstance(template, Mapping):
        items = [(key, compile_template(value, option)) for key, value in template.items()]
        return lambda inputs: {key: fill(inputs) for key, fill in items}
    if isinstance(template, list):
        fills = [compile_template(value, option) for value in template]
        return lambda inputs: [fill(inputs) for fill in fills]
    return lambda inputs: copy.deepcopy(template)


def _field(inputs: dict[str, Any], name: str, option: str = "input") -> Any:
    try:
        return inputs[name]
    except KeyError:
        fields = ", ".join(str(key) for key in inputs) or "none"
        raise MissingInputField(
            f"{option}: this example's inputs have no field {name!r} (its fields: {fields})"
        ) from None


async def built_input(build: InputBuilder, inputs: dict[str, Any]) -> Any:
    value = build(inputs)
    return await value if inspect.isawaitable(value) else value
