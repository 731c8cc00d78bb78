"""Trajectory match through openevals' ``create_trajectory_match_evaluator``.

The verdict is openevals' own; this module only chooses the two message lists and says in the
comment which tool calls differed (openevals returns no comment).

- Actual trajectory: the ``messages`` the target returned (a LangGraph state, a function's
  dict), else the messages the tracer recorded (``source`` forces one or the other). When
  the returned messages hold fewer ordinary tool calls than the trace's messages, the output
  was cut short (langgraph-supervisor's ``output_mode="last_message"`` drops the
  specialists' calls) and the trace's messages are judged instead.
- Reference: ``outputs.trajectory`` (OpenAI-form messages), used as is; or the shorthand
  ``outputs.expected_tools`` (tool names, or ``{name, args}``), expanded to one assistant
  message per tool call. Against the shorthand, the actual trajectory is reduced to the same
  shape: its tool calls in order, one per message, routing calls (handoffs, agents called as
  tools) left out unless the shorthand names one. A tool listed by name only matches any
  arguments.

What is routing comes from the trace: each recorded tool call's ``kind`` (see
:func:`routing_calls`, :func:`routing_names`), never from a tool name alone. The soundness
evaluators use the same rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from agenteval_cli.core.records import ToolCall, Trace
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric

Mode = Literal["strict", "unordered", "subset", "superset"]
ArgMode = Literal["exact", "ignore", "subset", "superset"]
Source = Literal["auto", "outputs", "trace"]
MODES: tuple[str, ...] = get_args(Mode)
ARG_MODES: tuple[str, ...] = get_args(ArgMode)
# Traces stored before tool calls had a kind knew handoffs by these name prefixes only.
OLD_TRACE_HANDOFF_PREFIXES = ("transfer_to_", "transfer_back_to_")


def _before_kinds(trace: Trace) -> bool:
    """A trace stored before tool calls had a kind: handoffs made by tools were recorded,
    yet every tool call is an ordinary ``tool``."""
    return (
        bool(trace.handoffs)
        and all(h.via == "tool" for h in trace.handoffs)
        and not any(c.is_routing for c in trace.tool_calls)
    )


def routing_calls(trace: Trace) -> Callable[[ToolCall], bool]:
    """Whether a tool call of ``trace`` moved control (a handoff, an agent called as a tool)
    rather than doing work: its recorded kind, or for a trace stored before kinds, the
    ``transfer_to_`` / ``transfer_back_to_`` prefixes those traces were scored by."""
    if _before_kinds(trace):
        return lambda call: call.name.startswith(OLD_TRACE_HANDOFF_PREFIXES)
    return lambda call: call.is_routing


def is_routing_call(call: ToolCall, trace: Trace) -> bool:
    """One call's verdict; :func:`routing_calls` is the rule for many."""
    return routing_calls(trace)(call)


def routing_names(trace: Trace | None) -> Callable[[str], bool]:
    """Whether a tool call named so in a message is routing, per ``trace``: the trace recorded
    a routing call of that name. Recorded tool calls carry no call id, so messages' calls are
    matched by name (a name is a handoff tool or not, whatever message it appears in)."""
    if trace is None:
        return lambda name: False
    if _before_kinds(trace):
        return lambda name: name.startswith(OLD_TRACE_HANDOFF_PREFIXES)
    return frozenset(c.name for c in trace.tool_calls if c.is_routing).__contains__


def actual_messages(
    outputs: Mapping[str, Any] | None, trace: Trace | None, source: str = "auto"
) -> tuple[list[Any], str]:
    """The trajectory to judge, and where it came from (for the comment).

    ``auto`` takes the returned messages unless they hold fewer ordinary tool calls than the
    trace's messages: an output mode that keeps only part of the conversation. Routing calls
    are not counted, since the two sides may show them differently by design (synthesized
    hand-back messages, ``add_handoff_messages=False``) while the work is the same.
    """
    returned = (outputs or {}).get("messages")
    recorded = list(trace.messages) if trace else []
    if source in ("auto", "outputs") and isinstance(returned, list) and returned:
        if source == "auto" and recorded:
            routing = routing_names(trace)
            held = sum(not routing(name) for name, _ in tool_calls_of(returned))
            made = sum(not routing(name) for name, _ in tool_calls_of(recorded))
            if held < made:
                why = f"returned messages hold {held} of {made} non-routing tool calls"
                return recorded, f"trace messages ({why})"
        return list(returned), "outputs.messages"
    if source == "outputs":
        return [], "outputs.messages"
    return recorded, "trace messages"


