"""How each scripted agent decides its next step from the conversation so far.

Pure functions over a plain ``Conversation`` so the behaviour can be read (and tested)
without LangChain. The same rules serve both graphs; what differs is the reading:

* The supervisor reads carefully (``rules.careful_domains``): it skips negated clauses,
  guesses ambiguous billing/account words from a fixed table and routes every domain,
  one at a time, before writing the final answer.
* A specialist does its own part (``plans.plan_calls``) and answers. In the swarm it has
  ``transfer_to_*`` tools and reads quickly: a foreign request goes to the first domain
  named, a second domain is passed on only when the user flagged it ("also", "plus",
  "as well"), negations are not understood, and a request with only "plan" /
  "subscription" style words is first pushed to the other of billing/account, which
  pushes it back (ping-pong) until the agent it bounced back to takes it.

In a conversation every agent acts on the latest user message and what happened since
(``Conversation.since_request``): earlier turns are history, already answered, so a
follow-up is routed by its own words and a resumed interrupt finishes the request it
interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agenteval_cli.demo import rules
from agenteval_cli.demo.plans import CURRENT_PLAN, PlannedCall, plan_calls

HANDOFF_PREFIX = "transfer_to_"
HANDOFF_BACK_PREFIX = "transfer_back_to_"

LABELS = {"billing": "Billing", "tech_support": "Tech support", "account": "Account"}
_TOPICS = {
    "billing": "payment and invoice",
    "tech_support": "technical",
    "account": "plan and account",
}
_CLOSING = " Let me know if there is anything else."
# Who a quick reader thinks owns a request made only of ambiguous words.
_AMBIGUOUS_PEER = {"account": "billing", "billing": "account", "tech_support": "account"}


@dataclass(frozen=True)
class Turn:
    """One message as the scripted model sees it."""

    kind: str  # "system" | "human" | "ai" | "tool"
    content: str = ""
    name: str | None = None  # AI: the agent that spoke; tool: the tool's name
    calls: tuple[str, ...] = ()  # AI: names of the tools it called
    handoff_back: bool = False


@dataclass(frozen=True)
class Conversation:
    """The model's input: the messages so far and the names of the tools bound to it."""

    turns: tuple[Turn, ...]
    tools: tuple[str, ...] = ()

    @property
    def question(self) -> str:
        """The latest user message: the request being worked on."""
        return next((t.content for t in reversed(self.turns) if t.kind == "human"), "")

    def since_request(self) -> Conversation:
        """The turns from the latest user message on; the earlier turns are answered history.

        With one user message this drops only the system prompt, which no rule reads, so a
        single-turn request is handled exactly as before.
        """
        starts = [i for i, t in enumerate(self.turns) if t.kind == "human"]
        return Conversation(self.turns[starts[-1] :] if starts else self.turns, self.tools)

    def handoff_targets(self) -> list[str]:
        """Agents this model can transfer to, from its bound ``transfer_to_*`` tools."""
        return [t.removeprefix(HANDOFF_PREFIX) for t in self.tools if t.startswith(HANDOFF_PREFIX)]

    def routed(self) -> list[str]:
        """Agents control has been transferred to, in first-transfer order."""
        names = [
            t.name.removeprefix(HANDOFF_PREFIX)
            for t in self.turns
            if t.kind == "tool" and t.name and t.name.startswith(HANDOFF_PREFIX)
        ]
        return list(dict.fromkeys(names))

    def activation(self, agent: str) -> tuple[Turn, ...]:
        """The turns since control last came to ``agent`` (all of them if it never did)."""
        name = HANDOFF_PREFIX + agent
        starts = [i + 1 for i, t in enumerate(self.turns) if t.kind == "tool" and t.name == name]
        return self.turns[starts[-1] :] if starts else self.turns

    def workers(self) -> list[str]:
        """Agents that have called at least one domain (non-handoff) tool, in order."""
        names = [
            t.name
            for t in self.turns
            if t.kind == "ai" and t.name and any(not _is_handoff(c) for c in t.calls)
        ]
        return list(dict.fromkeys(names))

    def handed_off(self, agent: str) -> bool:
        """Whether ``agent`` has transferred control to someone before."""
        return any(
            t.kind == "ai"
            and t.name == agent
            and any(c.startswith(HANDOFF_PREFIX) for c in t.calls)
            for t in self.turns
        )

    def answer_of(self, agent: str) -> str:
        """``agent``'s latest plain answer (no tool calls, not an automatic handoff back)."""
        for t in reversed(self.turns):
            if t.kind == "ai" and t.name == agent and not t.calls and not t.handoff_back:
                return t.content
        return ""


