"""Routing: did the request reach the agents it should have? Agents come from the trace."""

from __future__ import annotations

from typing import Any

from agenteval_cli.evaluators.registry import register
from agenteval_cli.records import Trace


def _names(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    return [str(v).strip().lower() for v in values or []]


@register(
    "routing_accuracy",
    family="routing",
    reads="outputs.expected_agents; trace agents",
    description="share of expected agents that made at least one model call",
)
def routing_accuracy() -> Any:
    """|expected ∩ invoked| / |expected|, 1.0 when nothing is expected (the seed's rule)."""

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        expected = list(dict.fromkeys(_names(reference_outputs.get("expected_agents"))))
        invoked = _names(trace.agents_invoked)
        if not expected:
            return {"key": "routing_accuracy", "score": 1.0, "comment": "no agents expected"}
        missing = [a for a in expected if a not in invoked]
        score = (len(expected) - len(missing)) / len(expected)
        comment = f"invoked {trace.agents_invoked}"
        if missing:
            comment += f"; missing {missing}"
        return {"key": "routing_accuracy", "score": score, "comment": comment}

    return evaluate
