"""One recorded request per trace: its agenteval trace, outputs, error, latency, and what
ties it to a dataset row (the ``agenteval.example_id`` it carries, or its input text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.records import Trace
from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.agents import named_agents
from agenteval_cli.otel.ingest.handoff_inputs import handoff_inputs
from agenteval_cli.otel.ingest.messages import (
    input_messages,
    is_message_dump,
    json_value,
    output_message,
)
from agenteval_cli.otel.ingest.openllmetry import as_openinference
from agenteval_cli.otel.ingest.otlp import Span
from agenteval_cli.otel.ingest.runs import SpanRun, call_links, is_langchain, kind_of, run_of
from agenteval_cli.otel.ingest.tree import rooted

__all__ = ["RecordedRequest", "requests_of"]


@dataclass
class RecordedRequest:
    """One trace read back."""

    trace_id: str
    origin: str  # file:line of its root span
    start_ns: int
    trace: Trace
    outputs: dict[str, Any] | None
    error: str | None
    interrupt: str | None  # what the graph stopped at interrupt() waiting for
    latency_s: float
    example_id: str | None  # the row it names, if it names one
    input_text: str | None  # the user's text it started from, if found
    workflow: str | None = None  # the root's gen_ai.workflow.name: the target, if it says
    named_agents: frozenset[str] = frozenset()  # the agents its spans name (otel.ingest.agents)
    # What had to be mended to read it (a parent cycle cut, spans whose parent is missing)
    notes: list[str] = field(default_factory=list)


def requests_of(
    spans: Sequence[Span], coordinators: Sequence[str] = (), **target: Any
) -> list[RecordedRequest]:
    """Each trace among ``spans`` as a request, in the order they started. ``coordinators``
    and ``target`` (``own_agent``, ``active_agent``, ``skill_tools``) are what the target
    declares, read as its local run reads them."""
    by_trace: dict[str, list[Span]] = {}
    for span in as_openinference(spans):
        by_trace.setdefault(span.trace_id, []).append(span)
    requests = [_request(group, coordinators, target) for group in by_trace.values()]
    return sorted(requests, key=lambda r: r.start_ns)


def _request(
    spans: list[Span], coordinators: Sequence[str], target: dict[str, Any]
) -> RecordedRequest:
    from agenteval_cli.langsmith.replay import replay
    from agenteval_cli.otel.ingest.transfers import coordinators_of, explain, transfers_of

    spans, notes = rooted(_unique(spans))
    ids = {s.span_id for s in spans}
    roots = sorted((s for s in spans if s.parent_id not in ids), key=lambda s: s.start_ns)
    langchain = any(is_langchain(s) for s in spans)
    links = {} if langchain else call_links(spans)
    runs = [run_of(s, order, langchain, links.get(s.span_id)) for s, order in _dotted(spans)]
    known = _ids(runs)
    top = [r for r in runs if r.parent_run_id is None or str(r.parent_run_id) not in known]
    transfers = [] if langchain else transfers_of(spans)
    trace = replay(top, runs, [*coordinators, *coordinators_of(transfers)], **target)
    explain(trace.handoffs, transfers)
    root = roots[0]
    handoff_inputs(trace, root)
    end = max((s.end_ns or s.start_ns) for s in roots)
    latency = max((end - root.start_ns) / 1e9, 0.0)
    error = _error(root)
    trace.latency_s, trace.error = latency, error
    interrupt = None if error is not None else _interrupt(spans)
    return RecordedRequest(
        trace_id=root.trace_id,
        origin=root.origin,
        start_ns=root.start_ns,
        trace=trace,
        outputs=_outputs(root, spans, langchain) if error is None else None,
        error=error,
        interrupt=interrupt,
        latency_s=latency,
        example_id=_example_id(spans),
        input_text=_input_text(root, spans),
        workflow=_workflow(root),
        named_agents=named_agents(spans, trace, langchain),
        notes=notes,
    )


def _unique(spans: list[Span]) -> list[Span]:
    """A span exported twice (two files, a retried export) counted once."""
    return list({s.span_id: s for s in spans}.values())


def _ids(runs: list[SpanRun]) -> set[str]:
    return {str(r.id) for r in runs}


def _dotted(spans: list[Span]) -> list[tuple[Span, str]]:
    """Each span's ``dotted_order``: where LangSmith's (its ancestors' start times and ids,
    root first) sorts it, parents before children and siblings by start time then id,
    written as that rank. LangSmith's own form grows with the depth: a trace 10,000 spans
    deep would hold 10,000 orders of 10,000 parts."""
    by_id = {s.span_id: s for s in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = span.parent_id if span.parent_id in by_id else None
        children.setdefault(parent, []).append(span)

    def placed(span: Span) -> str:
        return f"{span.start_ns:020d}{span.span_id}"

    rank: dict[str, str] = {}
    stack = sorted(children.get(None, []), key=placed, reverse=True)
    while stack:
        span = stack.pop()
        rank[span.span_id] = f"{len(rank):012d}"
        stack.extend(sorted(children.get(span.span_id, []), key=placed, reverse=True))
    return [(span, rank[span.span_id]) for span in spans]


def _error(root: Span) -> str | None:
    """The request's error: the root span's exception (``Type: message``), or its status."""
    if not root.error:
        return None
    for name, attributes in root.events:
        if name == names.EXCEPTION_EVENT:
            kind = str(attributes.get(names.EXCEPTION_TYPE) or "Error").rpartition(".")[2]
            message = str(attributes.get(names.EXCEPTION_MESSAGE) or "")
            return f"{kind}: {message}" if message else kind
    return root.status_message or "the request's root span failed (no message recorded)"


def _interrupt(spans: list[Span]) -> str | None:
    """What a graph that stopped at ``interrupt()`` waits for: the values of the
    ``Interrupt``s its ``GraphInterrupt`` carried (the request itself returned)."""
    from agenteval_cli.core.interrupts import describe

    values: list[Any] = []
    for span in sorted(spans, key=lambda s: s.start_ns):
        for name, attributes in span.events:
            kind = str(attributes.get(names.EXCEPTION_TYPE) or "").rpartition(".")[2]
            if name == names.EXCEPTION_EVENT and kind in ("GraphInterrupt", "NodeInterrupt"):
                values = _interrupt_values(str(attributes.get(names.EXCEPTION_MESSAGE) or ""))
    return describe(values) if values else None


def _interrupt_values(text: str) -> list[Any]:
    """``{"value": v}`` of each ``Interrupt(value=v, ...)`` in a GraphInterrupt's message;
    a value that is no literal is kept as its source text."""
    import ast

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError, SystemError):
        return [{"value": text}]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Interrupt":
            for keyword in node.keywords:
                if keyword.arg == "value":
                    try:
                        value = ast.literal_eval(keyword.value)
                    except (ValueError, SyntaxError, TypeError, RecursionError):
                        value = ast.get_source_segment(text.strip(), keyword.value)
                    found.append({"value": value})
    return found or [{"value": text}]


def _outputs(root: Span, spans: list[Span], langchain: bool) -> dict[str, Any]:
    """What the target returned: a LangChain graph's final state read as a run reads it;
    otherwise the root's output, else the last model answer's text."""
    from agenteval_cli.targets.outputs import as_outputs, graph_outputs

    value = json_value(root.attributes.get(names.OUTPUT_VALUE))
    if langchain and value is not None:
        state = _revived(value)
        given = _revived(json_value(root.attributes.get(names.INPUT_VALUE)))
        messages = given.get("messages") if isinstance(given, dict) else None
        if isinstance(state, dict):
            return graph_outputs(state, given=list(messages or []))
        return as_outputs(state)
    if isinstance(value, str) and value:
        return {"final_response": value}
    if isinstance(value, dict) and value:
        return as_outputs(value)
    models = sorted((s for s in spans if kind_of(s) == "model"), key=lambda s: s.start_ns)
    for span in reversed(models):
        answer = output_message(span.attributes)
        if answer["content"] and not answer["tool_calls"]:
            return {"final_response": answer["content"]}
    return {"final_response": ""}


def _revived(value: Any) -> Any:
    """LangChain messages back from ``messages_to_dict``'s form, anywhere in ``value``."""
    if isinstance(value, list):
        return [_revived(v) for v in value]
    if not isinstance(value, dict):
        return value
    if is_message_dump(value):
        from langchain_core.messages import messages_from_dict

        try:
            return messages_from_dict([value])[0]
        except (KeyError, ValueError, TypeError):
            return value
    return {k: _revived(v) for k, v in value.items()}


