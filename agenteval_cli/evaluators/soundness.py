"""Process soundness, after the third seed: a correct answer reached through an unsound process
(a skipped fraud check, wasted steps) is flagged rather than hidden inside one passing score.

Written by hand: openevals has no notion of required tools or wasted steps. Tools come from
the trace (every tool call the callbacks saw), so graphs need no changes.

- ``required_tools``: every tool in ``outputs.required_tools`` (or the YAML ``tools``) was
  called at least once and succeeded: a tool that failed every time (it raised, or answered
  ``status="error"``) or never ran is not used. A handoff or an agent called as a tool
  counts when the list names it.
- ``unnecessary_steps``: tool calls that were not needed, i.e. an exact repeat (same tool,
  same arguments) of an earlier call that succeeded, or a call to a tool outside the expected
  set (``outputs.expected_tools`` ∪ YAML ``allowed``, plus the required tools) when one is
  given. A retry after a failed call is no repeat. Only work counts: routing calls
  (handoffs, agents called as tools, by the trace's tool-call kinds: see
  :func:`~agenteval_cli.evaluators.trajectory.routing_calls`) are scored by the routing
  family, and the model's structured output (kind ``output``) and calls no tool ran are no
  steps.
- ``soundness``: outcome_correct, used_required_tools, unnecessary_steps, trajectory_sound
  (required tools used and fewer than ``max_unnecessary`` wasted steps) and
  correct_but_unsound, one result per example.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agenteval_cli.core.records import NOT_RUN, Trace
from agenteval_cli.evaluators.coverage import response_text
from agenteval_cli.evaluators.registry import register
from agenteval_cli.evaluators.trajectory import routing_calls
from agenteval_cli.metrics.registry import metric


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out = []
    for item in value:
        out.append(str(item["name"]) if isinstance(item, Mapping) and "name" in item else str(item))
    return out


def required_for(reference: Mapping[str, Any], configured: list[str] | None) -> list[str]:
    """Required tools: the example's own list wins over the YAML default."""
    listed = reference.get("required_tools")
    return list(dict.fromkeys(_list(listed if listed is not None else configured)))


def tools_called(trace: Trace) -> list[str]:
    """Every tool called that succeeded, routing calls included: a requirement can only name
    a handoff or an agent tool on purpose, and ``fraud_check`` run as an agent tool is still
    the check made."""
    return [c.name for c in trace.tool_calls if c.succeeded]


def check_required(reference: Mapping[str, Any], trace: Trace, configured: list[str] | None):
    """The required tools and those not used (never called, or no call succeeded)."""
    required = required_for(reference, configured)
    called = set(tools_called(trace))
    missing = [t for t in required if t not in called]
    return required, missing


def required_comment(required: list[str], missing: list[str], trace: Trace) -> str:
    """``called all of [...]``, else what was skipped and what failed every time."""
    if not missing:
        return f"called all of {required}"
    tried = {c.name for c in trace.tool_calls if c.status != NOT_RUN}
    failed = [t for t in missing if t in tried]
    skipped = [t for t in missing if t not in tried]
    parts = [f"skipped {skipped}"] if skipped else []
    parts += [f"failed every time {failed}"] if failed else []
    return "; ".join(parts)


def count_unnecessary(
    reference: Mapping[str, Any], trace: Trace, required: list[str], allowed: list[str] | None
) -> tuple[int, str]:
    """Wasted tool calls and a comment naming them."""
    expected = set(_list(reference.get("expected_tools"))) | set(allowed or [])
    if expected:
        expected |= set(required)
    is_routing = routing_calls(trace)
    seen: set[str] = set()  # the calls that succeeded so far
    repeats, outside = [], []
    for call in trace.tool_calls:
        if is_routing(call) or not call.is_work or call.status == NOT_RUN:
            continue
        signature = call.name + json.dumps(call.args, sort_keys=True, default=str)
        if signature in seen:
            repeats.append(call.name)
        elif expected and call.name not in expected:
            outside.append(call.name)
        if call.succeeded:
            seen.add(signature)
    parts = [f"repeated {repeats}"] if repeats else []
    parts += [f"not needed {outside}"] if outside else []
    return len(repeats) + len(outside), "; ".join(parts) or "no wasted tool calls"


UNNECESSARY_STEPS = metric(
    "unnecessary_steps", "unnecessary steps", lower=True, fmt="count", across_turns="sum"
)


@register(
    "required_tools",
    family="trajectory",
    reads="outputs.required_tools (or the YAML tools); trace tool calls",
    optional_references=("required_tools",),
    description="true when every required tool was called and succeeded (a fraud check, say)",
    metrics=[metric("required_tools", "required tools used", fmt="percent", binary=True)],
    example="- {name: required_tools, tools: [fraud_check]}",
    needs_answer=False,
)
def required_tools(*, tools: list[str] | None = None, name: str = "required_tools") -> Any:
    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        required, missing = check_required(reference_outputs or {}, trace, tools)
        if not required:
            return {"key": name, "score": True, "comment": "no tools required"}
        comment = required_comment(required, missing, trace)
        return {"key": name, "score": not missing, "comment": comment}

    return evaluate


