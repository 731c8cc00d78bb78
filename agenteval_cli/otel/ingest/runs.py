"""Spans as the runs :func:`agenteval_cli.langsmith.replay.replay` replays into the tracer.

A span recorded by OpenInference's LangChain instrumentation *is* a LangChain run: its
``metadata`` (LangGraph's node, step, path and namespace, ``lc_agent_name``), its inputs and
outputs as JSON and its error come back as a LangSmith run would carry them, so the trace is
attributed by the same code as a callback-traced run.

Any other span is mapped onto the run it stands for: an agent span (``invoke_agent`` with
``gen_ai.agent.name``, or OpenInference's ``AGENT`` with ``agent.name``) is a chain whose
``lc_agent_name`` is that agent, which is how the tracer tells agents apart; a model span is
a chat model whose result carries the span's usage as OpenAI's ``token_usage``, its counts as
the span gives them (the recorder checks them, as it checks every model's); a tool span is a
tool. A span that passes control to another agent (``gen_ai.transfer.mode``
``pass_control``, OpenInference's handoff span) is the handoff tool the model called, whose
result is a ``Command`` going to that agent, as a LangGraph handoff tool's is.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agenteval_cli.langsmith.replay import INJECTED
from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.attributes import first
from agenteval_cli.otel.ingest.messages import (
    input_messages,
    is_message_dump,
    json_value,
    output_message,
)
from agenteval_cli.otel.ingest.otlp import Span

__all__ = ["SpanRun", "agent_of", "call_links", "is_langchain", "kind_of", "run_of"]

_BUBBLING = ("ParentCommand", "GraphInterrupt", "NodeInterrupt", "GraphBubbleUp")
_RUN_TYPES = {"LLM": "llm", "TOOL": "tool", "RETRIEVER": "retriever", "EMBEDDING": "embedding"}


@dataclass
class SpanRun:
    """The fields of a LangSmith ``Run`` the replay reads."""

    id: uuid.UUID
    parent_run_id: uuid.UUID | None
    trace_id: str
    run_type: str
    name: str
    inputs: Any
    outputs: Any
    start_time: datetime
    end_time: datetime | None
    dotted_order: str
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    serialized: dict[str, Any] = field(default_factory=dict)
    # the span's counts as given: the replay's recorder checks them (core.token_counts)
    prompt_tokens: Any = None
    completion_tokens: Any = None


def span_uuid(span_id: str) -> uuid.UUID:
    """A span's 64-bit id as the UUID a run id is."""
    return uuid.UUID(int=int(span_id, 16))


def is_langchain(span: Span) -> bool:
    """Whether the span is a LangChain run: written by a LangChain instrumentation, or
    carrying LangGraph's run metadata."""
    if span.scope in names.LANGCHAIN_SCOPES:
        return True
    metadata = json_value(span.attributes.get(names.METADATA))
    return isinstance(metadata, dict) and any(str(k).startswith("langgraph_") for k in metadata)


def agent_of(span: Span) -> str | None:
    """The agent a (non-LangChain) span runs, if it is an agent span (Traceloop's kind
    ``agent`` too, named by its entity). A workflow's span is none, though it says
    ``invoke_agent`` (OpenLLMetry's does): its own kind says it is the workflow, or the
    agent it names is its workflow."""
    attributes = span.attributes
    operation = attributes.get(names.OPERATION)
    if attributes.get(names.TRACELOOP_SPAN_KIND) == names.TRACELOOP_AGENT:
        name = first(attributes, (*names.AGENT_NAME_READ, names.TRACELOOP_ENTITY_NAME))
        return str(name) if name else None
    if operation in names.AGENT_OPERATIONS or attributes.get(names.SPAN_KIND) == "AGENT":
        name = first(attributes, names.AGENT_NAME_READ)
        if name is None and operation in names.AGENT_OPERATIONS:
            name = span.name.removeprefix(str(operation)).strip() or None
        if attributes.get(names.TRACELOOP_SPAN_KIND) == names.TRACELOOP_WORKFLOW:
            return None
        if name and name == first(attributes, names.WORKFLOW_NAME_READ):
            return None
        return str(name) if name else None
    return None


def kind_of(span: Span) -> str:
    """``agent``, ``model``, ``tool``, ``transfer`` (a span that only moves control) or
    ``chain``, for a span outside LangChain."""
    attributes = span.attributes
    operation = attributes.get(names.OPERATION)
    kind = attributes.get(names.SPAN_KIND)
    if agent_of(span) is not None:
        return "agent"
    if operation in names.MODEL_OPERATIONS or kind == "LLM":
        return "model"
    if operation in names.TOOL_OPERATIONS or kind == "TOOL":
        return "tool" if first(attributes, names.TOOL_NAME_READ) is not None else "transfer"
    return "chain"


