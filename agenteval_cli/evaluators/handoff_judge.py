"""``handoff_judge``: an LLM judge of whether an agent that received a handoff asked the
user again for what it had been given (MAST's information withholding and ignored input
seen from the receiving side: the context arrived, and was not used).

openevals' ``create_llm_as_judge`` with the bundled ``handoff_judge`` prompt (or the spec's),
shown each handoff's receiving agent, the text its first own model call was given, and
what it replied; true when no receiving agent asked again. A request without a handoff
whose received input the trace holds is null with the reason, and no call is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.records import Handoff, Trace
from agenteval_cli.evaluators.judge import (
    JudgeCalls,
    model_kwargs_of,
    prompt_messages,
    run_judge,
)
from agenteval_cli.evaluators.judge_model import key_source, make_chat_model
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric

if TYPE_CHECKING:
    pass

KEY = "handoff_judge"


def receptions(trace: Trace) -> list[dict[str, Any]]:
    """Each handoff whose received input the trace holds: who handed over to whom, what the
    receiving agent was given, and its replies (the text of its assistant messages in the
    transcript's stretch of its work that followed that handoff)."""
    stretches = _stretches(trace)
    first = trace.agent_path[0] if trace.agent_path else None
    seen: dict[str, int] = {}
    found = []
    for handoff in trace.handoffs:
        target = handoff.target
        nth = seen.get(target, 0) + (1 if target == first else 0)
        seen[target] = seen.get(target, 0) + 1
        if handoff.received is None:
            continue
        mine = stretches.get(target, [])
        found.append(_reception(handoff, mine[nth] if nth < len(mine) else []))
    return found


def _reception(handoff: Handoff, replies: list[str]) -> dict[str, Any]:
    return {
        "from": handoff.source,
        "to": handoff.target,
        "given": handoff.received,
        "replies": replies,
    }


def _stretches(trace: Trace) -> dict[str, list[list[str]]]:
    """Per agent, its runs of consecutive assistant messages in the transcript (another
    agent's message ends one), each as the texts it said."""
    found: dict[str, list[list[str]]] = {}
    last: str | None = None
    for message in trace.messages:
        if message.get("role") != "assistant":
            continue
        name = message.get("name")
        if not isinstance(name, str):
            last = None
            continue
        if name != last:
            found.setdefault(name, []).append([])
            last = name
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            found[name][-1].append(content)
    return found


@register(
    KEY,
    family="judge",
    reads="trace handoffs' received inputs, the receiving agents' replies",
    description="LLM judge: no agent that received a handoff asked the user again for what "
    "it had been given (openevals, bundled prompt)",
    metrics=[
        metric(
            KEY,
            "no repeated question after a handoff",
            fmt="percent",
            short="not asked again",
            abbrev="asked",
            binary=True,
        )
    ],
    example='- {name: handoff_judge, model: "openai:gpt-4o-mini"}',
    needs_answer=False,
)
def handoff_judge(
    *,
    model: str,
    prompt: str = "handoff_judge",
    template: str = "auto",
    system: str | None = None,
    use_reasoning: bool = True,
    model_kwargs: dict[str, Any] | None = None,
    base_url: str | None = None,
    name: str = KEY,
    pricing: Mapping[str, Any] | None = None,
    base_dir: Any = None,
) -> Any:
    """``prompt``: the bundled one unless given (it may read ``{trace[request]}`` and
    ``{trace[handoffs]}``: from, to, given, replies)."""
    from openevals.llm import create_async_llm_as_judge

    messages = prompt_messages(prompt, template, system, ("inputs", "trace"), base_dir)
    kwargs = model_kwargs_of(model_kwargs, base_url)
    calls = JudgeCalls(name, key_source(model, kwargs))
    judge = create_async_llm_as_judge(
        prompt=messages,
        judge=make_chat_model(model, kwargs),
        feedback_key=name,
        continuous=False,
        use_reasoning=use_reasoning,
    )

    async def evaluate(inputs: dict, trace: Trace) -> dict:
        reason = trace.agents_unknown
        if reason is not None:
            return {"key": name, "score": None, "comment": reason}
        handed = receptions(trace)
        if not handed:
            why = "no handoff" if not trace.handoffs else "no handoff's received input traced"
            return {"key": name, "score": None, "comment": why}
        view = {"request": trace.request or "", "handoffs": handed}
        return await run_judge(
            judge,
            key=name,
            model=model,
            pricing=pricing,
            continuous=False,
            choices=None,
            calls=calls,
            inputs=inputs,
            trace=view,
        )

    evaluate.score_keys = (name,)  # type: ignore[attr-defined]
    evaluate.judge_calls = calls  # type: ignore[attr-defined]  # a judge: see FirstCalls
    return evaluate
