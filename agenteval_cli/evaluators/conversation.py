"""Scoring a conversation: every evaluator on each turn, then the conversation's figures.

Each turn is scored as a single-turn result is, against that turn's references
(``outputs.turns``). The conversation's score of a key is what its turns scored: the sum for
a quantity (tokens, cost, a count), the mean over the turns that have one otherwise.
"""

from __future__ import annotations

import asyncio

from agenteval_cli.core.records import Example, Result, Score, Turn
from agenteval_cli.data.conversations import turn_references
from agenteval_cli.evaluators.scoring import BoundEvaluator, EvaluatorPool, score
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog


async def score_conversation(
    evaluators: list[BoundEvaluator],
    example: Example,
    result: Result,
    pool: EvaluatorPool | None = None,
    *,
    catalog: Catalog = BUILT_IN,
) -> list[Score]:
    """Score each of ``result.turns`` (its ``scores`` set in place) and return the
    conversation's scores."""
    turns = result.turns or []
    references = turn_references(example)
    found = await asyncio.gather(
        *(
            score(
                evaluators,
                Example(example.id, turn.inputs, refs, example.metadata, example.row),
                turn.outputs or {},
                turn.trace,
                pool,
                interrupt=turn.interrupt,
            )
            for turn, refs in zip(turns, references, strict=False)
        )
    )
    for turn, scores in zip(turns, found, strict=False):
        turn.scores = scores
    return across_turns(turns, catalog)


def across_turns(turns: list[Turn], catalog: Catalog = BUILT_IN) -> list[Score]:
    """One score per key the turns have: summed for a quantity, else the mean of the turns
    scored (null, with the turns' reason, when none was)."""
    keys: dict[str, list[Score]] = {}
    for turn in turns:
        for one in turn.scores:
            keys.setdefault(one.key, []).append(one)
    scores: list[Score] = []
    for key, each in keys.items():
        values = [float(s.score) for s in each if s.score is not None]
        if catalog.info(key).kind == "quantity":
            if len(values) < len(each):
                why = next(s.comment for s in each if s.score is None)
                scores.append(Score(key, None, f"unknown in a turn: {why}"))
            else:
                scores.append(Score(key, sum(values)))
        elif values:
            scores.append(Score(key, sum(values) / len(values), f"mean of {len(values)} turns"))
        else:
            scores.append(Score(key, None, each[0].comment))
    return scores