def run_of(
    span: Span, dotted_order: str, langchain: bool, call: tuple[str, str] | None = None
) -> SpanRun:
    """The run a span stands for (see the module's docstring)."""
    run = SpanRun(
        id=span_uuid(span.span_id),
        parent_run_id=span_uuid(span.parent_id) if span.parent_id else None,
        trace_id=span.trace_id,
        run_type="chain",
        name=span.name,
        inputs=None,
        outputs=None,
        start_time=_time(span.start_ns),
        end_time=None if span.end_ns is None else _time(span.end_ns),
        dotted_order=dotted_order,
        error=error_text(span),
    )
    if langchain:
        _langchain_run(span, run)
    else:
        _semconv_run(span, run, call)
    fault = span.attributes.get(names.FAULT)
    if isinstance(fault, str) and run.error:  # agenteval's export: a spec's fault failed it
        run.extra = {**run.extra, INJECTED: fault}
    return run


# -- LangChain's runs, as OpenInference keeps them -------------------------------------------


def _langchain_run(span: Span, run: SpanRun) -> None:
    attributes = span.attributes
    run.run_type = _RUN_TYPES.get(str(attributes.get(names.SPAN_KIND)), "chain")
    metadata = json_value(attributes.get(names.METADATA))
    metadata = metadata if isinstance(metadata, dict) else {}
    run.extra = {"metadata": metadata}
    params = json_value(attributes.get(names.INVOCATION_PARAMETERS))
    if isinstance(params, dict):
        run.extra["invocation_params"] = params
    if run.run_type == "llm" and names.INPUT_VALUE not in attributes:
        # a model run recorded in the GenAI attributes (OpenLLMetry's): read as such, with
        # the run's metadata (its ls_provider and ls_model_name are LangChain's own)
        _model_run(span, run)
        run.extra["metadata"] = {**run.extra["metadata"], **metadata}
        return
    inputs = _io(attributes, names.INPUT_VALUE, names.INPUT_MIME)
    outputs = _io(attributes, names.OUTPUT_VALUE, names.OUTPUT_MIME)
    if run.run_type == "tool":
        run.name = str(first(attributes, names.TOOL_NAME_READ) or span.name)
        run.inputs = (
            inputs if isinstance(inputs, dict) else {"input": "" if inputs is None else inputs}
        )
        run.outputs = {"output": outputs}
    else:
        run.inputs = inputs if inputs is not None else {}
        run.outputs = outputs
    run.prompt_tokens = first(attributes, names.INPUT_TOKENS_READ)
    run.completion_tokens = first(attributes, names.OUTPUT_TOKENS_READ)


def _io(attributes: dict[str, Any], value_key: str, mime_key: str) -> Any:
    """An OpenInference input or output: JSON read back (LangChain's message dumps as plain
    message dumps), else the text as it is."""
    value = attributes.get(value_key)
    parsed = json_value(value)
    if parsed is value and attributes.get(mime_key) != "application/json":
        return value
    return _plain_messages(parsed)


def _plain_messages(value: Any) -> Any:
    """``messages_to_dict``'s ``{"type", "data"}`` form as the plain dump the replay reads."""
    if isinstance(value, list):
        return [_plain_messages(v) for v in value]
    if not isinstance(value, dict):
        return value
    if is_message_dump(value):
        data = value["data"]
        return {**{k: _plain_messages(v) for k, v in data.items()}, "type": value["type"]}
    return {k: _plain_messages(v) for k, v in value.items()}


# -- spans in the GenAI conventions or OpenInference's, outside LangChain ------------------------


def _semconv_run(span: Span, run: SpanRun, call: tuple[str, str] | None) -> None:
    """``call`` is the model's tool call (id, name) the span answered, when it is a tool or
    transfer span whose call :func:`call_links` found."""
    kind = kind_of(span)
    attributes = span.attributes
    if kind == "agent":
        run.name = agent_of(span) or span.name
        run.extra = {"metadata": {"lc_agent_name": run.name}}
    elif kind == "model":
        _model_run(span, run)
    elif kind in ("tool", "transfer"):
        run.run_type = "tool"
        run.name = str(first(attributes, names.TOOL_NAME_READ) or (call[1] if call else span.name))
        given = first(attributes, names.TOOL_ARGUMENTS_READ)
        args = json_value(given if given is not None else attributes.get(names.INPUT_VALUE))
        if kind == "transfer":
            args = {}
        run.inputs = (
            args if isinstance(args, dict) else {"input": "" if args is None else str(args)}
        )
        call_id = first(attributes, names.TOOL_CALL_ID_READ) or (call[0] if call else None)
        said = first(attributes, names.TOOL_RESULT_READ)
        target = transfer_target(span)
        handed = attributes.get(names.TOOL_KIND) == "handoff"  # agenteval's export says so
        if target is not None and (
            handed or attributes.get(names.TRANSFER_MODE) != names.RETURN_TO_CALLER
        ):
            # control passed on (a coordinator's handoff tool also passes it, to have it
            # back by an edge): as a handoff tool's Command says it, with the tool's
            # message when the span has its text
            update = None
            if isinstance(said, str):
                message = {"type": "tool", "content": said, "tool_call_id": str(call_id or "")}
                update = {"messages": [{**message, "name": run.name}]}
            result: Any = {"graph": "__parent__", "update": update, "resume": None, "goto": target}
        else:
            result = said if said is not None else attributes.get(names.OUTPUT_VALUE)
            result = result if isinstance(result, str) or result is None else json.dumps(result)
        run.outputs = {"output": result}
        if call_id is not None:
            run.extra = {"tool_call_id": str(call_id)}


