"""Conversation metrics: what a multi-turn conversation did as a whole, beside the scores of
its turns (which are single-turn scores, one set per turn).

Read from the turns' traces: how many turns, the model calls of the conversation and of its
follow-ups, the handoffs and ping-pong across the turns, and whether a follow-up was
answered by the agent already active (a swarm's memory) or routed again (a supervisor).
Whether the conversation was resolved is decided from every other score, once they are all
known (:func:`resolution`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agenteval_cli.core.records import OK, Run, Score, Trace, Turn
from agenteval_cli.evaluators.handoffs import chain_length, ping_pong_at
from agenteval_cli.evaluators.registry import register
from agenteval_cli.evaluators.scoring import READS_TURNS
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.info import format_value
from agenteval_cli.metrics.registry import metric
from agenteval_cli.spec.conditions import OPS, parse_condition_text
from agenteval_cli.trace.boundaries import (
    CARRIED,
    RESTARTED,
    WENT_ON,
    Boundaries,
    shown,
    turn_boundaries,
)

CONVERSATION_METRICS = (
    metric("turns", "turns", lower=True, fmt="count", quantity=True, level="conversation"),
    metric(
        "resolved",
        "resolved",
        fmt="percent",
        pass_mark=">= 1",
        binary=True,
        headline=True,
        level="conversation",
    ),
    metric(
        "turns_to_resolution",
        "turns to resolution",
        lower=True,
        fmt="count",
        quantity=True,
        short="turns to resolve",
        level="conversation",
    ),
    metric(
        "agent_continuity",
        "agent continuity",
        fmt="percent",
        short="continuity",
        level="conversation",
    ),
    metric(
        "model_calls",
        "model calls / conversation",
        lower=True,
        fmt="count",
        quantity=True,
        short="model calls",
        level="conversation",
    ),
    metric(
        "followup_model_calls",
        "model calls / follow-up",
        lower=True,
        fmt="count",
        quantity=True,
        short="follow-up calls",
        level="conversation",
    ),
    metric(
        "followup_cost_usd",
        "cost / follow-up",
        lower=True,
        fmt="money",
        quantity=True,
        short="follow-up cost",
        level="conversation",
    ),
    metric(
        "conversation_handoffs",
        "handoffs / conversation",
        lower=True,
        fmt="count",
        quantity=True,
        short="handoffs (conv.)",
        level="conversation",
    ),
    metric(
        "conversation_ping_pong",
        "ping-pong across turns",
        lower=True,
        fmt="percent",
        short="ping-pong (conv.)",
        pass_mark="<= 0",
        binary=True,
        level="conversation",
    ),
)
RESOLUTION_KEYS = ("resolved", "turns_to_resolution")  # decided from every other score
TRACE_KEYS = tuple(m.key for m in CONVERSATION_METRICS if m.key not in RESOLUTION_KEYS)


@register(
    "conversation",
    family="conversation",
    reads="the conversation's turns: each turn's trace and scores (cost_usd from token_cost)",
    description="a conversation as a whole: turns, resolved, turns to resolution, agent "
    "continuity, model calls per conversation and per follow-up, cost per follow-up, "
    "handoffs and ping-pong across turns; scored on every conversation row",
    metrics=CONVERSATION_METRICS,
    example="- {name: conversation, coordinators: [triage]}",
    needs_answer=False,
)
def conversation(*, coordinators: list[str] | None = None) -> Any:
    """Scored on every conversation row (a row with `inputs.turns`) whether the spec names it
    or not; name it to give `coordinators`, agents that regain control by design (added to
    those the trace found). A follow-up is any turn after the first, a resume included.

    `turns`: the turns the conversation ran (up to the one that errored or stopped at an
    interrupt nothing resumed). `resolved`: 1 when the conversation ended normally (no error,
    no unanswered interrupt), every turn's scores that have a pass mark met it (routing
    accuracy 100%, resolution coverage 100%, no ping-pong, a pass mark of your own), and so
    did the scores of the evaluators run on the whole conversation (its top-level references,
    `level: conversation` judges); else 0, the comment naming what was unmet; null when a
    needed score is unknown (an evaluator failed). A turn that stopped at an interrupt the
    next turn resumed has no answer of its own: its scores that need one are not checked.
    `turns_to_resolution`: the turns a resolved conversation took (with a simulated user that
    stops once satisfied, how soon it got there); null, with the reason, when not resolved.
    With `simulated_user.stop.judge`, the judge is the word on resolution: its scores of each
    turn (read against the whole conversation's references, to know when to stop) are not
    turn checks, and a conversation the judge stopped is resolved at that turn (its other
    checks met), one it did not stop (the user was done first, `max_turns`) is not.

    Where each turn began and ended is read once (the same reading for the three figures
    below): a turn begins at the agent of its first model call and ends at the agent of its
    last, nested agents known by their full path (`team > agent`). It leaves the user with
    its last agent, passing over a coordinator that got control back (one that had it
    earlier: a supervisor summing up); with its last agent when no other is left. A turn
    that ran no model (a resume a tool finished) carries that agent over. A follow-up
    either went on (it began with the agent the user was left with, or with the one that
    spoke last), restarted (it began at the agent the conversation's first turn began at:
    the graph started over, as a swarm without a checkpointer or a supervisor does), or
    was handed over between turns (it began at another agent).

    `agent_continuity`: the share of follow-ups answered by the agent the user was left
    with, without routing again: the turn began with that agent and handed nothing on, or
    ran no model after an agent had (that agent carried over). A turn begun by a
    coordinator (a supervisor routing every turn again), restarted or handed on is not
    continuity. Null for a one-turn conversation.

    `model_calls`: the model calls of every turn (calls that raised and answered nothing left
    out, retried attempts' calls counted). `followup_model_calls` and `followup_cost_usd`: the
    mean per follow-up turn (turns 2..n) of its model calls and of its `cost_usd` (the turns'
    own scores: needs `token_cost`; unknown when one follow-up's cost is); null for a one-turn
    conversation.

    `conversation_handoffs`: every turn's handoffs, plus one for each turn handed over
    between turns; a restart is none (no agent passed control). `conversation_ping_pong`:
    1 when the handoffs hold a specialist bounce A → B → A, within a turn or across turns
    that went on or were handed over (A → B in turn 1, then B → A in turn 2); a restart
    ends the run of turns a bounce is looked for in.

    Every figure read from traces is null, with the reason, when a turn it needs was
    untraced."""
    declared = frozenset(c.lower() for c in coordinators or ())

    def evaluate(run: Run) -> list[dict]:
        return [
            {"key": s.key, "score": s.score, "comment": s.comment}
            for s in conversation_scores(run.turns or [], declared)
        ]

    setattr(evaluate, READS_TURNS, True)
    return evaluate


def conversation_scores(turns: Sequence[Turn], coordinators: frozenset[str]) -> list[Score]:
    """The figures of the conversation evaluator that its turns' traces give (all but
    ``resolved`` and ``turns_to_resolution``), over the turns that reached the target: a
    turn that could not be sent (a resume with no interrupt to answer) ran no call and is
    no follow-up."""
    ended = turns[-1].ended if turns else None  # why it stopped, said with its turn count
    turns = [turn for turn in turns if turn.sent]
    untraced = next(
        (
            f"turn {n} untraced: {t.trace.untraced}"
            for n, t in enumerate(turns, 1)
            if t.trace.untraced
        ),
        None,
    )
    scores = [Score("turns", float(len(turns)), ended)]
    if untraced is not None:
        return scores + [Score(key, None, untraced) for key in TRACE_KEYS if key != "turns"]
    skip = _skipped(turns, coordinators)
    bounds = turn_boundaries([t.trace for t in turns], skip)
    calls = [_model_calls(t.trace) for t in turns]
    scores.append(continuity(turns, bounds))
    scores.append(Score("model_calls", float(sum(calls)), _per_turn(calls)))
    follow_ups = calls[1:]
    if follow_ups:
        mean = sum(follow_ups) / len(follow_ups)
        scores.append(Score("followup_model_calls", mean, f"turns 2..{len(turns)}: {follow_ups}"))
    else:
        scores.append(Score("followup_model_calls", None, ONE_TURN))
    scores.append(followup_cost(turns))
    scores.append(handoffs_across(turns, bounds))
    scores.append(ping_pong_across(bounds, skip))
    return scores


ONE_TURN = "a one-turn conversation has no follow-up"


def _skipped(turns: Iterable[Turn], declared: frozenset[str]) -> frozenset[str]:
    """The coordinators (lower-cased): the configured ones and those each turn's trace found."""
    found = {c.lower() for t in turns for c in t.trace.coordinators}
    return frozenset(found | declared)


def _model_calls(trace: Trace) -> int:
    return sum(1 for call in trace.model_calls if not call.failed)


def _per_turn(values: Sequence[int]) -> str:
    return "per turn " + " + ".join(str(v) for v in values)


def continuity(turns: Sequence[Turn], bounds: Boundaries) -> Score:
    """``agent_continuity``: the share of follow-ups the agent the user was left with
    answered on its own: the turn went on with it and handed nothing on, or ran no model
    (the agent carried over)."""
    if len(turns) < 2:
        return Score("agent_continuity", None, ONE_TURN)
    kept, notes = 0, []
    for turn, at in zip(turns[1:], bounds.turns[1:], strict=True):
        number, before = at.number, at.before
        if at.entered == CARRIED:
            if before is None:
                notes.append(f"turn {number}: no model call, and no agent before it")
                continue
            kept += 1
            notes.append(f"turn {number}: no model call, {shown(before)} carried over")
        elif before is None or at.began != before:
            why = "" if at.entered == WENT_ON else f" ({at.entered})"
            notes.append(f"turn {number} began at {shown(at.began)}, not {_named(before)}{why}")
        elif chain_length(turn.trace) > 0:
            notes.append(f"turn {number}: {' → '.join(turn.trace.agent_path)}")
        else:
            kept += 1
            notes.append(f"turn {number}: {shown(at.began)} went on")
    share = kept / (len(turns) - 1)
    return Score("agent_continuity", share, "; ".join(notes))


def _named(path: tuple[str, ...] | None) -> str:
    return shown(path) if path else "any agent (none ran before it)"


def followup_cost(turns: Sequence[Turn]) -> Score:
    """``followup_cost_usd``: the mean of the follow-ups' ``cost_usd`` scores."""
    if len(turns) < 2:
        return Score("followup_cost_usd", None, ONE_TURN)
    costs = []
    for number, turn in enumerate(turns[1:], 2):
        found = next((s for s in turn.scores if s.key == "cost_usd"), None)
        if found is None:
            return Score(
                "followup_cost_usd", None, "no cost_usd per turn: add token_cost to the evaluators"
            )
        if found.score is None:
            return Score("followup_cost_usd", None, f"turn {number}: {found.comment}")
        costs.append(float(found.score))
    shown = ", ".join(format_value("money", c) for c in costs)
    return Score("followup_cost_usd", sum(costs) / len(costs), f"turns 2..{len(turns)}: {shown}")


def handoffs_across(turns: Sequence[Turn], bounds: Boundaries) -> Score:
    """``conversation_handoffs``: the turns' handoffs and those between turns (a turn
    handed over); a restart at the entry is none."""
    within = [chain_length(t.trace) for t in turns]
    between = bounds.between()
    comment = _per_turn(within)
    if between:
        moves = ", ".join(f"turn {b.number}: {shown(b.before)} → {shown(b.began)}" for b in between)
        comment += f"; between turns: {moves}"
    restarts = [b for b in bounds.turns if b.entered == RESTARTED]
    if restarts:
        again = ", ".join(f"turn {b.number} at {shown(b.began)}" for b in restarts)
        comment += f"; restarted (no handoff): {again}"
    return Score("conversation_handoffs", float(sum(within) + len(between)), comment)


def ping_pong_across(bounds: Boundaries, coordinators: frozenset[str]) -> Score:
    """``conversation_ping_pong``: a specialist bounce within a stretch of turns that ran
    on from one another (a restart ends one)."""
    for stretch in bounds.stretches:
        merged = stretch.trace
        bounce = ping_pong_at(merged, coordinators)
        if bounce is None:
            continue
        if merged.schema < 2:
            a, b = merged.agent_path[bounce], merged.agent_path[bounce + 1]
            return Score("conversation_ping_pong", True, f"{a} → {b} → {a}")
        back = merged.handoffs[bounce]
        there = next(
            i
            for i in back.after
            if (merged.handoffs[i].source, merged.handoffs[i].target) == (back.target, back.source)
        )
        numbers = stretch.numbers
        comment = (
            f"{back.target} → {back.source} (turn {numbers[there]}) → {back.target} "
            f"(turn {numbers[bounce]})"
        )
        return Score("conversation_ping_pong", True, comment)
    return Score("conversation_ping_pong", False, "no bounce")


def resolution(
    turns: Sequence[Turn],
    whole: Sequence[Score],
    unanswered: str | None,
    catalog: Catalog,
    *,
    judge: str | None = None,
) -> list[Score]:
    """``resolved`` and ``turns_to_resolution``, from the turns' scores and those of the
    evaluators run on the whole conversation (``whole``), each checked against the pass
    mark its metric declares; ``unanswered`` says why the conversation ended without an
    answer (an error, an interrupt nothing resumed), which is never resolved.

    ``judge``: the evaluator that stops a simulated conversation once it says resolved
    (``simulated_user.stop.judge``). Its score of each turn, read against the whole
    conversation's references, says how far the conversation had got, not whether that turn
    was answered: the judge's key is met when the judge stopped the conversation (resolved at
    that turn, the last), and unmet otherwise, whatever its pass mark."""
    marks = catalog.pass_marks()
    if unanswered is not None:
        ended = f"not resolved, turn {len(turns)}: {unanswered}"
        return [Score("resolved", False, ended), Score("turns_to_resolution", None, ended)]
    unmet: list[str] = []
    unknown: list[str] = []
    if judge is not None and turns:
        _judge_verdict(turns, judge, unmet, unknown)
    checked = [(f"turn {n}", t.scores, t.status) for n, t in enumerate(turns, 1)]
    checked.append(("conversation", list(whole), OK))
    for where, scores, turn_status in checked:
        for one in scores:
            mark = marks.get(one.key)
            if mark is None or one.key == judge:
                continue
            if one.score is None:
                if turn_status == OK:  # a resumed interrupt's turn has no answer to check
                    unknown.append(f"{where} {one.key} ({one.comment})")
                continue
            if not meets(float(one.score), mark, catalog.higher_is_better(one.key)):
                shown = catalog.fmt(one.key, float(one.score))
                unmet.append(f"{where} {one.key} {shown} (pass mark {mark})")
    if unmet:
        comment = "unmet: " + "; ".join(unmet)
        return [Score("resolved", False, comment), Score("turns_to_resolution", None, comment)]
    if unknown:
        comment = "unknown: " + "; ".join(unknown)
        return [Score("resolved", None, comment), Score("turns_to_resolution", None, comment)]
    done = f"every check met in {len(turns)} turn(s)"
    return [Score("resolved", True, done), Score("turns_to_resolution", float(len(turns)), done)]


def _judge_verdict(turns: Sequence[Turn], judge: str, unmet: list[str], unknown: list[str]) -> None:
    """The stop judge's word on a simulated conversation: met when it ended the
    conversation, unknown when its score of the last turn is, else unmet."""
    from agenteval_cli.targets.users import ended_by_judge

    last = turns[-1]
    if ended_by_judge(last.ended):
        return
    said = last.score_map().get(judge)
    if said is None and judge in last.score_map():
        unknown.append(f"turn {len(turns)} {judge} (the stop judge's score of the last turn)")
        return
    unmet.append(f"the stop judge {judge} never said resolved ({last.ended or 'no reason'})")


def meets(value: float, mark: str, higher_is_better: bool) -> bool:
    """Whether ``value`` meets a pass mark (``">= 1"``; a bare number is "at least", or "at
    most" where lower is better), as the gate reads one."""
    op, bound = parse_condition_text(mark)
    return OPS[op or (">=" if higher_is_better else "<=")](value, bound)