def _workflow(root: Span) -> str | None:
    """The workflow a request's root says it ran (``agenteval run --otel`` writes the
    target's name there)."""
    if root.attributes.get(names.OPERATION) != names.INVOKE_WORKFLOW:
        return None
    found = root.attributes.get(names.WORKFLOW_NAME)
    return str(found) if found else None


def _example_id(spans: list[Span]) -> str | None:
    for span in sorted(spans, key=lambda s: s.start_ns):
        found = span.attributes.get(names.EXAMPLE_ID)
        if found is None:
            metadata = json_value(span.attributes.get(names.METADATA))
            found = metadata.get(names.EXAMPLE_ID) if isinstance(metadata, dict) else None
        if found is not None and str(found):
            return str(found)
    return None


def _input_text(root: Span, spans: list[Span]) -> str | None:
    """The user's text the request began with: the root's input (the first human message of
    a graph's input state, or its text), else the first user message a model was sent."""
    value = json_value(root.attributes.get(names.INPUT_VALUE))
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        for message in value["messages"]:
            text = _user_text(message)
            if text is not None:
                return text
    elif isinstance(value, str) and value.strip():
        return value
    for span in sorted((s for s in spans if kind_of(s) == "model"), key=lambda s: s.start_ns):
        for message in input_messages(span.attributes):
            if message.get("role") == "user" and message.get("content"):
                return str(message["content"])
    return None


def _user_text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    data = message.get("data")
    if not isinstance(data, dict):
        data = message
    kind = data.get("type") or message.get("type") or data.get("role")
    if kind in ("human", "user") and isinstance(data.get("content"), str):
        return str(data["content"])
    return None
