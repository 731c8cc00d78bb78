"""What the spans say about control moving between agents, outside LangChain.

The trace's handoffs are its changes of agent, found by the tracer as for a local run; the
spans can say more about them, never add one a change of agent does not show:

- ``gen_ai.transfer.mode`` on a span, with its target (``gen_ai.transfer.target.agent.name``):
  the agent the span runs under handed control to the target, to have it back
  (``return_to_caller``: a coordinator's delegation) or for good (``pass_control``);
- OpenInference's handoff span (a ``TOOL`` span with no tool name, the source agent as its
  input and the target as its output, as the OpenAI Agents SDK's handoffs are recorded);
- ``graph.node.parent_id`` on an agent span: the agent that handed it control.

A tool's name alone (``transfer_to_x``) is never read as a handoff.
"""

from __future__ import annotations

from dataclasses import dataclass

from agenteval_cli.core.records import Handoff
from agenteval_cli.otel import conventions as c
from agenteval_cli.otel.otlp import Span
from agenteval_cli.otel.runs import agent_of, kind_of

__all__ = ["Transfer", "explain", "transfers_of"]


@dataclass(frozen=True)
class Transfer:
    source: str
    target: str
    mode: str | None = None  # return_to_caller, pass_control, or not said
    tool: str = ""  # the tool span that carried it, if one did


def transfers_of(spans: list[Span]) -> list[Transfer]:
    """Every transfer the spans of one request record, in start order."""
    by_id = {s.span_id: s for s in spans}
    found: list[Transfer] = []
    for span in sorted(spans, key=lambda s: s.start_ns):
        attributes = span.attributes
        mode = attributes.get(c.TRANSFER_MODE)
        target = c.first(attributes, c.TRANSFER_TARGET)
        source = _enclosing_agent(span, by_id)
        if mode is not None and target is not None and source is not None:
            tool = c.first(attributes, c.TOOL_NAME)
            found.append(Transfer(source, str(target), str(mode), str(tool or "")))
        elif kind_of(span) == "transfer":
            given_source = attributes.get(c.INPUT_VALUE) or source
            given_target = attributes.get(c.OUTPUT_VALUE)
            if isinstance(given_source, str) and isinstance(given_target, str) and given_target:
                found.append(Transfer(given_source, given_target))
        elif kind_of(span) == "agent" and attributes.get(c.HANDED_OVER_BY):
            found.append(Transfer(str(attributes[c.HANDED_OVER_BY]), agent_of(span) or ""))
    return found


def coordinators_of(transfers: list[Transfer]) -> list[str]:
    """Agents that delegated to have control back: they regain it by design."""
    return list(dict.fromkeys(t.source for t in transfers if t.mode == c.RETURN_TO_CALLER))


def explain(handoffs: list[Handoff], transfers: list[Transfer]) -> None:
    """Mark each handoff the graph's edges would explain, which a tool span's transfer
    attributes say a tool passed, as passed by that tool (``via`` ``tool``)."""
    said = {(t.source, t.target): t for t in transfers}
    for handoff in handoffs:
        transfer = said.get((handoff.source, handoff.target))
        if transfer is not None and transfer.tool and handoff.via == "edge":
            handoff.via = "tool"
            handoff.tool = transfer.tool


def _enclosing_agent(span: Span, by_id: dict[str, Span]) -> str | None:
    """The agent a span runs under: itself if it is an agent span, else its nearest
    ancestor that is one."""
    seen: set[str] = set()
    current: Span | None = span
    while current is not None and current.span_id not in seen:
        seen.add(current.span_id)
        name = agent_of(current)
        if name is not None:
            return name
        current = by_id.get(current.parent_id) if current.parent_id else None
    return None