@dataclass(frozen=True)
class Reply:
    """What the model says next: text, tool calls, or both."""

    content: str = ""
    calls: list[PlannedCall] = field(default_factory=list)


def _is_handoff(tool_name: str) -> bool:
    return tool_name.startswith((HANDOFF_PREFIX, HANDOFF_BACK_PREFIX))


def _handoff(target: str, content: str) -> Reply:
    return Reply(content, [(HANDOFF_PREFIX + target, {})])


# --- supervisor ----------------------------------------------------------------------


def supervisor_turn(convo: Conversation) -> Reply:
    """Route the next unhandled domain, or summarise once every domain has been handled."""
    convo = convo.since_request()
    routed = convo.routed()
    available = set(convo.handoff_targets())
    for domain in rules.careful_domains(convo.question):
        if domain not in routed and domain in available:
            topic = _TOPICS[domain]
            return _handoff(domain, f"Routing the {topic} part of the request to {domain}.")
    if not routed:
        return Reply(
            "I can help with billing, technical problems and account or plan changes. "
            "Could you tell me a little more about what you need?"
        )
    answers = {a: convo.answer_of(a).removesuffix(_CLOSING) or "no answer" for a in routed}
    lines = [f"- {LABELS.get(a, a)}: {text}" for a, text in answers.items()]
    return Reply(
        "Here is a summary of everything our specialists did for you:\n"
        + "\n".join(lines)
        + "\nIs there anything else I can help you with today?"
    )


# --- specialists ---------------------------------------------------------------------


def specialist_turn(agent: str, convo: Conversation) -> Reply:
    """Do ``agent``'s part of the request, then answer or (in a swarm) pass it on."""
    convo = convo.since_request()
    question = convo.question
    results = [
        t.content
        for t in convo.activation(agent)
        if t.kind == "tool" and not _is_handoff(t.name or "")
    ]
    targets = convo.handoff_targets()
    if results:
        return _after_work(agent, convo, results, targets)

    if targets and rules.is_ambiguous_only(question) and not convo.handed_off(agent):
        peer = _AMBIGUOUS_PEER[agent]
        if peer in targets:
            return _handoff(peer, f"This looks like a {_TOPICS[peer]} question for {peer}.")

    named = rules.named_domains(question) if targets else []
    if named and agent not in named:
        foreign = [d for d in named if d not in convo.workers() and d in targets]
        if foreign:
            return _handoff(foreign[0], f"Passing this to {foreign[0]}.")

    # Only tools the graph gave the agent: cancel_subscription is in the conversation graphs.
    calls = [call for call in plan_calls(agent, question) if call[0] in convo.tools]
    if calls:
        return Reply("", calls)
    return Reply(
        f"{LABELS[agent]} here. I could not find anything in your request that I can act on; "
        f"your account is on the {CURRENT_PLAN} plan. Could you give me a few more details?"
    )


def _after_work(agent: str, convo: Conversation, results: list[str], targets: list[str]) -> Reply:
    if targets:
        done = set(convo.workers())
        pending = [d for d in rules.flagged_domains(convo.question) if d not in done]
        pending = [d for d in pending if d != agent and d in targets]
        if pending:
            return _handoff(pending[0], f"My part is done; passing the rest to {pending[0]}.")
    return Reply(" ".join(results) + _CLOSING)
