"""What ``gen_ai.transfer.*`` attributes say about control moving between agents.

The trace's handoffs are its changes of agent, found by the tracer as for a local run; a
transfer never adds one. A transfer recorded on a tool span (``gen_ai.transfer.mode`` with
its target, ``gen_ai.transfer.target.agent.name``) says more about the agent it runs under:

- ``return_to_caller``: the agent delegated to have control back, a coordinator (it regains
  control by design, so the return is no ping-pong);
- either mode: the handoff to the target is that tool's (``via`` ``tool``), where the graph's
  edges would otherwise be its only explanation.

``pass_control`` on a tool span also makes the tool a handoff tool
(:func:`agenteval_cli.otel.ingest.runs.transfer_target`). A tool's name alone (``transfer_to_x``)
is never read as a handoff.
"""

from __future__ import annotations

from dataclasses import dataclass

from agenteval_cli.core.records import Handoff
from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.attributes import first
from agenteval_cli.otel.ingest.otlp import Span
from agenteval_cli.otel.ingest.runs import agent_of

__all__ = ["Transfer", "coordinators_of", "explain", "transfers_of"]


@dataclass(frozen=True)
class Transfer:
    source: str
    target: str
    mode: str
    tool: str  # the tool span that carried it


def transfers_of(spans: list[Span]) -> list[Transfer]:
    """Every transfer the tool spans of one request record, in start order."""
    by_id = {s.span_id: s for s in spans}
    found: list[Transfer] = []
    for span in sorted(spans, key=lambda s: s.start_ns):
        attributes = span.attributes
        mode = attributes.get(names.TRANSFER_MODE)
        target = first(attributes, names.TRANSFER_TARGET_READ)
        tool = first(attributes, names.TOOL_NAME_READ)
        if mode is None or target is None or tool is None:
            continue  # no transfer: its agent is not looked for (a walk up a deep trace)
        source = _enclosing_agent(span, by_id)
        if source is not None:
            found.append(Transfer(source, str(target), str(mode), str(tool)))
    return found


def coordinators_of(transfers: list[Transfer]) -> list[str]:
    """Agents that delegated to have control back: they regain it by design."""
    return list(dict.fromkeys(t.source for t in transfers if t.mode == names.RETURN_TO_CALLER))


def explain(handoffs: list[Handoff], transfers: list[Transfer]) -> None:
    """Mark each handoff the graph's edges would explain, which a transfer says a tool
    passed, as passed by that tool."""
    said = {(t.source, t.target): t for t in transfers}
    for handoff in handoffs:
        transfer = said.get((handoff.source, handoff.target))
        if transfer is not None and handoff.via == "edge":
            handoff.via = "tool"
            handoff.tool = transfer.tool


def _enclosing_agent(span: Span, by_id: dict[str, Span]) -> str | None:
    """The agent a span runs under: its nearest ancestor that is an agent span."""
    seen: set[str] = set()
    current = by_id.get(span.parent_id) if span.parent_id else None
    while current is not None and current.span_id not in seen:
        seen.add(current.span_id)
        name = agent_of(current)
        if name is not None:
            return name
        current = by_id.get(current.parent_id) if current.parent_id else None
    return None
