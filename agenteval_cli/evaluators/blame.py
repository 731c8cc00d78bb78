"""Blame: the first step that went wrong in a request that failed, and the agent that took it.

Read once per result, from its trace, its row's references and its scores, where the result
is finished (:func:`blame`); the store keeps it with the result and the views show it. A
request fails when a routing score is below 1 (``routing_accuracy``, ``forbidden_agents``,
``routing_exact``), its resolution is below its pass mark, it errored, or ``recovered`` is
false; a request that did not fail has no blame (None).

``step`` indexes the request's ``agent_path`` from 0: the agents that made model calls in
order, consecutive calls by one agent one step. Each kind names its own step:

- ``misroute``: the first step whose agent is forbidden, or a specialist no reference
  expects (coordinators, and a team's lead, are none; the agent a team is entered at is
  expected when the team is; another member of an expected team is, unless an expected
  agent was missed);
  blamed on the step before it (the agent that routed there), or on the first step itself
  when that agent is forbidden;
- ``lost_context``: the first handoff whose receiving agent's first own model call was not
  given the request (``handoff_context``: its human message, or the row's
  ``handoff_facts``), read only where the result's ``handoff_context`` is below 1; blamed on
  the step that made the handoff, its source's (the fix is in the handoff: what its tool
  sends, or what the receiver's input filter keeps);
- ``fault``: the first injected call (``faults:``) the agent did not make again with
  success; blamed on the step of the agent that made it;
- ``tool_error``: the first tool call that failed on its own and that its agent did not
  make again with success (it gave up on it); blamed on that agent's step;
- ``ended_early``: an expected agent was never reached; blamed on the last step, the agent
  that ended the request (when control only came back up from a nested team there, the
  team's last step: the agent that ended its part);
- ``error``: the request raised with none of the above; blamed on the last step;
- ``outcome``: the answer missed its outcome check with none of the above; blamed on the
  last step, the agent that gave the answer.

The earliest step wins; on one step the order above. A request whose agents are unknown
(untraced, not told apart) is blamed on no agent (``agent`` and ``step`` null, the reason in
``why``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from agenteval_cli.core.records import ModelCall, Result, Score, ToolCall, Trace
from agenteval_cli.evaluators.handoffs import handoff_label, handoff_losses
from agenteval_cli.evaluators.recovery import injected_calls
from agenteval_cli.evaluators.routing import agent_names

KINDS = ("misroute", "lost_context", "fault", "tool_error", "ended_early", "error", "outcome")
ROUTING = ("routing_accuracy", "forbidden_agents", "routing_exact")
COORDINATORS = ("supervisor",)  # not specialists, as routing_exact reads them


OUTCOME = "resolution_coverage"


def outcome_mark(pass_marks: Mapping[str, Any] | None) -> tuple[float, bool]:
    """The least passing ``resolution_coverage`` as ``(value, strict)``, from the run's pass
    marks (the catalog's: ``">= 1"`` by default, an item's ``pass_mark`` option otherwise)."""
    return _mark(str((pass_marks or {}).get(OUTCOME, ">= 1")).strip())


@functools.lru_cache(maxsize=64)
def _mark(text: str) -> tuple[float, bool]:
    """A pass mark's text read, once for every result of a run."""
    found = re.fullmatch(r"(>=|>)?\s*([0-9.]+)", text)
    if found is None:
        return 1.0, False
    return float(found.group(2)), found.group(1) == ">"


def failed_checks(result: Result, pass_marks: Mapping[str, Any] | None = None) -> list[str]:
    """The checks a result failed: routing scores below 1, ``resolution_coverage`` below its
    pass mark (:func:`outcome_mark`), ``recovered`` false, or ``error``."""
    scores: dict[str, Any] = {}
    for score in result.scores:  # a plain loop: no comprehension's frame for one score
        if score.key in _CHECKED:
            scores[score.key] = score.score  # the last of a key
    failed: list[str] = []
    if scores:
        for key in ROUTING:
            if key in scores and _below(scores[key], 1.0, False):
                failed.append(key)
        if OUTCOME in scores and _below(scores[OUTCOME], *outcome_mark(pass_marks)):
            failed.append(OUTCOME)
        if scores.get("recovered") is False:
            failed.append("recovered")
    if result.error is not None:
        failed.append("error")
    return failed


@functools.lru_cache(maxsize=256)
def _unknown(
    failed: tuple[str, ...], untraced: str | None, unattributed: str | None
) -> dict[str, Any]:
    """The blame of a request whose agents are unknown, on no agent: made once for the
    results that failed alike (a run's untraced requests share their reasons)."""
    trace = Trace(untraced=untraced, unattributed=unattributed)
    why = trace.agents_unknown or "no agent made a model call"
    return {
        "agent": None,
        "step": None,
        "kind": "unknown",
        "why": f"failed {', '.join(failed)}; {why}",
    }


