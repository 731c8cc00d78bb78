"""Scoring a conversation: every evaluator on each turn, then the conversation as a whole.

Each turn is scored as a single-turn result is, against that turn's references
(``outputs.turns``). The conversation's score of a key is what its turns scored, as its
metric declares (``across_turns``): the sum for a count or a spend (tokens, cost, handoffs),
the mean over the turns that have one otherwise (rates, outcomes).

Some evaluators are also, or only, run once on the whole conversation:

- those whose reference fields are at the top of the row's ``outputs`` (the conversation's
  references: ``must_mention`` the conversation as a whole must cover, say), which also run
  on each turn against the turn's own: this run is the conversation's check of those
  references, counted toward ``resolved`` (named in its comment when unmet), while their
  keys keep their turns' value where some turn has such a reference of its own (else the
  turns scored against nothing, and the key is this run's);
- those the spec gives ``level: conversation`` (a judge of the whole transcript), which run
  only here: their keys are this run's.

That run sees the conversation: ``inputs`` are the row's (``{"turns": [...]}``), the
reference its top-level ``outputs``, the trace every turn's calls merged, and the outputs
:func:`conversation_outputs` makes. Then the conversation evaluator
(:mod:`~agenteval_cli.evaluators.conversation_metrics`) adds the conversation's own figures,
and whether it was resolved.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agenteval_cli.core.records import (
    Example,
    Result,
    Run,
    Score,
    Trace,
    Turn,
    no_answer_reason,
)
from agenteval_cli.data.conversations import conversation_references, turn_references
from agenteval_cli.evaluators.conversation_metrics import (
    RESOLUTION_KEYS,
    conversation,
    resolution,
)
from agenteval_cli.evaluators.registry import REGISTRY
from agenteval_cli.evaluators.scoring import (
    BoundEvaluator,
    EvaluatorPool,
    call_evaluator,
    reads_turns,
    score,
)
from agenteval_cli.evaluators.user_spend import user_spend
from agenteval_cli.metrics.catalog import Catalog


async def score_conversation(
    evaluators: list[BoundEvaluator],
    example: Example,
    result: Result,
    pool: EvaluatorPool | None = None,
    *,
    catalog: Catalog | None = None,
    pricing: Mapping[str, Any] | None = None,
    judge: str | None = None,
) -> list[Score]:
    """Score each of ``result.turns`` (its ``scores`` set in place) and return the
    conversation's scores. ``catalog``: how the keys read (by default the evaluators' own
    declarations, then the built-ins); ``pricing``: the spec's, for a simulated user's
    model calls (:mod:`~agenteval_cli.evaluators.user_spend`); ``judge``: the evaluator
    that stops a simulated conversation, whose word its resolution is (see
    :func:`~agenteval_cli.evaluators.conversation_metrics.resolution`)."""
    catalog = catalog or Catalog.of(m for e in evaluators for m in e.metrics)
    turns = result.turns or []
    per_turn = [e for e in evaluators if e.level != "conversation"]
    references = turn_references(example, len(turns))  # a simulated user's turns have none
    found = await asyncio.gather(
        *(
            score(
                _not_yet(per_turn, turn) if turn.sent else [],  # an unsent turn has none
                Example(example.id, turn.inputs, refs, example.metadata, example.row),
                turn.outputs or {},
                _with_error(turn.trace, turn.error),
                pool,
                interrupt=turn.interrupt,
            )
            for turn, refs in zip(turns, references, strict=True)
        )
    )
    for turn, scores in zip(turns, found, strict=True):
        turn.scores = [*turn.scores, *scores]
    scores = across_turns(turns, catalog)
    whole = await score_whole(evaluators, example, result, pool)
    given = {field for refs in references for field in refs}  # the turns' reference fields
    scores = with_whole(scores, whole, _whole_evaluators(evaluators, example), catalog, given)
    figures = await call_evaluator(
        _conversation_evaluator(evaluators), _available(example, result), pool
    )
    figures = [s for s in figures if s.key not in RESOLUTION_KEYS]  # (if it failed)
    unanswered = no_answer_reason(result.error, result.interrupt)
    resolved = resolution(turns, whole, unanswered, catalog, judge=judge)
    return scores + figures + resolved + user_spend(turns, pricing)


def _not_yet(evaluators: list[BoundEvaluator], turn: Turn) -> list[BoundEvaluator]:
    """The evaluators a turn has no scores of yet: a judge deciding when a simulated
    conversation is resolved scored each turn as it was answered."""
    have = {s.key for s in turn.scores}
    return [e for e in evaluators if not have or not set(e.keys or (e.name,)) <= have]


def _whole_evaluators(
    evaluators: Sequence[BoundEvaluator], example: Example
) -> list[BoundEvaluator]:
    """The evaluators run once on the whole conversation: ``level: conversation`` ones and
    those reading a reference field the conversation's references hold."""
    given = set(conversation_references(example))
    return [
        e
        for e in evaluators
        if not reads_turns(e.fn) and (e.level == "conversation" or given & set(e.references))
    ]


async def score_whole(
    evaluators: list[BoundEvaluator],
    example: Example,
    result: Result,
    pool: EvaluatorPool | None = None,
) -> list[Score]:
    """The scores of the evaluators run once on the whole conversation (none: ``[]``)."""
    chosen = _whole_evaluators(evaluators, example)
    if not chosen:
        return []
    trace = _with_error(result.trace, result.error)
    whole = Example(
        example.id, example.inputs, conversation_references(example), example.metadata, example.row
    )
    outputs = conversation_outputs(result.turns or [], result.outputs, trace.messages)
    return await score(chosen, whole, outputs, trace, pool, interrupt=result.interrupt)


