"""Handoff chain length and ping-pong: how much control bounced between agents.

Both read the trace's handoffs: every change of agent, in the graph's order, each naming the
handoffs that led to its source (so a bounce is found along one branch, never across
parallel branches).
"""

from __future__ import annotations

import re
from typing import Any

from agenteval_cli.core.records import HANDOFF, NOT_RUN, OK, Handoff, ToolCall, Trace
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


def handoff_label(handoff: Handoff) -> str:
    """``source → target (tool)``, as the comments name a handoff."""
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


def _facts_error(facts: Any) -> str | None:
    if facts is None or isinstance(facts, list):
        return None
    if isinstance(facts, dict) and all(isinstance(v, list) for v in facts.values()):
        return None
    return "outputs.handoff_facts is neither a list nor {agent: [...]}"


def handoff_losses(trace: Trace, facts: Any = None) -> list[tuple[int, Handoff, str | None]]:
    """Each handoff checked, in order, as ``(index, handoff, what it lost)``: None when its
    target's first own model call was given the request (its human message, or every fact
    the row lists for that target). A handoff with no terms to check, or whose target made
    no model call, is left out."""
    if trace.agents_unknown is not None or _facts_error(facts) is not None:
        return []
    if facts is None and not trace.request:
        return []
    found: list[tuple[int, Handoff, str | None]] = []
    for index, handoff in enumerate(trace.handoffs):
        terms = [trace.request or ""] if facts is None else _facts_for(facts, handoff.target)
        if terms is None or handoff.received is None:
            continue
        given = _folded(handoff.received)
        missing = [t for t in terms if _folded(t) not in given]
        if not missing:
            found.append((index, handoff, None))
        elif facts is None:
            found.append((index, handoff, "the human message"))
        else:
            found.append((index, handoff, ", ".join(repr(t) for t in missing)))
    return found


def context_carried(trace: Trace, facts: Any = None) -> dict:
    """``handoff_context``: the share of the request's handoffs whose target's first own
    model call was given the user's request (:func:`handoff_losses`); null with the reason
    when no handoff can be checked."""
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
    bad_facts = _facts_error(facts)
    if bad_facts is not None:
        return {"key": key, "score": None, "comment": bad_facts}
    if facts is None and not trace.request:
        return {
            "key": key,
            "score": None,
            "comment": "no human message was given to the request's first model call",
        }
    checked = handoff_losses(trace, facts)
    unchecked = [
        f"{handoff_label(h)}: {h.target} made no model call of its own"
        for h in trace.handoffs
        if h.received is None and (facts is None or _facts_for(facts, h.target) is not None)
    ]
    if not checked:
        why = "; ".join(unchecked) or "handoff_facts names no agent a handoff went to"
        return {"key": key, "score": None, "comment": why}
    carried = sum(1 for _, _, lost in checked if lost is None)
    lost = [f"{handoff_label(h)} lost {what}" for _, h, what in checked if what is not None]
    parts = [f"{carried}/{len(checked)} handoffs carried the request", *lost, *unchecked]
    return {"key": key, "score": carried / len(checked), "comment": "; ".join(parts)}


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


# An announced handoff, in the present or future ("I'll transfer you to", "transferring you
# to"), not a past one ("I transferred you to billing earlier")
_VERBS = r"(?:transfer|hand|pass|connect|route|escalate|forward|redirect)"
_ANNOUNCE = (
    rf"(?:\b(?:i['’]ll|i will|let me|(?:i['’]m|i am) going to|will)\s+(?:now\s+)?{_VERBS}"
    r"|\b(?:transferring|handing|passing|connecting|routing|escalating|forwarding|redirecting))"
    r"\b[^.!?\n]{0,60}?\b(?:to|with)\s+(?:the\s+|our\s+)?"
)


def _announced(text: str, agents: set[str]) -> list[str]:
    """The agents ``text`` says it hands over to ("I'll transfer you to billing")."""
    said = []
    for agent in sorted(agents):
        spelt = "|".join(re.escape(n) for n in {agent, agent.replace("_", " ")})
        if re.search(_ANNOUNCE + rf"(?:{spelt})\b", text, re.IGNORECASE):
            said.append(agent)
    return said


