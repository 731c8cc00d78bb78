"""The metrics a conversation must get, per turn and as a whole, computed from the model log
(:data:`forms.model.LOG`) and what the test knows of the graph and the row.

A conversation's calls are those whose first user message is its first turn's; a new turn
begins where the count of user messages a call received changes, or after a call that asked
for a tool that stops at ``interrupt()`` (the next call is the resumed turn's). Nothing here
reads agenteval's trace or scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from forms.model import Call
from forms.truth import Form, Truth, bounces, collapse, truth_of


@dataclass
class TurnTruth:
    truth: Truth
    references: dict[str, Any]
    answered: bool  # false for a turn that stopped at interrupt()

    @property
    def path(self) -> list[str]:
        return self.truth.path

    @property
    def calls(self) -> int:
        return len(self.truth.calls)

    def scores(self) -> dict[str, Any]:
        """The single-turn scores this turn must get."""
        t = self.truth
        return {
            "routing_accuracy": t.routing_accuracy(self.references.get("expected_agents")),
            "resolution_coverage": (
                t.coverage(self.references.get("must_mention")) if self.answered else None
            ),
            "handoff_chain_length": t.chain,
            "ping_pong": t.ping_pong,
            "input_tokens": t.input_tokens,
            "output_tokens": t.output_tokens,
            "total_tokens": t.total_tokens,
            "cost_usd": t.cost_usd,
        }


def split_turns(calls: Sequence[Call], pausing: Sequence[str] = ()) -> list[list[Call]]:
    """A conversation's calls (in the order made), turn by turn."""
    turns: list[list[Call]] = []
    for call in sorted(calls, key=lambda c: c.seq):
        previous = turns[-1][-1] if turns else None
        paused = previous is not None and any(name in pausing for name, _ in previous.tools)
        if previous is None or call.humans != previous.humans or paused:
            turns.append([call])
        else:
            turns[-1].append(call)
    return turns


def conversation_calls(calls: Sequence[Call], graph: str, opening: str) -> list[Call]:
    return [c for c in calls if c.graph == graph and c.question == opening]


