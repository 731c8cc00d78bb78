"""Per-row configuration: a target's ``config:`` with its ``{field}`` placeholders filled
from each row as ``input:``'s are (``configurable: {user_id: "{user_id}"}``), so a graph
that keys its state by a configurable keeps concurrent examples apart; and the thread each
call runs on: the row's when ``config:`` fills ``thread_id``, else one of its own.

A conversation's config is filled once, for all its turns (one conversation, one user):
from a scripted row's first turn (its ``inputs`` hold only ``turns``), from a simulated
row's ``inputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.records import Example
from agenteval_cli.data.conversations import Resume, TurnInput, is_conversation, turn_inputs
from agenteval_cli.targets.inputs import InputBuilder, compile_template, template_fields
from agenteval_cli.targets.session import Session, new_thread

THREAD_ID = "thread_id"


@dataclass(frozen=True)
class RowConfig:
    """A target's ``config:``, ready to fill for a row."""

    template: dict[str, Any] = field(default_factory=dict)

    @property
    def fields(self) -> tuple[str, ...]:
        """The row fields its placeholders name, in order."""
        return template_fields(self.template)

    @property
    def sets_thread(self) -> bool:
        """Whether the spec gives each row its thread (``configurable.thread_id``)."""
        return THREAD_ID in self.template.get("configurable", {})

    def filled(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The config for ``row`` (MissingInputField naming a field it lacks)."""
        fill: InputBuilder = compile_template(self.template, option="config")
        value: dict[str, Any] = fill(dict(row))
        return value

    def for_turn(self, session: Session, turn: TurnInput) -> dict[str, Any]:
        """A conversation's config, filled on its first turn and kept for the others; the
        session takes the row's thread when the config names one."""
        if session.config is None:
            row = session.row
            if row is None:  # not driven by the runner: the turn's own fields
                row = {} if isinstance(turn, Resume) else dict(turn)
            session.config = self.filled(row)
            own = session.config.get("configurable", {}).get(THREAD_ID)
            if own is not None:
                session.thread_id = str(own)
        return session.config


def call_config(
    config: Mapping[str, Any], callbacks: list[Any], thread_id: str | None = None
) -> dict[str, Any]:
    """The RunnableConfig of one call: the row's config, its thread (the one the config
    names; else ``thread_id``, a conversation's; else a fresh one, so a checkpointer keeps
    each example apart) and the trace recorder."""
    configurable = dict(config.get("configurable", {}))
    own = configurable.get(THREAD_ID)
    configurable[THREAD_ID] = str(own) if own is not None else thread_id or new_thread()
    return {**config, "configurable": configurable, "callbacks": callbacks}


def row_fields(example: Example, *, input_key: str = "question") -> dict[str, Any]:
    """The fields a row's config is filled from: a single-turn or simulated row's inputs,
    a scripted conversation's first turn."""
    if not is_conversation(example):
        return example.inputs
    first = turn_inputs(example, input_key=input_key)[:1]
    return dict(first[0]) if first and isinstance(first[0], dict) else {}
