"""Where each turn of a conversation began and ended: the one reading of turn boundaries
that agent continuity, the conversation's handoffs and its ping-pong are all taken from, so
that they cannot disagree.

A turn begins at the agent of its first model call and ends at the agent of its last, each
known by its full path (``account_team > account``; two agents of one name in two teams
are two). It leaves the user with its last agent, passing over coordinators that got
control back (one that had it earlier in the conversation: a supervisor summing up what
its specialist did); with its last agent when no other is left. No agent acts between two
turns, so a turn is entered in one of these ways:

- ``went on``: it began with the agent the previous turn left the user with, or with the
  one that spoke last (a supervisor taking the next message). No handoff.
- ``restarted``: it began at the conversation's entry agent (where its first turn began)
  instead: the graph started over, as one with nothing to keep its active agent does (a
  swarm without a checkpointer), or one that routes every turn from its entry. No
  handoff, and no bounce runs across it.
- ``handed over``: it began at another agent: control passed between the turns, one
  handoff from the agent the previous turn left the user with.
- ``carried``: it ran no model (a resume a tool finished, an interrupt before any model
  call): its agent is carried over from the turn before, as if it had not been.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agenteval_cli.core.records import Handoff, Trace

AgentPath = tuple[str, ...]  # outer to inner

FIRST, WENT_ON, RESTARTED, HANDED_OVER, CARRIED = (
    "first",
    "went on",
    "restarted",
    "handed over",
    "carried",
)
# The ``via`` of a handoff between two turns (no agent's tool, Command or edge passed it).
BETWEEN_TURNS = "turn"


@dataclass(frozen=True)
class Bounds:
    """One turn: how it was entered, the agent it began at, the one it ended at and the one
    it left the user with; ``before`` is the one the previous turns left the user with
    (None when no agent had run yet). A turn that ran no model carries ``before`` over."""

    number: int
    entered: str
    began: AgentPath | None
    ended: AgentPath | None
    active: AgentPath | None
    before: AgentPath | None


@dataclass
class Stretch:
    """Turns run on from one another, up to a restart: their agent path and handoffs as one
    trace, the handoffs between turns included and linked (``after``) across the turns, so
    a bounce over a turn boundary is found as one within a turn is; ``numbers`` gives each
    handoff's turn."""

    trace: Trace = field(default_factory=lambda: Trace(schema=2))
    numbers: list[int] = field(default_factory=list)


@dataclass
class Boundaries:
    """Every turn's :class:`Bounds`, and the conversation's stretches of turns."""

    turns: list[Bounds]
    stretches: list[Stretch]

    def between(self) -> list[Bounds]:
        """The turns handed over between turns: one handoff each."""
        return [b for b in self.turns if b.entered == HANDED_OVER]


def shown(path: AgentPath | None) -> str:
    """An agent path as the reports write it (``team > agent``)."""
    return " > ".join(path) if path else "(none)"


def turn_boundaries(traces: Sequence[Trace], coordinators: frozenset[str]) -> Boundaries:
    """The boundaries of a conversation's turns, from their ``traces`` in order;
    ``coordinators`` (lower-cased) are the agents that regain control by design."""
    turns: list[Bounds] = []
    stretches: list[Stretch] = []
    seen: set[AgentPath] = set()  # agents that had control so far
    entry: AgentPath | None = None
    before: Bounds | None = None  # the last turn that ran a model
    for number, trace in enumerate(traces, 1):
        steps = agent_steps(trace)
        left = before.active if before is not None else None
        if not steps:
            ended = before.ended if before is not None else None
            turns.append(Bounds(number, CARRIED, left, ended, left, left))
            continue
        active = _left_with(steps, seen, coordinators)
        began = steps[0]
        if before is None:
            entered, entry = FIRST, began
        elif began in (left, before.ended):
            entered = WENT_ON
        elif began == entry:
            entered = RESTARTED
        else:
            entered = HANDED_OVER
        bounds = Bounds(number, entered, began, steps[-1], active, left)
        turns.append(bounds)
        if entered in (FIRST, RESTARTED):
            stretches.append(Stretch())
        _extend(stretches[-1], bounds, trace)
        seen.update(steps)
        before = bounds
    return Boundaries(turns, stretches)


def agent_steps(trace: Trace) -> list[AgentPath]:
    """The trace's agent path with each step's full path: read from its model calls (the
    last attempt's) in order, the name alone where no call of that agent holds one."""
    calls = [call for call in trace.model_calls if not call.retried]
    steps: list[AgentPath] = []
    at = 0
    for name in trace.agent_path:
        found = next((i for i in range(at, len(calls)) if calls[i].agent == name), None)
        if found is None:
            found = next((i for i in range(len(calls)) if calls[i].agent == name), None)
        if found is None:
            steps.append((name,))
            continue
        steps.append(tuple(calls[found].path) or (name,))
        at = found + 1
    return steps


def _left_with(
    steps: list[AgentPath], seen: set[AgentPath], coordinators: frozenset[str]
) -> AgentPath:
    """Who the user is left with after a turn of ``steps``: its last agent, passing over
    coordinators that got control back (had it before: in ``seen`` or earlier in the
    turn); its last agent when no other is left."""
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if step[-1].lower() in coordinators and (step in seen or step in steps[:index]):
            continue
        return step
    return steps[-1]


def _extend(stretch: Stretch, bounds: Bounds, trace: Trace) -> None:
    """Add a turn to ``stretch``: a handoff between turns when it was handed over, its own
    handoffs linked to the one that gave its first agent control, its agent path."""
    merged = stretch.trace
    began = bounds.began[-1] if bounds.began else ""
    carried: list[int] = []
    if bounds.entered == WENT_ON:
        carried = _led_to(merged.handoffs, began)
    elif bounds.entered == HANDED_OVER and bounds.before is not None:
        source = bounds.before[-1]
        led = _led_to(merged.handoffs, source)
        merged.handoffs.append(Handoff(source, began, via=BETWEEN_TURNS, after=led))
        stretch.numbers.append(bounds.number)
        carried = [len(merged.handoffs) - 1]
    offset = len(merged.handoffs)
    for handoff in trace.handoffs:
        after = [offset + i for i in handoff.after]
        if not handoff.after and handoff.source == began:
            after = list(carried)
        merged.handoffs.append(
            Handoff(
                handoff.source, handoff.target, handoff.tool, handoff.via, handoff.parallel, after
            )
        )
        stretch.numbers.append(bounds.number)
    for agent in trace.agent_path:
        if not merged.agent_path or merged.agent_path[-1] != agent:
            merged.agent_path.append(agent)
    merged.coordinators += [c for c in trace.coordinators if c not in merged.coordinators]
    merged.schema = min(merged.schema, trace.schema)


def _led_to(handoffs: list[Handoff], agent: str) -> list[int]:
    """The last handoff into ``agent`` so far, as an ``after`` list (empty: none)."""
    led = [i for i, handoff in enumerate(handoffs) if handoff.target == agent]
    return led[-1:]