@dataclass
class ConversationTruth:
    turns: list[TurnTruth]
    form: Form
    references: dict[str, Any]  # the conversation's own (the top of outputs)
    status: str  # "ok" or "interrupted"

    def active_after(self, earlier: Sequence[str], path: Sequence[str]) -> str | None:
        """Who a turn of ``path`` leaves the user with: its last agent, passing over a
        coordinator that had control before (in ``earlier`` turns or earlier in this one)."""
        for index in range(len(path) - 1, -1, -1):
            agent = path[index]
            if agent in self.form.coordinators and agent in [*earlier, *path[:index]]:
                continue
            return agent
        return path[-1] if path else None

    def boundaries(self) -> list[tuple[str, str | None]]:
        """How each follow-up was entered, and the agent the turns before left the user
        with: "on" (it began there, or where the previous turn ended), "restart" (at the
        agent the first turn began at), else "over" (handed over between the turns)."""
        entry = self.turns[0].path[0] if self.turns and self.turns[0].path else None
        found: list[tuple[str, str | None]] = []
        earlier: list[str] = []
        for before, now in zip(self.turns, self.turns[1:], strict=False):
            active = self.active_after(earlier, before.path)
            earlier += before.path
            first = now.path[0] if now.path else None
            if first in (active, before.path[-1] if before.path else None):
                found.append(("on", active))
            elif first == entry:
                found.append(("restart", active))
            else:
                found.append(("over", active))
        return found

    def continuity(self) -> float | None:
        if len(self.turns) < 2:
            return None
        kept = 0
        for (_, active), now in zip(self.boundaries(), self.turns[1:], strict=True):
            if now.path and now.path[0] == active and now.truth.chain == 0:
                kept += 1
        return kept / (len(self.turns) - 1)

    def reentries(self) -> int:
        """Handoffs between turns: a turn handed over; a restart at the entry is none."""
        return sum(1 for how, _ in self.boundaries() if how == "over")

    def ping_pong(self) -> bool:
        """A specialist bounce along the conversation's path, which runs on from turn to
        turn up to a restart at the entry."""
        segments: list[list[str]] = []
        for turn, (how, _) in zip(self.turns, [("first", None), *self.boundaries()], strict=True):
            if segments and how != "restart":
                segments[-1] = collapse([*segments[-1], *turn.path])
            else:
                segments.append(list(turn.path))
        return any(bounces(s, self.form.coordinators) for s in segments)

    def resolved(self) -> bool:
        if self.status != "ok":
            return False
        for turn in self.turns:
            scores = turn.scores()
            if scores["routing_accuracy"] != 1.0 or scores["ping_pong"]:
                return False
            if turn.answered and scores["resolution_coverage"] != 1.0:
                return False
        return self.whole_routing() in (None, 1.0) and self.whole_coverage() in (None, 1.0)

    def whole_routing(self) -> float | None:
        """The conversation's own expected_agents reached anywhere in it (None: none given)."""
        wanted = list(dict.fromkeys(a.lower() for a in self.references.get("expected_agents", [])))
        if not wanted:
            return None
        invoked = {a for t in self.turns for a in t.truth.invoked}
        return sum(1 for a in wanted if a in invoked) / len(wanted)

    def whole_coverage(self) -> float | None:
        """The conversation's own must_mention found in its answers (None: none given)."""
        terms = self.references.get("must_mention", [])
        if not terms:
            return None
        said = "\n\n".join(t.truth.final_text for t in self.turns if t.answered).lower()
        return sum(1 for term in terms if term.lower() in said) / len(terms)

    def turns_give(self, field: str) -> bool:
        return any(field in t.references for t in self.turns)

    def scores(self) -> dict[str, Any]:
        """The conversation's scores: its turns' request figures (summed or averaged) and
        its own."""
        each = [t.scores() for t in self.turns]
        follow = self.turns[1:]
        resolved = self.resolved()
        out: dict[str, Any] = {
            key: _sum([s[key] for s in each])
            for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd")
        }
        out["handoff_chain_length"] = sum(s["handoff_chain_length"] for s in each)
        for key in ("routing_accuracy", "resolution_coverage", "ping_pong"):
            out[key] = _mean([s[key] for s in each])
        # a reference only the conversation gives: the key is the whole conversation's
        if not self.turns_give("expected_agents") and self.whole_routing() is not None:
            out["routing_accuracy"] = self.whole_routing()
        if not self.turns_give("must_mention") and self.whole_coverage() is not None:
            out["resolution_coverage"] = self.whole_coverage()
        out.update(
            turns=len(self.turns),
            resolved=resolved,
            turns_to_resolution=len(self.turns) if resolved else None,
            agent_continuity=self.continuity(),
            model_calls=sum(t.calls for t in self.turns),
            followup_model_calls=_mean([t.calls for t in follow]) if follow else None,
            followup_cost_usd=_mean([t.truth.cost_usd for t in follow]) if follow else None,
            conversation_handoffs=out["handoff_chain_length"] + self.reentries(),
            conversation_ping_pong=self.ping_pong(),
        )
        return out


def conversation_truth(
    calls: Sequence[Call],
    graph: str,
    row: dict[str, Any],
    form: Form,
    *,
    pausing: Sequence[str] = (),
) -> ConversationTruth:
    """The truth of one scripted conversation row, from the log."""
    script = row["inputs"]["turns"]
    opening = script[0] if isinstance(script[0], str) else script[0]["question"]
    split = split_turns(conversation_calls(calls, graph, opening), pausing)
    references = row.get("outputs", {}).get("turns") or [{} for _ in split]
    turns = []
    for number, turn_calls in enumerate(split):
        paused = any(name in pausing for name, _ in turn_calls[-1].tools)
        turns.append(TurnTruth(truth_of(turn_calls, form), references[number], not paused))
    status = "interrupted" if turns and not turns[-1].answered else "ok"
    top = {k: v for k, v in row.get("outputs", {}).items() if k != "turns"}
    return ConversationTruth(turns, form, top, status)


def _sum(values: Sequence[Any]) -> Any:
    return None if any(v is None for v in values) else sum(values)


def _mean(values: Sequence[Any]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None