_CHECKED = frozenset((*ROUTING, OUTCOME, "recovered"))  # the scores a check reads


def _below(score: Any, mark: float, strict: bool) -> bool:
    if isinstance(score, bool):
        return not score
    if not isinstance(score, int | float):
        return False
    return score <= mark if strict else score < mark


def blame(
    result: Result,
    reference: dict[str, Any] | None,
    *,
    pass_marks: Mapping[str, Any] | None = None,
    ignore_agents: list[str] | None = None,
) -> dict[str, Any] | None:
    """``{agent, step, kind, why}`` for a result that failed a check, None for one that did
    not; see the module's docstring for the rule."""
    failed = failed_checks(result, pass_marks)
    if not failed:
        return None
    trace = result.trace
    path = trace.agent_path
    if trace.untraced or trace.unattributed or not path:
        return dict(_unknown(tuple(failed), trace.untraced, trace.unattributed))
    reference = reference or {}
    found = [
        c
        for c in (
            _misroute(trace, reference, ignore_agents),
            _lost_context(result, reference),
            _fault(trace),
            _tool_error(trace),
            _ended_early(trace, reference),
        )
        if c is not None
    ]
    if found:
        step, kind, why = min(found, key=lambda c: (c[0], KINDS.index(c[1])))
    elif result.error is not None:
        step, kind, why = len(path) - 1, "error", f"the request raised: {result.error}"
    else:
        step, kind = len(path) - 1, "outcome"
        why = "its answer failed " + ", ".join(f for f in failed if f not in ROUTING)
    return {"agent": path[step], "step": step, "kind": kind, "why": why}


Found = tuple[int, str, str]


def _leaf_paths(trace: Trace) -> dict[str, list[str]]:
    """Each step's agent -> its path, outer to inner, lower-cased."""
    paths: dict[str, list[str]] = {}
    for call in trace.model_calls:
        paths.setdefault(call.agent, agent_names(call.path))
    return paths


def _misroute(trace: Trace, reference: dict[str, Any], ignore: list[str] | None) -> Found | None:
    """The first step that reached a forbidden agent, or a specialist not expected: a leaf
    agent no reference names, unless its team is named and no expected agent was missed;
    where control entered a team from outside it, the team (its name or its agent) not
    expected. The request's first agent is no misroute unless forbidden: nobody routed
    there."""
    expected = set(agent_names(reference.get("expected_agents")))
    forbidden = set(agent_names(reference.get("forbidden_agents")))
    skip = set(agent_names(COORDINATORS if ignore is None else ignore))
    skip |= set(agent_names(trace.coordinators)) | _team_leads(trace)
    reached = set(agent_names(trace.agents_at_any_level))
    missed = bool(expected - reached)
    paths = _leaf_paths(trace)
    for step, agent in enumerate(trace.agent_path):
        levels = paths.get(agent) or agent_names([agent])
        hit = sorted(forbidden.intersection(levels))
        unexpected = step > 0 and bool(expected) and levels[-1] not in skip
        if unexpected:
            before = paths.get(trace.agent_path[step - 1]) or []
            if before[: len(levels) - 1] != levels[:-1]:  # control entered a team: its name
                unexpected = not expected.intersection(levels)
            else:
                unexpected = levels[-1] not in expected and (
                    missed or not expected.intersection(levels[:-1])
                )
        if not hit and not unexpected:
            continue
        what = f"forbidden agent {agent}" if hit else f"unexpected agent {agent}"
        if step == 0:
            return 0, "misroute", f"the request started at {what}"
        return step - 1, "misroute", f"routed to {what} (step {step})"
    return None


def _team_leads(trace: Trace) -> set[str]:
    """Agents that handed control to another member of their own team: its lead, a
    coordinator even where control never came back to it (a request that raised first)."""
    paths = _leaf_paths(trace)
    leads = set()
    for handoff in trace.handoffs:
        if handoff.via == "edge":  # the graph's own edges: a return, no choice
            continue
        source, target = paths.get(handoff.source), paths.get(handoff.target)
        if source and target and len(source) > 1 and source[:-1] == target[:-1]:
            leads.add(source[-1])
    return leads


def _ended_early(trace: Trace, reference: dict[str, Any]) -> Found | None:
    """An expected agent never reached: blamed on the step that ended the request, the last
    one, or where control only came back up from a nested team, that team's last step."""
    expected = agent_names(reference.get("expected_agents"))
    reached = set(agent_names(trace.agents_at_any_level))
    missing = [name for name in dict.fromkeys(expected) if name not in reached]
    if not missing:
        return None
    paths = _leaf_paths(trace)
    depth = [len(paths.get(agent) or [agent]) for agent in trace.agent_path]
    step = len(depth) - 1
    while step > 0 and depth[step - 1] > depth[step]:  # a return from a deeper team
        step -= 1
    return step, "ended_early", f"ended before {', '.join(missing)} was reached"


