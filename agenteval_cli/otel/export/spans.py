"""A result laid out as GenAI spans: plain data, built from what the run recorded alone.

A request is a root ``invoke_workflow`` span; under it one ``invoke_agent`` span per stretch
of an agent's work (nested as the agent's path is: a team holds its members), holding that
stretch's ``chat`` spans (its model calls, with their usage) and ``execute_tool`` spans.
Every handoff carries ``gen_ai.transfer.*`` once: on the ``execute_tool`` span of the
handoff tool that made it (its ``gen_ai.agent.name`` the source), as the development GenAI
conventions place transfers; a handoff no tool made (a graph's edge, a return to a
coordinator) on the ``invoke_agent`` span where control arrived. An agent that was handed
control but called no model gets an empty span for it. Scores are
``gen_ai.evaluation.result`` events on the root, what the target returned its
``output.value``. A conversation is a root holding one such request span per turn, every
span carrying its conversation id.

Times are the trace's own (seconds since the epoch). A trace recorded without them (stored
by an earlier version, or imported) is laid out call after call from ``fallback_start``,
and its root says so (``agenteval.times_unrecorded``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.nesting import Walk, run_walk
from agenteval_cli.core.records import (
    ModelCall,
    Result,
    Score,
    ToolCall,
    Trace,
)
from agenteval_cli.otel import names

AttributeValue = str | bool | int | float


@dataclass
class EventPlan:
    name: str
    time: float
    attributes: dict[str, AttributeValue]


@dataclass
class SpanPlan:
    """One span to emit: times in seconds since the epoch, children inside it."""

    name: str
    start: float = 0.0
    end: float = 0.0
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[EventPlan] = field(default_factory=list)
    children: list[SpanPlan] = field(default_factory=list)
    error: str | None = None
    client: bool = False  # a call out of the process: a model's

    def walk(self) -> Iterator[SpanPlan]:
        """This span and every span under it, parents first (on a list: agents nest as
        deep as they like)."""
        stack = [self]
        while stack:
            span = stack.pop()
            yield span
            stack.extend(reversed(span.children))


@dataclass(frozen=True)
class Request:
    """Which result a root span stands for."""

    workflow: str  # the target's name
    experiment: str
    example_id: str
    repetition: int


def result_span(result: Result, request: Request, *, fallback_start: float) -> SpanPlan:
    """The root span of ``result``: a request, or a conversation holding its turns."""
    if result.turns is None:
        root = _request_span(result.trace, request, fallback_start)
        _outputs(root, result.outputs)
    else:
        conversation = f"{request.experiment}/{request.example_id}/{request.repetition}"
        root = SpanPlan(_named(names.INVOKE_WORKFLOW, request.workflow))
        root.attributes.update(_request_attributes(request))
        start = result.trace.started_at
        next_start = fallback_start if start is None else start
        for index, turn in enumerate(result.turns):
            if not turn.sent:  # it never reached the target
                continue
            span = _request_span(turn.trace, request, next_start)
            span.attributes[names.TURN] = index
            _outputs(span, turn.outputs)
            _score_events(span, turn.scores)
            if turn.error is not None:
                span.error = turn.error
            root.children.append(span)
            next_start = span.end
        first = fallback_start if start is None else start
        root.start = min([first, *(span.start for span in root.children)])
        root.end = max([first, *(span.end for span in root.children)])
        for span in root.walk():
            span.attributes[names.CONVERSATION_ID] = conversation
    root.attributes[names.STATUS] = result.status
    root.attributes[names.CACHED] = result.cached
    if result.error is not None:
        root.error = result.error
    _score_events(root, result.scores)
    if result.blame is not None:
        root.events.append(_blame_event(result.blame, root.end))
    return root


def transfer_mode(source: str, target: str, via: str, coordinators: Sequence[str]) -> str:
    """``return_to_caller`` for a coordinator's delegation (either way: to the agent it
    delegates to, and back) and an agent run as a tool; ``pass_control`` otherwise."""
    if via == "agent_tool" or source in coordinators or target in coordinators:
        return names.RETURN_TO_CALLER
    return names.PASS_CONTROL


# -- one request ---------------------------------------------------------------------------


@dataclass
class _Segment:
    """A stretch of one agent's work: its path and the chat and tool spans it made."""

    path: tuple[str, ...]
    retried: bool = False  # calls of an earlier attempt of the request, which failed
    spans: list[SpanPlan] = field(default_factory=list)
    chain: list[SpanPlan] = field(default_factory=list)  # its agent spans, outer to inner

    @property
    def start(self) -> float:
        return min(span.start for span in self.spans)

    @property
    def end(self) -> float:
        return max(span.end for span in self.spans)