@register(
    "unnecessary_steps",
    family="trajectory",
    reads="outputs.expected_tools / required_tools (optional); trace tool calls",
    optional_references=("expected_tools", "required_tools"),
    description="count of repeated work calls (not retries) and calls outside the expected set",
    example="- {name: unnecessary_steps, allowed: [lookup_invoice]}",
    metrics=[UNNECESSARY_STEPS],
    needs_answer=False,
)
def unnecessary_steps(*, allowed: list[str] | None = None, tools: list[str] | None = None) -> Any:
    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        required = required_for(reference_outputs or {}, tools)
        count, comment = count_unnecessary(reference_outputs or {}, trace, required, allowed)
        return {"key": "unnecessary_steps", "score": float(count), "comment": comment}

    return evaluate


def outcome_check(
    kind: str, answer_key: str
) -> Any:  # (outputs, reference) -> (bool | None, comment)
    """The outcome half of soundness: an exact answer, or every must_mention term present."""
    if kind == "exact":

        def exact(outputs: Mapping[str, Any], reference: Mapping[str, Any]):
            if answer_key not in reference:
                return None, f"no outputs.{answer_key} in the example to compare with"
            got = (outputs or {}).get(answer_key)
            if got is None and answer_key != "final_response":
                got = (outputs or {}).get("final_response")
            want = reference[answer_key]
            same = _canonical(got) == _canonical(want)
            return same, "answer matches" if same else f"answer {got!r} != expected {want!r}"

        return exact
    if kind == "must_mention":

        def mentions(outputs: Mapping[str, Any], reference: Mapping[str, Any]):
            terms = _list(reference.get("must_mention"))
            text = response_text(dict(outputs or {}))
            missing = [t for t in terms if t.lower() not in text]
            return not missing, f"missing {missing}" if missing else "all terms mentioned"

        return mentions
    raise ValueError(f"outcome must be exact, must_mention or judge, got {kind!r}")


def _canonical(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    return json.dumps(value, sort_keys=True, default=str)


SOUNDNESS_METRICS = (  # the outcome parts need the answer; the trajectory parts the trace
    metric("outcome_correct", "outcome correct", fmt="percent", binary=True),
    metric(
        "used_required_tools", "required tools used", fmt="percent", needs_answer=False, binary=True
    ),
    replace(UNNECESSARY_STEPS, needs_answer=False),
    metric("trajectory_sound", "sound trajectory", fmt="percent", needs_answer=False, binary=True),
    metric("correct_but_unsound", "correct but unsound", lower=True, fmt="percent", binary=True),
)


@register(
    "soundness",
    family="trajectory",
    reads="outputs.final_answer / must_mention (or a judge); required_tools; trace tool calls",
    optional_references=("final_answer", "must_mention", "required_tools"),
    description="outcome and process together: correct answers reached unsoundly are flagged",
    metrics=SOUNDNESS_METRICS,
    example="- {name: soundness, outcome: exact, answer_key: final_answer, tools: [fraud_check]}",
)
def soundness(
    *,
    outcome: str = "exact",
    answer_key: str = "final_answer",
    tools: list[str] | None = None,
    allowed: list[str] | None = None,
    max_unnecessary: int = 3,
    judge: dict[str, Any] | None = None,
    pricing: Mapping[str, Any] | None = None,
    base_dir: Any = None,
) -> Any:
    """``outcome: judge`` scores the answer with an llm_judge built from the ``judge`` options."""
    if outcome == "judge":
        from agenteval_cli.evaluators.judge import llm_judge

        if not judge:
            raise ValueError("outcome: judge needs judge: {prompt: ..., model: ...}")
        judged = llm_judge(name="outcome_correct", pricing=pricing, base_dir=base_dir, **judge)

        async def check(outputs, reference, inputs):
            from agenteval_cli.evaluators.invoke import normalize

            [verdict] = normalize(
                await judged(inputs=inputs, outputs=outputs, reference_outputs=reference),
                "outcome_correct",
            )
            score = None if verdict.score is None else bool(verdict.score)
            return score, verdict.comment or ""

    else:
        plain = outcome_check(outcome, answer_key)

        async def check(outputs, reference, inputs):
            return plain(outputs, reference)

    async def evaluate(inputs: dict, outputs: dict, reference_outputs: dict, trace: Trace):
        reference = reference_outputs or {}
        correct, why = await check(outputs, reference, inputs)
        required, missing = check_required(reference, trace, tools)
        wasted, waste_comment = count_unnecessary(reference, trace, required, allowed)
        used = not missing
        sound = used and wasted < max_unnecessary
        tools_comment = required_comment(required, missing, trace)
        lucky = None if correct is None else bool(correct and not sound)
        return [
            {"key": "outcome_correct", "score": correct, "comment": why},
            {"key": "used_required_tools", "score": used, "comment": tools_comment},
            {"key": "unnecessary_steps", "score": float(wasted), "comment": waste_comment},
            {
                "key": "trajectory_sound",
                "score": sound,
                "comment": f"{tools_comment}; {wasted} wasted (limit < {max_unnecessary})",
            },
            {
                "key": "correct_but_unsound",
                "score": lucky,
                "comment": "correct answer through an unsound process" if lucky else None,
            },
        ]

    return evaluate
