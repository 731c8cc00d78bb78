"""Conversation results built by hand: a supervisor routing each turn to an agent, every
figure (agents, handoffs, tokens, scores) set here, so a test knows what it should read back."""

from __future__ import annotations

from agenteval_cli.core.records import (
    HANDOFF,
    Handoff,
    ModelCall,
    Result,
    Score,
    ToolCall,
    Trace,
    Turn,
)


def turn(
    agent: str,
    question: str,
    answer: str,
    *,
    tokens: tuple[int, int] = (10, 5),
    error: str | None = None,
    interrupt: str | None = None,
    comment: str | None = None,
) -> Turn:
    """A turn the supervisor routed to ``agent``: one routing call, one call of the agent."""
    tool = f"transfer_to_{agent}"
    trace = Trace(
        agent_path=["supervisor", agent],
        handoffs=[Handoff("supervisor", agent, tool=tool)],
        tool_calls=[ToolCall("supervisor", tool, {}, kind=HANDOFF, target=agent)],
        model_calls=[
            ModelCall("supervisor", "m-small", 8, 2, 0.01),
            ModelCall(agent, "m-large", *tokens, 0.02),
        ],
        messages=[
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer, "name": agent},
        ],
        latency_s=0.03,
        error=error,
    )
    answered = error is None and interrupt is None
    return Turn(
        inputs={"question": question},
        outputs={"final_response": answer} if answered else None,
        trace=trace,
        scores=[Score("routing_accuracy", 1.0 if answered else None, comment)],
        error=error,
        interrupt=interrupt,
        latency_s=0.03,
    )


def conversation(example_id: str = "c1", *turns: Turn) -> Result:
    """A result of ``turns`` (by default billing, then account): the last turn's answer,
    every turn's calls in one trace, the turn that ended it its error or interrupt."""
    turns = turns or (
        turn("billing", "refund please", "refunded"),
        turn("account", "and my plan?", "upgraded", tokens=(20, 7)),
    )
    last = turns[-1]
    whole = Trace(
        agent_path=[a for t in turns for a in t.trace.agent_path],
        handoffs=[h for t in turns for h in t.trace.handoffs],
        tool_calls=[c for t in turns for c in t.trace.tool_calls],
        model_calls=[m for t in turns for m in t.trace.model_calls],
        messages=[m for t in turns for m in t.trace.messages],
        latency_s=sum(t.latency_s for t in turns),
        error=last.error,
    )
    return Result(
        example_id,
        0,
        outputs=last.outputs,
        trace=whole,
        scores=[Score("routing_accuracy", 1.0, f"mean of {len(turns)} turns")],
        error=last.error,
        latency_s=whole.latency_s,
        interrupt=last.interrupt,
        turns=list(turns),
    )
