"""Skills: did the request load the skills it should have? Skills come from the trace, as
the target's declared ``skill_tools`` loaded them (LangChain's *skills* pattern: one agent
loads a skill's instructions into its context on demand, through a ``load_skill`` tool)."""

from __future__ import annotations

from typing import Any

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.registry import register
from agenteval_cli.evaluators.routing import agent_names, expected_share
from agenteval_cli.metrics.registry import metric

NO_SKILL_TOOLS = "the target declares no skill_tools, so which skills it loaded is unknown"


@register(
    "skill_accuracy",
    family="routing",
    reads="outputs.expected_skills; trace skills (the target's skill_tools)",
    references=("expected_skills",),
    description="share of expected skills that a skill tool loaded",
    metrics=[metric("skill_accuracy", "skill accuracy", fmt="percent")],
    needs_answer=False,
)
def skill_accuracy() -> Any:
    """|expected ∩ loaded| / |expected| over ``expected_skills`` (names compared
    case-insensitively), 1.0 when none are expected. Null, with the reason, when the target
    declares no ``skill_tools`` or the result is untraced: what it loaded is unknown."""

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        if trace.untraced:
            return {
                "key": "skill_accuracy",
                "score": None,
                "comment": f"untraced: {trace.untraced}",
            }
        if trace.skills is None:
            return {"key": "skill_accuracy", "score": None, "comment": NO_SKILL_TOOLS}
        return expected_share(
            "skill_accuracy",
            reference_outputs.get("expected_skills"),
            agent_names(trace.skills),
            seen=f"loaded {trace.skills}",
            nothing_expected="no skills expected",
        )

    return evaluate