class _Clock:
    """Times for calls recorded without them: one after the other from ``start``."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.guessed = False

    def span(self, started_at: float | None, seconds: float) -> tuple[float, float]:
        if started_at is not None:
            return started_at, started_at + seconds
        self.guessed = True
        start, self.now = self.now, self.now + seconds
        return start, self.now


def _request_span(trace: Trace, request: Request, fallback_start: float) -> SpanPlan:
    start = fallback_start if trace.started_at is None else trace.started_at
    clock = _Clock(start)
    segments: list[_Segment] = []
    said = _replies(trace)
    for index, call in enumerate(trace.model_calls):
        path = tuple(call.path)
        if not segments or (segments[-1].path, segments[-1].retried) != (path, call.retried):
            segments.append(_Segment(path, call.retried))
        span = _chat_span(call, clock)
        if index in said:  # what it answered: an import reads what agents said and called
            reply = [{"role": "assistant", "parts": said[index]}]
            span.attributes[names.OUTPUT_MESSAGES] = json.dumps(reply, ensure_ascii=False)
        segments[-1].spans.append(span)
    _place_tools(trace.tool_calls, segments, clock)
    arrivals = _place_handoffs(trace, segments)
    root = SpanPlan(_named(names.INVOKE_WORKFLOW, request.workflow))
    root.attributes.update(_request_attributes(request))
    root.children = _agent_spans(segments)
    carried: set[int] = set()
    for segment_index, attributes in arrivals:
        tool = _handoff_tool(root, attributes.pop(names.TOOL_NAME, None), attributes, carried)
        if tool is not None:  # the source's tool span made it: the conventions' place
            tool.attributes.update(attributes)
            continue
        for span in segments[segment_index].chain:  # no tool did: where control arrived
            if span.attributes.get(names.AGENT_NAME) == attributes[names.TRANSFER_TARGET_NAME]:
                span.attributes.update(attributes)
    if trace.untraced is not None:
        root.attributes[names.UNTRACED] = trace.untraced
    root.attributes.update(_handoff_inputs(trace))
    if trace.started_at is None or clock.guessed:
        root.attributes[names.TIMES_UNRECORDED] = True
    root.error = trace.error
    run_walk(_fit(root, start, (start, start + trace.latency_s)))
    return root


def _place_tools(tools: Sequence[ToolCall], segments: list[_Segment], clock: _Clock) -> None:
    """Each tool call into the stretch of its agent it was made in: the last that started
    before the tool did, or (untimed) the next in order."""
    cursor = 0
    for tool in tools:
        path = tuple(tool.path)
        mine = [
            i
            for i, segment in enumerate(segments)
            if segment.path == path and segment.spans and not segment.retried
        ]  # the trace's tool calls are its last attempt's
        index: int | None
        if not mine:
            segments.append(_Segment(path))
            index = len(segments) - 1
        elif tool.started_at is not None:
            before = [i for i in mine if segments[i].start <= tool.started_at]
            index = before[-1] if before else mine[0]
        else:
            index = next((i for i in mine if i >= cursor), mine[-1])
        cursor = index
        segment = segments[index]
        if tool.started_at is not None:
            ended = tool.started_at if tool.ended_at is None else tool.ended_at
            times = (tool.started_at, ended)
        elif segment.spans:  # no tool ran it: where its agent's stretch ends
            times = (segment.end, segment.end)
        else:
            times = clock.span(None, 0.0)
        segment.spans.append(_tool_span(tool, *times))
        segment.spans.sort(key=lambda span: span.start)


def _place_handoffs(
    trace: Trace, segments: list[_Segment]
) -> list[tuple[int, dict[str, AttributeValue]]]:
    """Where each handoff arrived (a segment index) and the attributes saying so. A
    handoff to an agent whose arrival no segment shows gets an empty segment of its own."""
    arrivals: list[tuple[int, dict[str, AttributeValue]]] = []
    taken: set[int] = set()
    cursor = 0
    for handoff in trace.handoffs:
        target = handoff.target
        index = _arrival(segments, target, taken, cursor)
        if index is None:  # control arrived, no model call shows it: an empty span
            entry = next((i for i, s in enumerate(segments) if not s.retried), len(segments))
            index = min(max(cursor, entry + 1), len(segments))  # after the entry, at least
            segments.insert(index, _Segment(_path_to(target, segments)))
            taken = {i + 1 if i >= index else i for i in taken}
            arrivals = [(i + 1 if i >= index else i, a) for i, a in arrivals]
        taken.add(index)
        cursor = index + 1
        mode = transfer_mode(handoff.source, target, handoff.via, trace.coordinators)
        attributes: dict[str, AttributeValue] = {
            names.TRANSFER_MODE: mode,
            names.TRANSFER_TARGET_NAME: target,
            names.TRANSFER_TARGET_TYPE: names.TRANSFER_TARGET_AGENT,
            names.TRANSFER_SOURCE: handoff.source,
            names.TRANSFER_VIA: handoff.via,
        }
        if handoff.via == "tool" and handoff.tool:
            attributes[names.TOOL_NAME] = handoff.tool
        arrivals.append((index, attributes))
    return arrivals


def _handoff_tool(
    root: SpanPlan,
    tool: AttributeValue | None,
    transfer: dict[str, AttributeValue],
    carried: set[int],
) -> SpanPlan | None:
    """The first ``execute_tool`` span not yet carrying a transfer that is the handoff
    tool ``tool`` (the one the handoff names), called by its source and handing control to
    its target."""
    if tool is None:
        return None
    for span in root.walk():
        attributes = span.attributes
        if (
            id(span) not in carried
            and attributes.get(names.OPERATION) == names.EXECUTE_TOOL
            and attributes.get(names.TOOL_NAME) == tool
            and attributes.get(names.AGENT_NAME) == transfer[names.TRANSFER_SOURCE]
            and attributes.get(names.TOOL_TARGET) == transfer[names.TRANSFER_TARGET_NAME]
        ):
            carried.add(id(span))
            return span
    return None


def _arrival(segments: Sequence[_Segment], target: str, taken: set[int], cursor: int) -> int | None:
    """The first stretch from ``cursor`` on (else any) where ``target`` took over from
    another agent and no other handoff arrived; an earlier, failed attempt's are not."""
    live = [i for i, segment in enumerate(segments) if not segment.retried]
    entries = [
        i
        for k, i in enumerate(live)
        if k > 0
        and i not in taken
        and target in segments[i].path
        and target not in segments[live[k - 1]].path
    ]
    return next((i for i in entries if i >= cursor), entries[0] if entries else None)


