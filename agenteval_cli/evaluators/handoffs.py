"""Handoff chain length and ping-pong: how much control bounced between agents."""

from __future__ import annotations

from typing import Any

from agenteval_cli.evaluators.registry import register
from agenteval_cli.records import Trace


def chain_length(trace: Trace) -> int:
    """Transitions between agents: a supervisor's return trips count as transitions too."""
    return max(len(trace.agent_path) - 1, 0)


def ping_pong_at(trace: Trace) -> int | None:
    """Index of the first A→B→A bounce in the agent path, or None.

    A return that the graph was designed to make (a ``transfer_back_to_*`` tool, as
    langgraph-supervisor adds after every specialist) is not a bounce.
    """
    designed_returns = {
        (h.source, h.target) for h in trace.handoffs if h.tool.startswith("transfer_back_to_")
    }
    path = trace.agent_path
    for i in range(len(path) - 2):
        a, b, c = path[i], path[i + 1], path[i + 2]
        if a == c and a != b and (b, a) not in designed_returns:
            return i
    return None


@register(
    "handoff_chain_length",
    family="routing",
    reads="trace agent path and handoff tools",
    description="transitions between agents, plus a ping_pong flag for A→B→A bounces",
    keys=("handoff_chain_length", "ping_pong"),
)
def handoff_chain_length() -> Any:
    def evaluate(trace: Trace) -> list[dict]:
        bounce = ping_pong_at(trace)
        path = " → ".join(trace.agent_path) or "(no agent calls)"
        pong_comment = "no bounce"
        if bounce is not None:
            a, b = trace.agent_path[bounce], trace.agent_path[bounce + 1]
            pong_comment = f"{a} → {b} → {a} at step {bounce + 1}"
        return [
            {"key": "handoff_chain_length", "score": float(chain_length(trace)), "comment": path},
            {"key": "ping_pong", "score": bounce is not None, "comment": pong_comment},
        ]

    return evaluate
