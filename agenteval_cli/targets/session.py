"""A conversation with one target: its thread, and the history agenteval carries from turn
to turn for a target that keeps none of its own.

A graph compiled with a checkpointer keeps the conversation itself on the session's
``thread_id``: it is sent only each new turn. A graph without one is sent ``messages``, the
messages its previous turn returned (the history it was given included) and the new turn's.
A function or Runnable is sent each turn as a mapping (see :func:`turn_value`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.data.conversations import RESUME, Resume, TurnInput

HISTORY, THREAD_ID = "history", "thread_id"  # the fields agenteval adds to a turn's mapping


def new_thread() -> str:
    return str(uuid.uuid4())


@dataclass
class Session:
    """One conversation × repetition × attempt: a retried conversation gets a new one."""

    thread_id: str = field(default_factory=new_thread)
    # The conversation so far as message objects: what the graph's last turn returned, or
    # the user's messages and the answers where its outputs had no messages.
    messages: list[Any] = field(default_factory=list)
    # The conversation so far for a function or Runnable: one ``{"role": "user",
    # "content": ...}`` per turn sent and one ``{"role": "assistant", "content": ...}`` per
    # answer (see :meth:`took`).
    history: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False  # the last turn stopped at interrupt(), waiting for a resume
    turns: int = 0  # turns taken so far
    # The row's fields a target's config: is filled from (targets.configs.row_fields; None:
    # the first turn's), and the config so filled on the first turn, kept for the others.
    row: dict[str, Any] | None = None
    config: dict[str, Any] | None = None

    def took(self, turn: TurnInput, outputs: dict[str, Any], input_key: str) -> None:
        """Remember a turn the target answered (or stopped at an interrupt in)."""
        pending = returned_interrupt(outputs)
        self.history.append(_user_entry(turn, input_key))
        text = _text(outputs.get("final_response"))
        answer: dict[str, Any] = {"role": "assistant", "content": text}
        if pending is not None:
            answer["interrupt"] = pending
        self.history.append(answer)
        self.interrupted = pending is not None
        self.turns += 1


def turn_value(turn: TurnInput, session: Session, built: Any = None) -> dict[str, Any]:
    """What a function or Runnable is given for one turn of a conversation::

        {**turn_inputs, "history": [...], "thread_id": "..."}
        {"resume": value, "history": [...], "thread_id": "..."}   # a resume turn

    ``turn_inputs`` are the turn's fields (a string turn is ``{input_key: text}``), or what
    the target's ``input:`` made of them (which must be a mapping); ``history`` is the
    conversation before this turn, oldest first: ``{"role": "user", "content": text}`` for
    each turn sent (a resume turn's also has ``"resume": value``; its content is the value
    as text) and ``{"role": "assistant", "content": text}`` for each answer (with
    ``"interrupt": what it waits for`` when the turn stopped at ``interrupt()``); the
    ``thread_id`` is the conversation's, the same on every turn (a new one when the
    conversation is retried), for a target that keeps its own checkpointer.
    """
    if isinstance(turn, Resume):
        value: Any = {RESUME: turn.value}
    else:
        value = turn if built is None else built
        if not isinstance(value, dict):
            raise TypeError(
                f"input: made a {type(value).__name__} of the turn; a conversation's turn is "
                "given to a function or Runnable as a mapping (its history and thread_id added)"
            )
        clash = [key for key in (HISTORY, THREAD_ID) if key in value]
        if clash:
            raise ValueError(
                f"the turn's inputs have {', '.join(clash)}, which agenteval sets for a "
                "function or Runnable in a conversation: rename the field"
            )
    history = [dict(entry) for entry in session.history]
    return {**value, HISTORY: history, THREAD_ID: session.thread_id}


def _user_entry(turn: TurnInput, input_key: str) -> dict[str, Any]:
    if isinstance(turn, Resume):
        return {"role": "user", "content": _text(turn.value), RESUME: turn.value}
    content = turn.get(input_key, turn)
    return {"role": "user", "content": _text(content)}


def _text(value: Any) -> str:
    """A message's content: text as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
