"""Recorded traces whose model calls sit under no agent the spans name are refused, not
scored, when the rows expect agents.

Routing, handoffs and the per-agent figures all come from the agent each model call is
attributed to. A model call under no agent span (or only under a workflow's, which
OpenLLMetry marks ``invoke_agent`` too) gets a name from the replay, its model's or the
target's, which no span recorded: its row would score routing 0, or a handoff to a model,
a confident wrong figure. When the rows name the agents they expect, the import stops with
one line naming what is missing instead. Rows that expect no agents are scored as they are,
and so are traces the reader had to mend (a parent missing, a cycle), which it says once:
that is a trace cut short, not a producer whose layout names no agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example
from agenteval_cli.evaluators.routing import agent_names

if TYPE_CHECKING:
    from agenteval_cli.otel.ingest.requests import RecordedRequest

__all__ = ["check_attributed"]

HINT = (
    "record an agent span around each agent's model calls: gen_ai.operation.name "
    "invoke_agent with gen_ai.agent.name, or OpenInference's AGENT span with agent.name; "
    "see docs/otel.md#import"
)


def check_attributed(
    examples: Sequence[Example], by_row: Mapping[str, Sequence[RecordedRequest]]
) -> None:
    """Raise when a row that expects agents is answered by a trace with a model call whose
    agent (and every team on its path) no span of the trace names."""
    expected: dict[str, None] = {}
    unnamed: list[tuple[RecordedRequest, str]] = []  # (request, the agent it was given)
    calls = 0
    for example in examples:
        wanted = agent_names(example.outputs.get("expected_agents"))
        if not wanted:
            continue
        expected.update(dict.fromkeys(wanted))
        for request in by_row.get(example.id) or []:
            if request.notes:  # a trace cut short or cyclic: said already, its spans mended
                continue
            for call in request.trace.model_calls:
                calls += 1
                if not request.named_agents & {*call.path, call.agent}:
                    unnamed.append((request, call.agent))
    if not unnamed:
        return
    first = min((request for request, _ in unnamed), key=lambda r: r.start_ns)
    given = sorted({agent for _, agent in unnamed if agent})
    shown = ", ".join(list(expected)[:5]) + (", ..." if len(expected) > 5 else "")
    file, _, line = first.origin.rpartition(":")
    raise UserError(
        f"{len(unnamed)} of {calls} model calls sit under no agent span (trace "
        f"{first.trace_id} first; they would read as {', '.join(given[:3]) or 'no agent'}), "
        f"and the rows expect agents ({shown}): routing and handoffs cannot be scored",
        file=file or first.origin,
        line=int(line) if line.isdigit() else None,
        hint=HINT,
    )
