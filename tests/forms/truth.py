"""The metrics a request must get, computed from the models' own log and what the test
knows about the graph (its teams, its coordinators, its parallel branches).

Nothing here reads agenteval's trace or scores: they are what gets checked against this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from forms.model import PRICING, Call

HANDOFF_PREFIXES = ("transfer_to_", "transfer_back_to_")


def last_text(calls: Sequence[Call]) -> str:
    return calls[-1].text if calls else ""


@dataclass(frozen=True)
class Form:
    """What a test knows about one graph form.

    ``teams`` maps a leaf agent to the teams around it, outer first (``{"billing":
    ["money_team"]}``); ``coordinators`` regain control by design; ``branches`` are agents a
    router sends one request to at once, in the order it sends them; ``kinds`` names the
    tools that are not ordinary tools (``"handoff"`` or ``"agent"``; ``transfer_*`` tools are
    handoffs anyway). ``paths_known`` is false when the contract leaves the agent's outer
    path open (an agent run inside another agent's tool).
    A kind may also be ``"output"`` (the model's structured output); ``fails`` tells the
    calls that fail, when the test's tools fail on some.
    """

    coordinators: frozenset[str] = frozenset()
    teams: dict[str, tuple[str, ...]] = field(default_factory=dict)
    branches: tuple[str, ...] = ()
    kinds: dict[str, str] = field(default_factory=dict)
    paths_known: bool = True
    final_text: Callable[[Sequence[Call]], str] = last_text
    # (tool, arguments) -> whether that call fails: given, each call's status is checked
    fails: Callable[[str, dict[str, Any]], bool] | None = None

    def kind_of(self, tool: str) -> str:
        if tool in self.kinds:
            return self.kinds[tool]
        return "handoff" if tool.startswith(HANDOFF_PREFIXES) else "tool"

    def path_of(self, leaf: str) -> list[str]:
        return [*self.teams.get(leaf, ()), leaf]

    def teams_of(self, call: Call) -> tuple[str, ...]:
        """The teams around a call's agent: by its name, else as its model logged them."""
        return self.teams.get(call.agent, ()) or call.team


@dataclass
class Truth:
    calls: list[Call]
    path: list[str]
    invoked: set[str]  # lower-cased leaf agents and their teams
    chain: int
    ping_pong: bool
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    cost_usd: float | None
    final_text: str
    per_leaf: dict[str, tuple[int, int | None, int | None]]  # calls, input, output tokens
    per_team: dict[str, tuple[int, int | None, int | None]]
    tools: Counter[str]  # tool calls the models made, by name

    def routing_accuracy(self, expected: Sequence[str] | None) -> float:
        wanted = list(dict.fromkeys(str(a).strip().lower() for a in expected or []))
        if not wanted:
            return 1.0
        return sum(1 for a in wanted if a in self.invoked) / len(wanted)

    def coverage(self, must_mention: Sequence[str] | None) -> float:
        terms = list(must_mention or [])
        if not terms:
            return 1.0
        text = self.final_text.lower()
        return sum(1 for t in terms if t.lower() in text) / len(terms)


def collapse(agents: Sequence[Any]) -> list[Any]:
    path: list[Any] = []
    for agent in agents:
        if not path or path[-1] != agent:
            path.append(agent)
    return path


def bounces(path: Sequence[str], coordinators: frozenset[str]) -> bool:
    """A specialist bounce A -> B -> A, neither A nor B a coordinator."""
    return any(
        a == c and a != b and a not in coordinators and b not in coordinators
        for a, b, c in zip(path, path[1:], path[2:], strict=False)
    )


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _usage(calls: Sequence[Call]) -> tuple[int, int | None, int | None]:
    return len(calls), _sum([c.input_tokens for c in calls]), _sum([c.output_tokens for c in calls])


def _cost(calls: Sequence[Call], pricing: dict[str, dict[str, float]]) -> float | None:
    total = 0.0
    for c in calls:
        price = pricing.get(c.model)
        if price is None or c.input_tokens is None or c.output_tokens is None:
            return None
        total += c.input_tokens * price["input"] + c.output_tokens * price["output"]
    return total / 1_000_000


def truth_of(
    calls: Sequence[Call], form: Form, pricing: dict[str, dict[str, float]] = PRICING
) -> Truth:
    """The metrics of one request, from its model calls (in the order they were made). A call
    that raised (a provider error) shows its agent was reached and spends nothing."""
    calls = sorted(calls, key=lambda c: c.seq)
    agents = [c.agent for c in calls]
    reached, calls = calls, [c for c in calls if c.error is None]
    in_branch = [i for i, a in enumerate(agents) if a in form.branches]
    if in_branch:
        first, last = in_branch[0], in_branch[-1]
        before, during, after = agents[:first], agents[first : last + 1], agents[last + 1 :]
        assert set(during) <= set(form.branches), f"branches interleaved with {during}"
        ran = [b for b in form.branches if b in during]
        head, tail = collapse(before), collapse(after)
        path = head + ran + tail
        chain = max(len(head) - 1, 0) + (len(ran) if head else 0)
        chain += (len(ran) if tail else 0) + max(len(tail) - 1, 0)
        pong = bounces(head, form.coordinators) or bounces(tail, form.coordinators)
    else:
        # consecutive calls by one agent are one step; agents of one name in different
        # teams stay two
        steps = collapse([(form.teams_of(c), c.agent) for c in reached])
        path = [agent for _, agent in steps]
        chain = max(len(path) - 1, 0)
        pong = bounces(path, form.coordinators)
    invoked = {a.lower() for c in reached for a in (*form.teams_of(c), c.agent)}
    per_leaf = {
        leaf: _usage([c for c in calls if c.agent == leaf])
        for leaf in dict.fromkeys(c.agent for c in calls)
    }
    teams = {t for c in calls for t in form.teams_of(c)}
    per_team = {team: _usage([c for c in calls if team in form.teams_of(c)]) for team in teams}
    tokens_in = _sum([c.input_tokens for c in calls])
    tokens_out = _sum([c.output_tokens for c in calls])
    return Truth(
        calls=list(reached),
        path=path,
        invoked=invoked,
        chain=chain,
        ping_pong=pong,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=None if tokens_in is None or tokens_out is None else tokens_in + tokens_out,
        cost_usd=_cost(calls, pricing),
        final_text=form.final_text(calls),
        per_leaf=per_leaf,
        per_team=per_team,
        tools=Counter(name for c in calls for name, _ in c.tools),
    )


def same_request(calls: Sequence[Call]) -> list[list[Call]]:
    """Calls of one question split into requests by their first human message's id (needed
    only where one question ran more than once)."""
    groups: dict[Any, list[Call]] = {}
    for c in sorted(calls, key=lambda c: c.seq):
        groups.setdefault(c.request, []).append(c)
    return list(groups.values())