def transfer_target(span: Span) -> str | None:
    """The agent a span hands control to: its ``gen_ai.transfer`` target, or the output of
    OpenInference's handoff span."""
    attributes = span.attributes
    if attributes.get(names.TRANSFER_MODE) is not None:
        target = first(attributes, names.TRANSFER_TARGET_READ)
        return str(target) if target else None
    if attributes.get(names.TOOL_KIND) == "handoff":  # agenteval's export, no transfer said
        target = attributes.get(names.TOOL_TARGET)
        return str(target) if target else None
    if kind_of(span) == "transfer":
        target = attributes.get(names.OUTPUT_VALUE)
        return target if isinstance(target, str) and target else None
    return None


def call_links(spans: list[Span]) -> dict[str, tuple[str, str]]:
    """The model tool call (id, name) each tool or transfer span answered, where the span
    does not say: among the spans under one parent, in start order, a tool span answers the
    earliest unanswered call of its tool's name a model span there made; the transfer spans
    (which name no tool) the calls no tool span answered, in order, when there are as many."""
    children: dict[str | None, list[Span]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(span.parent_id, []).append(span)
    links: dict[str, tuple[str, str]] = {}
    for siblings in children.values():
        asked: list[tuple[str, str]] = []  # (id, name), unanswered, in the order asked
        transfers: list[Span] = []
        for span in siblings:
            kind = kind_of(span)
            if kind == "model":
                for call in output_message(span.attributes)["tool_calls"]:
                    if call.get("id"):
                        asked.append((str(call["id"]), str(call["name"])))
            elif kind == "tool":
                given = first(span.attributes, names.TOOL_CALL_ID_READ)
                name = str(first(span.attributes, names.TOOL_NAME_READ))
                found = next(
                    (a for a in asked if (a[0] == str(given) if given else a[1] == name)), None
                )
                if given is not None:  # answered by its own id: no link needed
                    if found is not None:
                        asked.remove(found)
                    continue
                if found is not None:
                    asked.remove(found)
                    links[span.span_id] = found
            elif kind == "transfer":
                transfers.append(span)
        if transfers and len(transfers) == len(asked):
            for span, call in zip(transfers, asked, strict=True):
                links[span.span_id] = call
    return links


def _model_run(span: Span, run: SpanRun) -> None:
    """A chat model run: the messages it was sent, its answer, and the span's usage."""
    attributes = span.attributes
    run.run_type = "llm"
    model = str(first(attributes, names.MODEL_NAME_READ) or span.name)
    provider = first(attributes, names.PROVIDER_READ)
    run.name = model
    run.extra = {"metadata": {"ls_model_name": model}}
    if provider is not None:
        run.extra["metadata"]["ls_provider"] = str(provider)
    run.inputs = {"messages": [input_messages(attributes)]}
    answer: dict[str, Any] = {
        "type": "ai",
        "content": "",
        "response_metadata": {"model_name": model},
    }
    answer.update(output_message(attributes))
    run.outputs = {"generations": [[{"text": answer["content"], "message": answer}]]}
    usage = _token_usage(attributes)
    if usage is not None:
        run.outputs["llm_output"] = {"token_usage": usage}


def _token_usage(attributes: dict[str, Any]) -> dict[str, Any] | None:
    """The span's usage as OpenAI's ``token_usage`` (input includes cache, output includes
    reasoning), or None when it reports none. The counts are the span's own, checked where
    every model's usage is (``trace.usage``): one the span leaves out, or gives impossibly
    (negative, text, NaN), is unknown there with the reason, never 0."""
    tokens_in = first(attributes, names.INPUT_TOKENS_READ)
    tokens_out = first(attributes, names.OUTPUT_TOKENS_READ)
    if tokens_in is None and tokens_out is None:
        return None
    usage: dict[str, Any] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}
    prompt = {
        key: value
        for key, value in (
            ("cached_tokens", first(attributes, names.CACHE_READ_TOKENS_READ)),
            ("cache_write_tokens", first(attributes, names.CACHE_WRITE_TOKENS_READ)),
        )
        if value is not None
    }
    reasoning = first(attributes, names.REASONING_TOKENS_READ)
    if prompt:
        usage["prompt_tokens_details"] = prompt
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def error_text(span: Span) -> str | None:
    """A failed span's error as a run keeps it: ``Type(message)``. LangGraph's control flow
    (a ``ParentCommand``, an ``interrupt()``) counts though the span's status says OK, as
    instrumentations record it."""
    for name, attributes in span.events:
        if name == names.EXCEPTION_EVENT:
            kind = str(attributes.get(names.EXCEPTION_TYPE) or "Error").rpartition(".")[2]
            message = str(attributes.get(names.EXCEPTION_MESSAGE) or "")
            if kind in _BUBBLING:
                return f"{kind}({message})"
            if span.error:
                return f"{kind}({message!r})"
    if not span.error:
        return None
    return f"Error({span.status_message or 'the span failed'!r})"


def _time(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds / 1e9, tz=UTC)