def _lost_context(result: Result, reference: dict[str, Any]) -> Found | None:
    """The first handoff that lost the request, in a request (or a conversation's turn)
    whose handoff_context scored below 1, checked as that score was: against the row's (or
    the turn's) handoff_facts."""
    parts: list[tuple[Trace, dict[str, Any], list[Score]]] = [
        (result.trace, reference, result.scores)
    ]
    if result.turns is not None:
        given = reference.get("turns")
        turns = [r if isinstance(r, dict) else {} for r in given] if isinstance(given, list) else []
        turns += [{}] * (len(result.turns) - len(turns))
        parts = [(t.trace, r, t.scores) for t, r in zip(result.turns, turns, strict=False)]
    offset = 0  # where a turn's handoffs start in the conversation's trace
    for trace, refs, scores in parts:
        score = next((s.score for s in scores if s.key == "handoff_context"), None)
        if isinstance(score, int | float) and not isinstance(score, bool) and score < 1:
            for index, handoff, lost in handoff_losses(trace, refs.get("handoff_facts")):
                if lost is not None:
                    step = _handoff_step(result.trace, offset + index)
                    return step, "lost_context", f"{handoff_label(handoff)} lost {lost}"
        offset += len(trace.handoffs)
    return None


def _handoff_step(trace: Trace, index: int) -> int:
    """The step of ``agent_path`` that made handoff ``index``: its source's step before the
    target's, the n-th such change for the n-th handoff between the two (the source's first
    step when the path holds no such change)."""
    handoff = trace.handoffs[index]
    pair = (handoff.source, handoff.target)
    nth = sum(1 for h in trace.handoffs[:index] if (h.source, h.target) == pair)
    path = trace.agent_path
    changes = [i for i in range(len(path) - 1) if (path[i], path[i + 1]) == pair]
    if nth < len(changes):
        return changes[nth]
    return path.index(handoff.source) if handoff.source in path else 0


def _fault(trace: Trace) -> Found | None:
    for call in injected_calls(trace):
        if _made_again(trace, call):
            continue
        name = call.name if isinstance(call, ToolCall) else f"model {call.model}"
        return _step_of(trace, call), "fault", f"injected {call.injected} on {name}, not recovered"
    return None


def _tool_error(trace: Trace) -> Found | None:
    for call in trace.tool_calls:
        failed = call.is_work and call.status == "error" and not call.injected
        if failed and not _made_again(trace, call):
            return _step_of(trace, call), "tool_error", f"tool {call.name} failed: gave up"
    return None


def _made_again(trace: Trace, failed: ToolCall | ModelCall) -> bool:
    """Whether the agent made the failed call again, later, with success (the same tool
    with the same arguments; a model call that answered)."""
    since = failed.started_at
    if isinstance(failed, ToolCall):
        same = _same_call(failed)
        return any(
            c is not failed
            and c.succeeded
            and _same_call(c) == same
            and (since is None or (c.started_at or 0.0) > since)
            for c in trace.tool_calls
        )
    return any(
        c is not failed
        and not c.failed
        and not c.injected
        and c.path == failed.path
        and (since is None or (c.started_at or 0.0) > since)
        for c in trace.model_calls
    )


def _same_call(call: ToolCall) -> str:
    return json.dumps([call.name, call.path, call.args], sort_keys=True, default=str)


def _step_of(trace: Trace, call: ToolCall | ModelCall) -> int:
    """The step of ``agent_path`` in which ``call`` was made: the last step of its agent
    that started at or before it (its agent's first step when times are not recorded)."""
    path = trace.agent_path
    starts = _step_starts(trace)
    mine = [i for i, agent in enumerate(path) if agent == call.agent]
    if not mine:
        return len(path) - 1
    when = call.started_at
    if when is None:
        return mine[0]
    before = [i for i in mine if starts[i] is not None and starts[i] <= when]  # type: ignore[operator]
    return before[-1] if before else mine[0]


def _step_starts(trace: Trace) -> list[float | None]:
    """When each step of ``agent_path`` started: its first model call's start, the model
    calls (retried attempts' left out) walked in order beside the path."""
    path = trace.agent_path
    starts: list[float | None] = [None] * len(path)
    step = -1
    for call in sorted(
        (c for c in trace.model_calls if not c.retried), key=lambda c: c.started_at or 0.0
    ):
        if step >= 0 and path[step] == call.agent:
            continue
        following = [i for i in range(step + 1, len(path)) if path[i] == call.agent]
        if not following:
            continue
        step = following[0]
        starts[step] = call.started_at
    return starts