def _path_to(agent: str, segments: Sequence[_Segment]) -> tuple[str, ...]:
    """``agent``'s path as the trace shows it elsewhere (up to it), or just its name."""
    for segment in segments:
        if agent in segment.path:
            return segment.path[: segment.path.index(agent) + 1]
    return (agent,)


def _agent_spans(segments: Sequence[_Segment]) -> list[SpanPlan]:
    """The ``invoke_agent`` spans, nested by path: consecutive stretches of one team share
    the team's span."""
    roots: list[SpanPlan] = []
    chain: list[tuple[str, SpanPlan]] = []
    for segment in segments:
        common = 0
        while (
            common < min(len(chain), len(segment.path)) and chain[common][0] == segment.path[common]
        ):
            common += 1
        if common == len(segment.path):  # a stretch of its own, though the path is the same
            common -= 1
        del chain[common:]
        for name in segment.path[common:]:
            span = SpanPlan(_named(names.INVOKE_AGENT, name))
            span.attributes = {names.OPERATION: names.INVOKE_AGENT, names.AGENT_NAME: name}
            (chain[-1][1].children if chain else roots).append(span)
            chain.append((name, span))
        chain[-1][1].children.extend(segment.spans)
        segment.chain = [span for _, span in chain]
    return roots


def _fit(
    span: SpanPlan, at: float, bounds: tuple[float, float] | None = None
) -> Walk[tuple[float, float]]:
    """Set each agent span's times to cover its children's (an empty one sits at ``at``,
    where the work before it ended); ``span`` covers ``bounds`` too when given. A walk
    (``run_walk``)."""
    if span.attributes.get(names.OPERATION) in (names.CHAT, names.EXECUTE_TOOL):
        return span.start, span.end
    first, last = (at, at) if bounds is None else bounds
    if span.children:
        starts, ends = [], []
        for child in span.children:
            child_start, child_end = yield _fit(child, at)
            starts.append(child_start)
            ends.append(child_end)
            at = max(at, child_end)
        if bounds is None:
            first, last = min(starts), max(ends)
        else:
            first, last = min(first, *starts), max(last, *ends)
    span.start, span.end = first, last
    return first, last