def _with_error(trace: Trace, error: str | None) -> Trace:
    """``trace`` saying the call raised ``error``: what scoring reads a failed call from."""
    return trace if error is None or trace.error is not None else replace(trace, error=error)


def conversation_outputs(
    turns: Sequence[Turn], last: dict[str, Any] | None, messages: Sequence[Any] = ()
) -> dict[str, Any]:
    """What an evaluator of the whole conversation sees as its outputs: the last turn's,
    with ``final_response`` every turn's answer in order (blank lines between), the turns'
    ``resolution_notes`` together, ``transcript`` the conversation as the user saw it
    (``{"role": "user" | "assistant", "content"}`` per message), ``messages`` every turn's
    messages (the merged trace's, when it has them) and ``turns`` each turn's outputs."""
    answers: list[str] = []
    notes: list[Any] = []
    transcript: list[dict[str, str]] = []
    for turn in turns:
        transcript.append({"role": "user", "content": _said(turn.inputs)})
        outputs = turn.outputs or {}
        answer = outputs.get("final_response")
        if answer is not None and str(answer) != "":
            answers.append(str(answer))
            transcript.append({"role": "assistant", "content": str(answer)})
        given = outputs.get("resolution_notes") or []
        notes += [given] if isinstance(given, str) else list(given)
    combined = dict(last or {})
    combined.update(
        final_response="\n\n".join(answers),
        resolution_notes=notes,
        transcript=transcript,
        turns=[turn.outputs for turn in turns],
    )
    if messages:
        combined["messages"] = list(messages)
    return combined


def _said(inputs: dict[str, Any]) -> str:
    """A turn's inputs as a message: its one field's text, else the fields as JSON."""
    if len(inputs) == 1:
        (value,) = inputs.values()
        if isinstance(value, str):
            return value
    return json.dumps(inputs, sort_keys=True, default=str)


def with_whole(
    scores: list[Score],
    whole: list[Score],
    chosen: Sequence[BoundEvaluator],
    catalog: Catalog,
    turn_fields: Collection[str] = (),
) -> list[Score]:
    """The turns' scores with what the whole-conversation run adds: the keys of the
    ``level: conversation`` evaluators (which score no turn), and the judges' spend, added to
    the turns'. The other evaluators of that run are the conversation's checks (they count
    toward ``resolved``): their keys keep their turns' value where some turn has a reference
    of its own they read (``turn_fields``, the fields of the turns' references). Where none
    has, the turns scored against nothing (a routing accuracy of 1 where no agent was
    expected), so the key is the whole conversation's."""
    whole_only = [
        e for e in chosen if e.level == "conversation" or not set(e.references) & set(turn_fields)
    ]
    once = {key for e in whole_only for key in e.keys or (e.name,)}
    checks = {key for e in chosen if e not in whole_only for key in e.keys or (e.name,)}
    by_key = {s.key: s for s in scores}
    for one in whole:
        before = by_key.get(one.key)
        if one.key in checks and one.key not in once:
            continue
        if one.key in once or before is None:
            comment = f"whole conversation: {one.comment}" if one.comment else "whole conversation"
            by_key[one.key] = Score(one.key, one.score, comment)
        elif catalog.info(one.key).across_turns == "sum":
            if before.score is None or one.score is None:
                by_key[one.key] = Score(one.key, None, before.comment or one.comment)
            else:
                by_key[one.key] = Score(one.key, float(before.score) + float(one.score))
    return list(by_key.values())


def _conversation_evaluator(evaluators: Sequence[BoundEvaluator]) -> BoundEvaluator:
    """The spec's conversation evaluator (with its options), else one with none."""
    for evaluator in evaluators:
        if reads_turns(evaluator.fn):
            return evaluator
    info = REGISTRY["conversation"]
    return BoundEvaluator(
        "conversation", conversation(), keys=info.keys, metrics=info.metrics, level="conversation"
    )


def _available(example: Example, result: Result) -> dict[str, Any]:
    """The arguments the conversation evaluator may ask for."""
    outputs = result.outputs or {}
    return {
        "inputs": example.inputs,
        "outputs": outputs,
        "reference_outputs": example.outputs,
        "trace": result.trace,
        "run": Run.from_result(result, example.inputs, example.outputs, keep_trace=True),
        "example": example,
    }


def across_turns(turns: list[Turn], catalog: Catalog | None = None) -> list[Score]:
    """One score per key the turns have, as its metric says (``across_turns``): summed
    (unknown when one turn's is), or the mean of the turns scored (null, with the turns'
    reason, when none was)."""
    catalog = catalog or Catalog()
    keys: dict[str, list[Score]] = {}
    for turn in turns:
        for one in turn.scores:
            keys.setdefault(one.key, []).append(one)
    scores: list[Score] = []
    for key, each in keys.items():
        values = [float(s.score) for s in each if s.score is not None]
        if catalog.info(key).across_turns == "sum":
            if len(values) < len(each):
                why = next(s.comment for s in each if s.score is None)
                scores.append(Score(key, None, f"unknown in a turn: {why}"))
            else:
                scores.append(Score(key, sum(values), f"sum of {len(values)} turns"))
        elif values:
            scores.append(Score(key, sum(values) / len(values), f"mean of {len(values)} turns"))
        else:
            scores.append(Score(key, None, each[0].comment))
    return scores
