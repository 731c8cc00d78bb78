"""A conversation's trace: the traces of its turns, one call each, as one.

The agent path runs on from turn to turn (a follow-up answered by the agent that answered
the turn before is one step, as consecutive calls of one agent are within a call); the
handoffs, tool calls and model calls follow each other in order; the messages are the
conversation's transcript, each message once, although a later turn's trace opens with the
conversation so far (a checkpointer's state, or the history sent to a graph without one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenteval_cli.core.records import Handoff, Trace


def merge_turn_traces(traces: Sequence[Trace]) -> Trace:
    """One trace of the turns' ``traces``, in order; latency is their sum. ``error`` is
    left for the caller, which knows which turn ended the conversation."""
    merged = Trace()
    skills: list[str] | None = None
    for trace in traces:
        offset = len(merged.handoffs)
        merged.handoffs += [_shifted(handoff, offset) for handoff in trace.handoffs]
        merged.agent_path += [
            agent
            for index, agent in enumerate(trace.agent_path)
            if index > 0 or not merged.agent_path or merged.agent_path[-1] != agent
        ]
        merged.tool_calls += trace.tool_calls
        merged.model_calls += trace.model_calls
        merged.messages += _new_messages(merged.messages, trace.messages)
        merged.latency_s += trace.latency_s
        merged.coordinators += [c for c in trace.coordinators if c not in merged.coordinators]
        if trace.skills is not None:
            skills = [*(skills or []), *(s for s in trace.skills if s not in (skills or []))]
    merged.skills = skills
    merged.started_at = next((t.started_at for t in traces if t.started_at is not None), None)
    merged.untraced = _untraced(traces)
    merged.unattributed = next((t.unattributed for t in traces if t.unattributed), None)
    merged.schema = min((trace.schema for trace in traces), default=merged.schema)
    return merged


def _shifted(handoff: Handoff, offset: int) -> Handoff:
    """A turn's handoff with ``after`` pointing into the merged list (a copy)."""
    return Handoff(
        handoff.source,
        handoff.target,
        handoff.tool,
        handoff.via,
        handoff.parallel,
        [index + offset for index in handoff.after],
        received=handoff.received,
    )


def _new_messages(transcript: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[Any]:
    """The messages of a turn the transcript does not have yet. A turn that opens with the
    conversation's first message carries the conversation so far: its messages up to the
    last one found, in order, in the transcript are that history and left out (a message
    of it the transcript lacks, such as a resume rebuilt as a user message, stands for what
    the transcript already holds); any other turn's are all new.

    A message is known by its role, text and tool calls, whatever else it carries: history
    rebuilt from agenteval's ``history`` form has no agent names or ids."""
    if not transcript or not messages or not _same(transcript[0], messages[0]):
        return list(messages)
    position = 0  # where the next known message may be in the transcript
    known = 0  # how many of the turn's messages are history
    for index, message in enumerate(messages):
        found = next(
            (at for at in range(position, len(transcript)) if _same(transcript[at], message)),
            None,
        )
        if found is not None:
            position, known = found + 1, index + 1
    return list(messages[known:])


def _same(known: dict[str, Any], message: dict[str, Any]) -> bool:
    """Whether two messages are one: the same role, text and tool calls (ids compared where
    both have them), the agent's name and the rest left out."""
    if (known.get("role"), known.get("content")) != (message.get("role"), message.get("content")):
        return False
    if bool(known.get("tool_calls")) != bool(message.get("tool_calls")):
        return False
    for key in ("tool_calls", "tool_call_id"):
        if key in known and key in message and known[key] != message[key]:
            return False
    return True


def _untraced(traces: Sequence[Trace]) -> str | None:
    """Why the conversation has no trace to speak of: every turn's reason when none was
    traced; the first untraced turn named when only some were (their figures are unknown)."""
    reasons = [(number, trace.untraced) for number, trace in enumerate(traces, 1)]
    untraced = [(number, why) for number, why in reasons if why is not None]
    if not untraced:
        return None
    if len(untraced) == len(traces):
        return untraced[0][1]
    number, why = untraced[0]
    return f"turn {number}: {why}"