def _replies(trace: Trace) -> dict[int, list[dict[str, Any]]]:
    """What each model call answered, as the conventions' message parts (its text, its tool
    calls), by its index in ``trace.model_calls``: an agent's n-th call that answered is the
    n-th assistant message of the transcript it is named in, read only for an agent whose
    calls and messages are as many (else nothing is said)."""
    by_agent: dict[str, list[list[dict[str, Any]]]] = {}
    for message in trace.messages:
        if message.get("role") == "assistant" and isinstance(message.get("name"), str):
            by_agent.setdefault(message["name"], []).append(_parts(message))
    calls: dict[str, list[int]] = {}
    for index, call in enumerate(trace.model_calls):
        if not call.failed and not call.retried:
            calls.setdefault(call.agent, []).append(index)
    found: dict[int, list[dict[str, Any]]] = {}
    for agent, indexes in calls.items():
        replies = by_agent.get(agent, [])
        if len(replies) == len(indexes):
            found.update(zip(indexes, replies, strict=True))
    return found


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An OpenAI-form assistant message as the GenAI conventions' parts."""
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = function.get("arguments")
        part = {"type": "tool_call", "name": function.get("name"), "arguments": arguments}
        parts.append({**part, "id": call["id"]} if call.get("id") else part)
    return parts


def _chat_span(call: ModelCall, clock: _Clock) -> SpanPlan:
    start, end = clock.span(call.started_at, call.latency_s)
    span = SpanPlan(_named(names.CHAT, call.model), start, end, client=True)
    attributes = span.attributes
    attributes.update(
        {names.OPERATION: names.CHAT, names.REQUEST_MODEL: call.model, names.AGENT_NAME: call.agent}
    )
    if call.provider:
        attributes[names.PROVIDER_NAME] = call.provider
    usage = {
        names.INPUT_TOKENS: call.input_tokens,
        names.OUTPUT_TOKENS: call.output_tokens,
        names.CACHE_READ_TOKENS: call.cache_read_tokens,
        names.CACHE_CREATION_TOKENS: call.cache_write_tokens,
        names.REASONING_TOKENS: call.reasoning_tokens,
    }
    attributes.update({key: value for key, value in usage.items() if value is not None})
    if call.failed:
        span.error = "the model call raised and answered nothing"
    elif call.cut_off:
        attributes[names.CALL_CUT_OFF] = True
        attributes[names.USAGE_UNKNOWN] = "still running when the request stopped"
    elif call.input_tokens is None or call.output_tokens is None:
        attributes[names.USAGE_UNKNOWN] = call.no_usage_reason or "the model reported no usage"
    if call.retried:
        attributes[names.CALL_RETRIED] = True
    if call.injected is not None:
        attributes[names.FAULT] = call.injected
    return span


