"""Handoff chain length and ping-pong: how much control bounced between agents.

Both read the trace's handoffs: every change of agent, in the graph's order, each naming the
handoffs that led to its source (so a bounce is found along one branch, never across
parallel branches).
"""

from __future__ import annotations

from typing import Any

from agenteval_cli.core.records import Handoff, Trace
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric


def chain_length(trace: Trace) -> int:
    """Handoffs between agents: a fan-out to ``k`` branches counts ``k``, and so does the join;
    a coordinator's return trips count too."""
    if trace.schema < 2:  # stored before every change of agent was a handoff
        return max(len(trace.agent_path) - 1, 0)
    return len(trace.handoffs)


def ping_pong_at(trace: Trace, coordinators: frozenset[str] = frozenset()) -> int | None:
    """Index of the first handoff that completes a specialist bounce A → B → A, or None.

    A coordinator regaining control (a supervisor, a router, an agent that called another
    as a tool) is no bounce, nor is control passing between parallel branches.
    """
    skip = {c.lower() for c in (*trace.coordinators, *coordinators)}
    if trace.schema < 2:
        return _path_bounce(trace, skip)
    handoffs = trace.handoffs
    for index, back in enumerate(handoffs):
        if back.source.lower() in skip or back.target.lower() in skip:
            continue
        for earlier in back.after:
            there = handoffs[earlier] if 0 <= earlier < len(handoffs) else None
            if there is not None and (there.source, there.target) == (back.target, back.source):
                return index
    return None


def _path_bounce(trace: Trace, skip: set[str]) -> int | None:
    """The rule for traces stored before handoffs were linked: A → B → A in the path."""
    designed = {(h.source, h.target) for h in trace.handoffs if h.tool.startswith("transfer_back")}
    path = trace.agent_path
    for i in range(len(path) - 2):
        a, b, c = path[i], path[i + 1], path[i + 2]
        if a == c and a != b and (b, a) not in designed and b.lower() not in skip:
            return i
    return None


@register(
    "handoff_chain_length",
    family="routing",
    reads="trace handoffs",
    description="handoffs between agents, plus a ping_pong flag for specialist bounces A→B→A",
    metrics=[
        metric(
            "handoff_chain_length",
            "handoff chain length",
            lower=True,
            quantity=True,
            short="handoff chain",
            distribution=True,
            across_turns="sum",
        ),
        metric(
            "ping_pong",
            "ping-pong rate",
            lower=True,
            fmt="percent",
            short="ping-pong",
            abbrev="pong",
            pass_mark="<= 0",
            binary=True,
        ),
    ],
    example="- {name: handoff_chain_length, coordinators: [router]}",
    needs_answer=False,
)
def handoff_chain_length(*, coordinators: list[str] | None = None) -> Any:
    """``coordinators`` adds agents that regain control by design to those the trace found."""
    declared = frozenset(c.lower() for c in coordinators or ())

    def evaluate(trace: Trace) -> list[dict]:
        reason = trace.agents_unknown
        if reason is not None:
            return [
                {"key": "handoff_chain_length", "score": None, "comment": reason},
                {"key": "ping_pong", "score": None, "comment": reason},
            ]
        bounce = ping_pong_at(trace, declared)
        path = " → ".join(trace.agent_path) or "(no agent calls)"
        pong_comment = "no bounce"
        if bounce is not None and trace.schema >= 2:
            back = trace.handoffs[bounce]
            pong_comment = f"{back.target} → {back.source} → {back.target}"
        elif bounce is not None:
            a, b = trace.agent_path[bounce], trace.agent_path[bounce + 1]
            pong_comment = f"{a} → {b} → {a} at step {bounce + 1}"
        return [
            {"key": "handoff_chain_length", "score": float(chain_length(trace)), "comment": path},
            {"key": "ping_pong", "score": bounce is not None, "comment": pong_comment},
        ]

    return evaluate


def _folded(text: str) -> str:
    """Case and runs of whitespace left out of a containment check."""
    return " ".join(text.casefold().split())


def _label(handoff: Handoff) -> str:
    via = f" ({handoff.tool})" if handoff.tool else ""
    return f"{handoff.source} → {handoff.target}{via}"


def _facts_for(facts: Any, target: str) -> list[str] | None:
    """The terms a handoff into ``target`` must carry: the row's list, or its entry for
    ``target`` in a per-agent mapping (None: the mapping does not name it)."""
    if isinstance(facts, dict):
        named = {str(k).casefold(): v for k, v in facts.items()}
        terms = named.get(target.casefold())
        return None if terms is None else [str(t) for t in terms]
    return [str(t) for t in facts]


def context_carried(trace: Trace, facts: Any = None) -> dict:
    """``handoff_context``: the share of the request's handoffs whose target's first own
    model call was given the user's request (its human message, or every fact the row lists
    for that target); null with the reason when no handoff can be checked."""
    key = "handoff_context"
    reason = trace.agents_unknown
    if reason is not None:
        return {"key": key, "score": None, "comment": reason}
    if not trace.handoffs:
        return {"key": key, "score": None, "comment": "no handoff"}
    if all(h.received is None for h in trace.handoffs):
        return {
            "key": key,
            "score": None,
            "comment": "the trace holds no handoff's received input (recorded without it)",
        }
    if facts is not None and not (
        isinstance(facts, list)
        or (isinstance(facts, dict) and all(isinstance(v, list) for v in facts.values()))
    ):
        return {
            "key": key,
            "score": None,
            "comment": "outputs.handoff_facts is neither a list nor {agent: [...]}",
        }
    if facts is None and not trace.request:
        return {
            "key": key,
            "score": None,
            "comment": "no human message was given to the request's first model call",
        }
    carried = checked = 0
    lost, unchecked = [], []
    for handoff in trace.handoffs:
        terms = [trace.request or ""] if facts is None else _facts_for(facts, handoff.target)
        if terms is None:
            continue
        if handoff.received is None:
            unchecked.append(f"{_label(handoff)}: {handoff.target} made no model call of its own")
            continue
        checked += 1
        given = _folded(handoff.received)
        missing = [t for t in terms if _folded(t) not in given]
        if not missing:
            carried += 1
        elif facts is None:
            lost.append(f"{_label(handoff)} lost the human message")
        else:
            lost.append(f"{_label(handoff)} lost {', '.join(repr(t) for t in missing)}")
    if not checked:
        why = "; ".join(unchecked) or "handoff_facts names no agent a handoff went to"
        return {"key": key, "score": None, "comment": why}
    parts = [f"{carried}/{checked} handoffs carried the request", *lost, *unchecked]
    return {"key": key, "score": carried / checked, "comment": "; ".join(parts)}


@register(
    "handoff_context",
    family="routing",
    reads="outputs.handoff_facts, else the turn's human message; trace handoffs' inputs",
    description="share of handoffs whose receiving agent's first own model call was given "
    "the user's request (its human message, or the row's handoff_facts)",
    metrics=[
        metric(
            "handoff_context",
            "handoff context carried",
            fmt="percent",
            short="context carried",
            abbrev="ctx",
        )
    ],
    example="- handoff_context   # with outputs.handoff_facts: [ORD-1182]",
    needs_answer=False,
    optional_references=["handoff_facts"],
)
def handoff_context() -> Any:
    """Reads ``outputs.handoff_facts`` (a list, or ``{agent: [...]}``) when the row has it."""

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        return context_carried(trace, (reference_outputs or {}).get("handoff_facts"))

    return evaluate
