"""What each kind of agent replies, decided from the conversation alone.

A request names its domains by keywords ("invoice" -> billing, "crash" -> tech, ...);
a specialist's work leaves ``<domain>-result: ...`` in the conversation, so any agent can
tell which parts are done. No policy keeps state between calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from forms.model import Policy, text_of

KEYWORDS = {
    "billing": ("invoice", "refund"),
    "tech": ("crash", "error"),
    "account": ("email", "address"),
    "network": ("wifi", "router"),
}
RESULTS = {
    "billing": "billing-result: invoice INV-42 refunded.",
    "tech": "tech-result: crash fixed by the new update.",
    "account": "account-result: email updated.",
    "network": "network-result: router restarted.",
}
TOOLS = {  # domain -> (tool name, arguments the specialist passes)
    "billing": ("lookup_invoice", {"invoice_id": "INV-42"}),
    "tech": ("run_diagnostics", {"app": "mobile"}),
    "account": ("update_profile", {"field": "email"}),
    "network": ("restart_router", {"site": "home"}),
}
GREETING = "We are open 9 to 5, every weekday."
BOUNCE = "check with tech first"  # a request that makes billing ask tech and finish after
_RESULT = re.compile(r"\b(\w+)-result: [^.]*\.")
NEXT = re.compile(r"NEXT: (\w+)")


def question(messages: Sequence[BaseMessage]) -> str:
    return next((text_of(m) for m in messages if isinstance(m, HumanMessage)), "")


def needed(text: str, among: Iterable[str] = KEYWORDS) -> list[str]:
    """The domains a request names, in the order it names them."""
    lowered = text.lower()
    hits = []
    for domain in among:
        found = [lowered.find(k) for k in KEYWORDS.get(domain, ()) if k in lowered]
        if found:
            hits.append((min(found), domain))
    return [domain for _, domain in sorted(hits)]


def done(messages: Sequence[BaseMessage], domain: str) -> bool:
    return any(f"{domain}-result:" in text_of(m) for m in messages)


def called(messages: Sequence[BaseMessage], tool: str) -> bool:
    return any(
        call["name"] == tool for m in messages if isinstance(m, AIMessage) for call in m.tool_calls
    )


def finished_by(messages: Sequence[BaseMessage], agent: str) -> bool:
    """The agent wrote its closing reply (``<agent> done: ...``) already."""
    return any(
        isinstance(m, AIMessage) and text_of(m).startswith(f"{agent} done:") for m in messages
    )


def results(messages: Sequence[BaseMessage]) -> list[str]:
    """Every distinct ``<domain>-result: ...`` sentence in the conversation, first seen first."""
    found: dict[str, None] = {}
    for m in messages:
        if isinstance(m, AIMessage | ToolMessage):
            found.update(dict.fromkeys(match.group(0) for match in _RESULT.finditer(text_of(m))))
    return list(found)


def call(name: str, args: dict[str, Any] | None = None) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": dict(args or {}), "id": None}])


def transfer(agent: str) -> str:
    return f"transfer_to_{agent}"


def specialist(
    name: str,
    *,
    use_tool: bool = True,
    peers: Sequence[str] = (),
    handoff: Callable[[str], str] = transfer,
) -> Policy:
    """A specialist: does its domain's work (with its tool, or by itself), then in a swarm
    hands on to a peer whose part is not done, else closes with what was found."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        want = needed(question(messages))
        tool, args = TOOLS[name]
        if name in want and use_tool and not called(messages, tool):
            return call(tool, args)
        if peers:
            bouncing = BOUNCE in question(messages).lower()
            if (
                bouncing
                and name == "tech"
                and "billing" in peers
                and not finished_by(messages, "billing")
            ):
                return call(handoff("billing"))
            for other in want:
                if other != name and other in peers and not done(messages, other):
                    return call(handoff(other))
        if not want:
            return AIMessage(GREETING)
        found = results(messages)
        if not use_tool and RESULTS[name] not in found:
            found.append(RESULTS[name])
        return AIMessage(f"{name} done: " + " ".join(found))

    return policy