def _named(call: ToolCall) -> str | None:
    """The agent a handoff call hands over to: its target, else the one its name names."""
    if call.target:
        return call.target
    for prefix in _HANDOFF_PREFIXES:
        if call.name.startswith(prefix):
            return call.name[len(prefix) :] or None
    return None


_HANDOFF_PREFIXES = ("transfer_back_to_", "transfer_to_")


def clean_defects(trace: Trace, agents: frozenset[str] = frozenset()) -> list[str]:
    """Every defect of the request's handoffs, named: a handoff call not answered, one whose
    target never ran after it or is no agent of the graph, one made twice in a reply, and an
    agent saying it hands over with no handoff following."""
    ran = set(trace.agents_invoked)
    known = ran | set(agents) | set(trace.coordinators)
    calls = [
        t for t in trace.tool_calls if t.kind == HANDOFF or t.name.startswith(_HANDOFF_PREFIXES)
    ]
    # a handoff tool that ran passed control to a node of the graph, whether or not it ran
    known |= {t.target for t in calls if t.kind == HANDOFF and t.status == OK and t.target}
    defects = []
    for call in calls:
        target = _named(call)
        where = f"{call.agent}'s {call.name}"
        if call.status != OK:
            answer = "was never run" if call.status == NOT_RUN else "failed"
            defects.append(f"{where} {answer}")
        if target is None:
            continue
        if target not in known:
            defects.append(f"{where} hands off to {target}, no agent of the graph")
        elif call.status == OK and not _ran_after(trace, target, call):
            defects.append(f"{where}: {target} never ran after it")
    names = {t.name for t in calls}
    handed: list[set[str]] = []  # per assistant message, the agents its calls hand off to
    for message in trace.messages:
        if message.get("role") != "assistant":
            continue
        targets = []
        for tool_call in message.get("tool_calls") or []:
            name = (tool_call.get("function") or {}).get("name", "")
            if name in names:
                match = next(t for t in calls if t.name == name)
                targets.append(_named(match) or name)
        for target in sorted({t for t in targets if targets.count(t) > 1}):
            defects.append(f"two handoffs to {target} in one reply")
        handed.append(set(targets))
    by_edge = {h.target for h in trace.handoffs if h.via not in ("tool", "agent_tool")}
    replies = [m for m in trace.messages if m.get("role") == "assistant"]
    for index, message in enumerate(replies):
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        speaker = message.get("name")
        for agent in _announced(text, known - {speaker}):
            later = set().union(*handed[index:])
            if agent not in later and agent not in by_edge:
                defects.append(f'said but didn\'t: "{_quote(text)}" with no handoff to {agent}')
    return defects


def _quote(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _ran_after(trace: Trace, target: str, call: ToolCall) -> bool:
    """Whether ``target`` made a model call after ``call`` started (any call when untimed)."""
    for model in trace.model_calls:
        if model.agent != target and target not in model.path:
            continue
        if call.started_at is None or model.started_at is None:
            return True
        if model.started_at >= call.started_at:
            return True
    return False


@register(
    "handoff_clean",
    family="routing",
    reads="trace handoff calls and replies",
    description="every handoff call answered and its target ran, none twice in a reply, none "
    "to an agent outside the graph, no agent saying it hands over without doing it",
    metrics=[
        metric(
            "handoff_clean",
            "clean handoffs",
            fmt="percent",
            short="clean handoffs",
            abbrev="clean",
            binary=True,
        )
    ],
    example="- {name: handoff_clean, agents: [billing, account]}",
    needs_answer=False,
)
def handoff_clean(*, agents: list[str] | None = None) -> Any:
    """``agents`` names the graph's agents that may not run in a request (an announcement
    naming one, or a handoff to one, is then known to name an agent of the graph)."""
    declared = frozenset(agents or ())

    def evaluate(trace: Trace) -> dict:
        reason = trace.agents_unknown
        if reason is not None:
            return {"key": "handoff_clean", "score": None, "comment": reason}
        defects = clean_defects(trace, declared)
        return {
            "key": "handoff_clean",
            "score": not defects,
            "comment": "; ".join(defects) or "every handoff answered and followed",
        }

    return evaluate