def _tool_span(tool: ToolCall, start: float, end: float) -> SpanPlan:
    span = SpanPlan(_named(names.EXECUTE_TOOL, tool.name), start, end)
    span.attributes = {
        names.OPERATION: names.EXECUTE_TOOL,
        names.TOOL_NAME: tool.name,
        names.TOOL_TYPE: "function",
        names.AGENT_NAME: tool.agent,
        names.TOOL_ARGUMENTS: json.dumps(tool.args, default=str, ensure_ascii=False),
        names.TOOL_KIND: tool.kind,
        names.TOOL_STATUS: tool.status,
    }
    if tool.output is not None:
        span.attributes[names.TOOL_RESULT] = tool.output
    if tool.target is not None:
        span.attributes[names.TOOL_TARGET] = tool.target
    if tool.status == "error":
        span.error = tool.output or "the tool failed"
    if tool.injected is not None:
        span.attributes[names.FAULT] = tool.injected
    return span


def _outputs(span: SpanPlan, outputs: dict[str, Any] | None) -> None:
    """What the target returned, as OpenInference's JSON ``output.value`` (the conventions
    have no attribute for a workflow's result), so an import scores it as the run did."""
    if outputs is not None:
        span.attributes[names.OUTPUT_VALUE] = json.dumps(outputs, default=str, ensure_ascii=False)
        span.attributes[names.OUTPUT_MIME] = names.JSON_MIME


def _score_events(span: SpanPlan, scores: Sequence[Score]) -> None:
    """Each score as a ``gen_ai.evaluation.result`` event at the end of ``span``: a null
    score has no value, its explanation says why."""
    for score in scores:
        attributes: dict[str, AttributeValue] = {names.EVALUATION_NAME: score.key}
        if isinstance(score.score, bool):
            attributes[names.EVALUATION_SCORE_VALUE] = float(score.score)
            attributes[names.EVALUATION_SCORE_LABEL] = "pass" if score.score else "fail"
        elif score.score is not None:
            attributes[names.EVALUATION_SCORE_VALUE] = float(score.score)
        if score.comment:
            attributes[names.EVALUATION_EXPLANATION] = score.comment
        span.events.append(EventPlan(names.EVALUATION_RESULT, span.end, attributes))


def _handoff_inputs(trace: Trace) -> dict[str, AttributeValue]:
    """What handoff_context reads that no span's conventions hold: the turn's human message
    and what each handoff's receiving agent was first given (the trace keeps the text, not
    the messages), so an import scores it as the run did."""
    found: dict[str, AttributeValue] = {}
    if trace.request is not None:
        found[names.REQUEST] = trace.request
    if any(h.received is not None for h in trace.handoffs):
        given = [
            {"source": h.source, "target": h.target, "received": h.received} for h in trace.handoffs
        ]
        found[names.HANDOFFS_RECEIVED] = json.dumps(given, ensure_ascii=False)
    return found


def _blame_event(blame: dict[str, Any], time: float) -> EventPlan:
    """A failed request's blame as an evaluation result: its kind the label."""
    attributes: dict[str, AttributeValue] = {
        names.EVALUATION_NAME: names.BLAME,
        names.EVALUATION_SCORE_LABEL: str(blame.get("kind")),
    }
    if blame.get("why"):
        attributes[names.EVALUATION_EXPLANATION] = str(blame["why"])
    if blame.get("agent") is not None:
        attributes[names.BLAME_AGENT] = str(blame["agent"])
    if isinstance(blame.get("step"), int):
        attributes[names.BLAME_STEP] = blame["step"]
    return EventPlan(names.EVALUATION_RESULT, time, attributes)


def _request_attributes(request: Request) -> dict[str, AttributeValue]:
    return {
        names.OPERATION: names.INVOKE_WORKFLOW,
        names.WORKFLOW_NAME: request.workflow,
        names.EXPERIMENT: request.experiment,
        names.EXAMPLE_ID: request.example_id,
        names.REPETITION: request.repetition,
    }


def _named(operation: str, subject: str) -> str:
    return f"{operation} {subject}"