def supervisor(
    agents: Sequence[str],
    *,
    handoff: Callable[[str], str] = transfer,
    teams: dict[str, Sequence[str]] | None = None,
    args: Callable[[list[BaseMessage]], dict[str, Any]] | None = None,
    parallel: bool = False,
) -> Policy:
    """A supervisor: hands each open part to its agent, one at a time (or all at once with
    ``parallel``), in the order the request names them, then sums up. With ``teams`` the
    agents are teams (name -> member domains): a team is open while any of its members'
    parts is."""
    members = dict(teams or {agent: [agent] for agent in agents})

    def policy(messages: list[BaseMessage]) -> AIMessage:
        want = needed(question(messages))
        if not any(d in want for team in members.values() for d in team):
            return AIMessage(GREETING)
        first = {
            a: min((want.index(d) for d in members[a] if d in want), default=99) for a in agents
        }
        open_agents = [
            agent
            for agent in sorted(agents, key=first.__getitem__)
            if any(d in want and not done(messages, d) for d in members[agent])
        ]
        if parallel and len(open_agents) > 1:
            return AIMessage(
                "",
                tool_calls=[
                    {"name": handoff(a), "args": args(messages) if args else {}, "id": None}
                    for a in open_agents
                ],
            )
        if open_agents:
            return call(handoff(open_agents[0]), args(messages) if args else None)
        return AIMessage("Summary: " + " ".join(results(messages)))

    return policy


def agent_tools_supervisor(agents: Sequence[str]) -> Policy:
    """A supervisor whose agents are tools ``ask_<agent>(query)``: one call per open part,
    the customer's question passed on as it is."""
    return supervisor(
        agents,
        handoff=lambda agent: f"ask_{agent}",
        args=lambda messages: {"query": question(messages)},
    )


def router(agents: Sequence[str], *, all_at_once: bool = False) -> Policy:
    """A router node: ``ROUTE: a`` (or every open agent at once), then the summary."""

    def policy(messages: list[BaseMessage]) -> AIMessage:
        want = [d for d in needed(question(messages)) if d in agents]
        if not want:
            return AIMessage(GREETING)
        open_parts = [d for d in want if not done(messages, d)]
        if open_parts:
            return AIMessage("ROUTE: " + ",".join(open_parts if all_at_once else open_parts[:1]))
        return AIMessage("Summary: " + " ".join(results(messages)))

    return policy


def route_of(message: BaseMessage) -> list[str]:
    """The agents a router's reply sends the request to (none for a closing reply)."""
    text = text_of(message)
    return text.removeprefix("ROUTE: ").split(",") if text.startswith("ROUTE: ") else []


def network_node(name: str, *, back_to: str | None = None) -> Policy:
    """A node of a ``Command`` network; its reply ends ``NEXT: <node>`` (or ``NEXT: END``).

    The entry node (``triage``) routes to the first open part. A specialist does its part,
    except that billing on a "check with tech first" request asks tech before its own part;
    then it goes to the next open part, or to ``back_to`` (a coordinator) when given, or ends.
    """

    def policy(messages: list[BaseMessage]) -> AIMessage:
        want = needed(question(messages), ("billing", "tech"))
        open_parts = [d for d in want if not done(messages, d)]
        if name == "triage":
            if not want:
                return AIMessage(f"{GREETING} NEXT: END")
            if open_parts:
                return AIMessage(f"Routing to {open_parts[0]}. NEXT: {open_parts[0]}")
            return AIMessage("Summary: " + " ".join(results(messages)) + " NEXT: END")
        bouncing = BOUNCE in question(messages).lower()
        if name == "billing" and bouncing and "tech" in open_parts:
            return AIMessage("billing-check: refund waits for tech. NEXT: tech")
        rest = [d for d in open_parts if d != name]
        found = [*results(messages), RESULTS[name]]
        if rest and (back_to is None or bouncing):
            return AIMessage(" ".join(found) + f" NEXT: {rest[0]}")
        return AIMessage(" ".join(found) + f" NEXT: {back_to or 'END'}")

    return policy


def next_of(message: BaseMessage) -> str:
    match = NEXT.search(text_of(message))
    return match.group(1) if match else "END"
