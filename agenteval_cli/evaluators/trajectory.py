"""Trajectory match through openevals' ``create_trajectory_match_evaluator``.

The verdict is openevals' own; this module only chooses the two message lists and says in the
comment which tool calls differed (openevals returns no comment).

- Actual trajectory: the ``messages`` the target returned (a LangGraph state, a function's
  dict), else the messages the tracer recorded (``source`` forces one or the other). When
  the returned messages hold fewer ordinary tool calls than the trace's messages, the output
  was cut short (langgraph-supervisor's ``output_mode="last_message"`` drops the
  specialists' calls) and the trace's messages are judged instead.
- Reference: ``outputs.trajectory`` (OpenAI-form messages), used as is and compared with the
  messages as they are (failed calls and their error results included: a full reference
  describes the conversation); or the shorthand ``outputs.expected_tools`` (tool names, or
  ``{name, args}``), expanded to one assistant message per tool call. Against the shorthand,
  the actual trajectory is reduced to the work done: its tool calls in order, one per
  message, with routing calls (handoffs, agents called as tools) left out unless the
  shorthand names one, the model's structured output (kind ``output``) left out unless the
  shorthand names that tool, and calls that failed or never ran left out (a failed call did
  no work; the retry that succeeded is the step). A tool listed by name only matches any
  arguments.

What a call was comes from the trace: each recorded tool call's ``kind`` and ``status`` (see
:func:`routing_calls`, :class:`WorkDone`), never from a tool name alone; a message's call is
matched to the recorded call of the same name and arguments, in order. The soundness
evaluators use the same rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from agenteval_cli.core.records import OUTPUT, ToolCall, Trace
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


def not_work_names(trace: Trace | None) -> Callable[[str], bool]:
    """Whether a tool call named so in a message is not work, per ``trace``: routing (see
    :func:`routing_names`) or the model's structured output."""
    routing = routing_names(trace)
    outputs = frozenset(c.name for c in trace.tool_calls if c.kind == OUTPUT) if trace else ()
    return lambda name: routing(name) or name in outputs


class WorkDone:
    """Whether a message's tool call ``(name, args)`` stays in a trajectory reduced to the
    work done, for a shorthand that names the tools ``named``; ``failed`` lists the calls
    left out because they failed or never ran.

    Each message's call is matched to the next recorded call of that name and those
    arguments (else of that name): kept when it is ordinary work that succeeded, a routing
    call when the shorthand names any routing call, structured output when it names that
    tool. A call the trace does not hold is judged by its name alone."""

    def __init__(self, trace: Trace | None, named: set[str]) -> None:
        self.records = list(trace.tool_calls) if trace else []
        self.used = [False] * len(self.records)
        self.is_routing = routing_calls(trace) if trace else (lambda call: False)
        self.routing = routing_names(trace)
        self.keep_routing = any(self.routing(n) for n in named)
        self.named = named
        self.failed: list[str] = []

    def __call__(self, name: str, args: Mapping[str, Any]) -> bool:
        call = self._recorded(name, args)
        if call is None:
            return self.keep_routing or not self.routing(name)
        if self.is_routing(call):
            return self.keep_routing
        if call.kind == OUTPUT:
            return name in self.named
        if not call.succeeded:
            self.failed.append(name)
        return call.succeeded

    def _recorded(self, name: str, args: Mapping[str, Any]) -> ToolCall | None:
        records, used = self.records, self.used
        candidates = [i for i, c in enumerate(records) if not used[i] and c.name == name]
        same = [i for i in candidates if records[i].args == dict(args)]
        for i in (same or candidates)[:1]:
            used[i] = True
            return records[i]
        return None


def actual_messages(
    outputs: Mapping[str, Any] | None, trace: Trace | None, source: str = "auto"
) -> tuple[list[Any], str]:
    """The trajectory to judge, and where it came from (for the comment).

    ``auto`` takes the returned messages unless they hold fewer ordinary tool calls than the
    trace's messages: an output mode that keeps only part of the conversation. Routing calls
    and structured output are not counted, since the two sides may show them differently by
    design (synthesized hand-back messages, ``add_handoff_messages=False``, a router's reply
    that never enters the state) while the work is the same.
    """
    returned = (outputs or {}).get("messages")
    recorded = list(trace.messages) if trace else []
    if source in ("auto", "outputs") and isinstance(returned, list) and returned:
        if source == "auto" and recorded:
            routing = not_work_names(trace)
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
    messages: list[Any], keep: Callable[[str, Mapping[str, Any]], bool] | None = None
) -> list[dict[str, Any]]:
    """One message per tool call, in order; only those ``keep`` keeps when it is given."""
    return [
        call_message(name, args)
        for name, args in tool_calls_of(messages)
        if keep is None or keep(name, args)
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
    references=("trajectory", "expected_tools"),
    description="openevals trajectory match: strict/unordered/subset/superset, tool-args modes",
    metrics=[metric("trajectory_match", "trajectory match", fmt="percent", binary=True)],
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
    under different names. Against ``expected_tools`` the actual trajectory is the work that
    succeeded: failed calls are left out, and routing and structured output unless named."""
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
        left_out: list[str] = []
        if reference_outputs.get("trajectory") is not None:
            reference = reference_outputs["trajectory"]
            result = plain(outputs=actual, reference_outputs=reference)
        elif reference_outputs.get("expected_tools") is not None:
            reference, name_only = expand_expected_tools(reference_outputs["expected_tools"])
            work = WorkDone(trace, {n for n, _ in tool_calls_of(reference)})
            actual = reduce_to_tool_calls(actual, work)
            evaluator = matcher(name_only) if name_only else plain
            result = evaluator(outputs=actual, reference_outputs=reference)
            left_out = work.failed
        else:
            return {
                "key": name,
                "score": None,
                "comment": "no reference: add outputs.trajectory or outputs.expected_tools",
            }
        comment = f"{mode}/{tool_args} on {where}: {difference(actual, reference)}"
        if left_out:
            comment += f"; failed, left out {left_out}"
        return {"key": name, "score": bool(result["score"]), "comment": comment}

    return evaluate