def tool_calls_of(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, args)`` of every tool call, in order, in OpenAI or LangChain form."""
    from openevals.trajectory.utils import _normalize_to_openai_messages_list

    calls = []
    for message in _normalize_to_openai_messages_list(messages):
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = function.get("name") or call.get("name") or ""
            args = function.get("arguments", call.get("args", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args else {}
                except ValueError:
                    args = {"_raw": args}
            calls.append((name, args if isinstance(args, dict) else {"_value": args}))
    return calls


def call_message(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(dict(args), sort_keys=True)
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def expand_expected_tools(expected: Any) -> tuple[list[dict[str, Any]], set[str]]:
    """Shorthand -> reference messages, and the tools given by name only (any args match)."""
    if isinstance(expected, str):
        expected = [expected]
    if not isinstance(expected, list):
        raise ValueError("outputs.expected_tools must be a list of tool names or {name, args}")
    messages, name_only = [], set()
    for item in expected:
        if isinstance(item, str):
            messages.append(call_message(item, {}))
            name_only.add(item)
        elif isinstance(item, Mapping) and isinstance(item.get("name"), str):
            messages.append(call_message(item["name"], item.get("args") or {}))
        else:
            raise ValueError(
                f"outputs.expected_tools item {item!r} is not a name or {{name, args}}"
            )
    with_args = {m["tool_calls"][0]["function"]["name"] for m in messages} - name_only
    return messages, name_only - with_args


def reduce_to_tool_calls(
    messages: list[Any], is_routing: Callable[[str], bool] | None = None
) -> list[dict[str, Any]]:
    """One message per tool call, in order; routing calls left out when ``is_routing`` is
    given."""
    return [
        call_message(name, args)
        for name, args in tool_calls_of(messages)
        if is_routing is None or not is_routing(name)
    ]


def difference(actual: list[Any], reference: list[Any]) -> str:
    """Which tool calls differed, by name: a short, readable comment."""
    got = [name for name, _ in tool_calls_of(actual)]
    want = [name for name, _ in tool_calls_of(reference)]
    missing = [n for n in dict.fromkeys(want) if want.count(n) > got.count(n)]
    extra = [n for n in dict.fromkeys(got) if got.count(n) > want.count(n)]
    parts = [f"expected {want}", f"got {got}"]
    parts += [f"missing {missing}"] if missing else []
    parts += [f"extra {extra}"] if extra else []
    return "; ".join(parts)


def _check_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    for tool, rule in (overrides or {}).items():
        if isinstance(rule, str) and rule in ARG_MODES:
            checked[str(tool)] = rule
        elif isinstance(rule, list) and all(isinstance(k, str) for k in rule):
            checked[str(tool)] = list(rule)
        else:
            raise ValueError(
                f"tool_args_overrides[{tool!r}] must be one of {', '.join(ARG_MODES)} "
                "or a list of argument keys (dot paths allowed)"
            )
    return checked


@register(
    "trajectory_match",
    family="trajectory",
    reads="outputs.trajectory or outputs.expected_tools; returned or traced messages",
    description="openevals trajectory match: strict/unordered/subset/superset, tool-args modes",
    metrics=[metric("trajectory_match", "trajectory match", fmt="percent")],
    example="- {name: trajectory_match, mode: superset, tool_args: ignore}",
    needs_answer=False,
)
def trajectory_match(
    *,
    mode: Mode = "strict",
    tool_args: ArgMode = "exact",
    tool_args_overrides: dict[str, Any] | None = None,
    source: Source = "auto",
    name: str = "trajectory_match",
) -> Any:
    """Score key is the evaluator's name (``trajectory_match``), so modes can sit side by side
    under different names."""
    from openevals.trajectory.match import create_trajectory_match_evaluator

    overrides = _check_overrides(tool_args_overrides)

    def matcher(extra_ignored: set[str]) -> Any:
        merged = {**{t: "ignore" for t in extra_ignored}, **overrides}
        return create_trajectory_match_evaluator(
            trajectory_match_mode=mode,  # type: ignore[arg-type]
            tool_args_match_mode=tool_args,  # type: ignore[arg-type]
            tool_args_match_overrides=merged or None,
        )

    plain = matcher(set())

    def evaluate(outputs: dict, reference_outputs: dict, trace: Trace) -> dict:
        reference_outputs = reference_outputs or {}
        actual, where = actual_messages(outputs, trace, source)
        if reference_outputs.get("trajectory") is not None:
            reference = reference_outputs["trajectory"]
            result = plain(outputs=actual, reference_outputs=reference)
        elif reference_outputs.get("expected_tools") is not None:
            reference, name_only = expand_expected_tools(reference_outputs["expected_tools"])
            routing = routing_names(trace)
            names_routing = any(routing(n) for n, _ in tool_calls_of(reference))
            actual = reduce_to_tool_calls(actual, None if names_routing else routing)
            evaluator = matcher(name_only) if name_only else plain
            result = evaluator(outputs=actual, reference_outputs=reference)
        else:
            return {
                "key": name,
                "score": None,
                "comment": "no reference: add outputs.trajectory or outputs.expected_tools",
            }
        comment = f"{mode}/{tool_args} on {where}: {difference(actual, reference)}"
        return {"key": name, "score": bool(result["score"]), "comment": comment}

    return evaluate
