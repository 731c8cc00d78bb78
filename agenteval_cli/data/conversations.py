"""Conversation rows: a row whose ``inputs.turns`` lists what the user says, turn by turn.

Each turn is what a single-turn row's inputs are (a mapping such as ``{"question": ...}``,
or a string: the user's message), or ``{"resume": value}``: the answer to the interrupt the
previous turn stopped at, sent as ``Command(resume=value)``. ``outputs.turns`` (optional,
as long as ``inputs.turns``) holds each turn's references; the other keys of ``outputs`` are
the whole conversation's. Rows without ``inputs.turns`` are single-turn, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.records import Example
from agenteval_cli.data.readers import describe_json

TURNS = "turns"
RESUME = "resume"


@dataclass(frozen=True)
class Resume:
    """A turn that answers an interrupt: ``Command(resume=value)``."""

    value: Any


TurnInput = dict[str, Any] | Resume


def is_conversation(example: Example) -> bool:
    return isinstance(example.inputs, dict) and TURNS in example.inputs


def turn_inputs(example: Example, *, input_key: str = "question") -> list[TurnInput]:
    """The row's turns as inputs: a string turn is ``{input_key: text}``, a resume turn a
    :class:`Resume`. Assumes :func:`shape_problem` found none."""
    turns: list[TurnInput] = []
    for turn in example.inputs[TURNS]:
        if isinstance(turn, str):
            turns.append({input_key: turn})
        elif set(turn) == {RESUME}:
            turns.append(Resume(turn[RESUME]))
        else:
            turns.append(dict(turn))
    return turns


def turn_references(example: Example, count: int | None = None) -> list[dict[str, Any]]:
    """Each turn's references (``outputs.turns``), ``{}`` for a turn that has none: one per
    scripted turn, or ``count`` of them (the turns a simulated user wrote have none)."""
    scripted = example.inputs.get(TURNS) if isinstance(example.inputs, dict) else None
    size = len(scripted) if isinstance(scripted, list) and count is None else count or 0
    given = example.outputs.get(TURNS) if isinstance(example.outputs, dict) else None
    references = [dict(e) if isinstance(e, dict) else {} for e in given or []][:size]
    return references + [{} for _ in range(size - len(references))]


def conversation_references(example: Example) -> dict[str, Any]:
    """The references of the whole conversation: ``outputs`` without ``turns``."""
    return {k: v for k, v in (example.outputs or {}).items() if k != TURNS}


@dataclass(frozen=True)
class ShapeFault:
    """What is wrong with a conversation row's shape, and its fix: a dataset error says
    them as ``problem (fix)``, :func:`shape_problem` as ``problem: fix``."""

    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.problem}: {self.fix}"


def shape_problem(inputs: Any, outputs: Any) -> str | None:
    """What is wrong with a conversation row's shape, in one clause, or None.

    Checked when a dataset is read and by ``dataset validate``. A resume with no interrupt
    before it cannot be known until the conversation runs: that is the conversation's error
    then, not the row's."""
    fault = shape_fault(inputs, outputs)
    return None if fault is None else str(fault)


def shape_fault(inputs: Any, outputs: Any) -> ShapeFault | None:
    """:func:`shape_problem` as its problem and its fix apart."""
    if not isinstance(inputs, dict) or TURNS not in inputs:
        if isinstance(outputs, dict) and TURNS in outputs:
            return ShapeFault(
                "outputs.turns is given but inputs.turns is not", "add the turns to inputs"
            )
        return None
    turns = inputs[TURNS]
    if not isinstance(turns, list) or not turns:
        got = "an empty list" if turns == [] else describe_json(turns)
        return ShapeFault(
            f"inputs.turns must be a non-empty list of turns, got {got}",
            'give strings, mappings of input fields, or {"resume": value}',
        )
    for number, turn in enumerate(turns, 1):
        if isinstance(turn, str):
            if not turn.strip():
                return ShapeFault(
                    f"inputs.turns[{number}] is an empty message",
                    "write what the user says, or leave the turn out",
                )
            continue
        if not isinstance(turn, dict) or not turn:
            what = "an empty object" if isinstance(turn, dict) else describe_json(turn)
            return ShapeFault(
                f"inputs.turns[{number}] is {what}",
                'give a string, a mapping of input fields, or {"resume": value}',
            )
        if RESUME in turn and len(turn) > 1:
            return ShapeFault(
                f'inputs.turns[{number}] mixes "resume" with other fields',
                "give resume alone in its turn",
            )
    if isinstance(turns[0], dict) and set(turns[0]) == {RESUME}:
        return ShapeFault("inputs.turns[1] is a resume", "start the conversation with a message")
    others = [str(key) for key in inputs if key != TURNS]
    if others:
        return ShapeFault(
            f"inputs has {', '.join(others)} beside turns", "put each turn's fields in its turn"
        )
    if not isinstance(outputs, dict) or TURNS not in outputs:
        return None
    references = outputs[TURNS]
    if not isinstance(references, list):
        return ShapeFault("outputs.turns must be a list", "give one mapping of references per turn")
    if len(references) != len(turns):
        return ShapeFault(
            f"outputs.turns has {_count(len(references), 'entry', 'entries')} for "
            f"{_count(len(turns), 'turn', 'turns')}",
            "give one per turn, {} for a turn with no references",
        )
    for number, each in enumerate(references, 1):
        if not isinstance(each, dict):
            return ShapeFault(
                f"outputs.turns[{number}] must be an object of references, got "
                f"{describe_json(each)}",
                "write {} for a turn with no references",
            )
    return None


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def opening_line(inputs: Any) -> str | None:
    """A conversation's inputs as one line, for a report's example heading: its first
    message and how many turns follow; None for a single-turn row."""
    turns = inputs.get(TURNS) if isinstance(inputs, dict) else None
    if not isinstance(turns, list) or not turns:
        return None
    first = turns[0]
    if isinstance(first, dict):
        first = first.get("question", next(iter(first.values()), "")) if first else ""
    more = len(turns) - 1
    return str(first) + (f" (+{_count(more, 'turn', 'turns')})" if more else "")
