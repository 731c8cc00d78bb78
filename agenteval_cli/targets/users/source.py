"""Turn sources: what the driver asks for a conversation's next turn.

The driver keeps the transcript (the user's messages and each turn's final answer, in
OpenAI form) and calls ``await source.next_turn(transcript)`` before every turn; None means
the conversation is over, and ``source.ended_because`` says why. A simulated user's model
calls for the turn it just wrote are in ``source.user_calls``, recorded in a trace of their
own so they never count as the target's: the driver puts them in ``Turn.user_calls``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agenteval_cli.core.records import Example, ModelCall
from agenteval_cli.data.conversations import (
    RESUME,
    Resume,
    TurnInput,
    is_conversation,
    turn_inputs,
)
from agenteval_cli.spec.model import DONE_MARKER

# One message of the transcript: {"role": "user" | "assistant", "content": "..."}.
Message = dict[str, Any]
# The agent a simulated user's model calls are attributed to in their own trace.
USER_AGENT = "simulated_user"

SCRIPT_DONE = "the script's turns are used up"
USER_DONE = "the user said it is done"
JUDGE_DONE = "judge: resolved"  # how the reason a judge ended a conversation begins


def ended_by_judge(ended: str | None) -> bool:
    """Whether a conversation's last turn was ended by the stop judge saying resolved."""
    return ended is not None and ended.startswith(f"{JUDGE_DONE} (")


class SimulatedUserError(Exception):
    """The simulated user failed to write a turn (it raised, or replied with something that
    is no turn): the conversation's error, stated in one line, and its end
    (``ended_because`` holds the same line)."""


class User(Protocol):
    """Writes the user's next message: a string (the message), a mapping (the turn's input
    fields, or ``{"resume": value}``), or None (the user is done). ``turn`` is the 1-based
    number of the turn being written; ``inputs`` are the row's."""

    async def reply(
        self, transcript: list[Message], *, inputs: dict[str, Any], turn: int
    ) -> str | dict[str, Any] | None: ...


@dataclass(frozen=True)
class StopRule:
    """What ends a simulated conversation before ``max_turns``: a reply holding ``marker``
    (the user said it is done), or the evaluator ``judge`` scoring the last turn at
    ``threshold`` or above (the judge says it is resolved)."""

    marker: str = DONE_MARKER
    judge: str | None = None
    threshold: float = 1.0


class TurnSource:
    """A conversation's turns, one at a time. ``ended_because`` is None until
    :meth:`next_turn` returns None; ``user_calls`` are the model calls the last
    :meth:`next_turn` made (a scripted turn makes none). When it returns None they are the
    calls of the reply that ended the conversation: that reply answered the last turn, so
    they belong with that turn's ``user_calls`` (spent all the same)."""

    def __init__(self) -> None:
        self.ended_because: str | None = None
        self.user_calls: list[ModelCall] = []
        self.turns_given = 0

    async def next_turn(
        self,
        transcript: Sequence[Message],
        scores: Mapping[str, float | bool | None] | None = None,
    ) -> TurnInput | None:
        """The next turn's input, or None when the conversation is over. ``scores`` are the
        last turn's (``Turn.score_map()``), read by a judge stopping rule."""
        raise NotImplementedError

    def _end(self, reason: str) -> None:
        self.ended_because = reason


class ScriptedTurns(TurnSource):
    """The row's ``inputs.turns`` in order (a string turn is ``{input_key: text}``)."""

    def __init__(self, example: Example, *, input_key: str = "question") -> None:
        super().__init__()
        self._turns = turn_inputs(example, input_key=input_key)

    async def next_turn(
        self,
        transcript: Sequence[Message],
        scores: Mapping[str, float | bool | None] | None = None,
    ) -> TurnInput | None:
        if self.turns_given >= len(self._turns):
            self._end(SCRIPT_DONE)
            return None
        self.turns_given += 1
        return self._turns[self.turns_given - 1]


class SimulatedTurns(TurnSource):
    """Turns written by ``user`` from the row and the transcript, until the user is done
    (it returns None, or a message holding the stop marker: the rest of that message is
    not sent), the judge says resolved, or ``max_turns`` turns were sent."""

    def __init__(
        self,
        user: User,
        example: Example,
        *,
        max_turns: int,
        stop: StopRule | None = None,
        input_key: str = "question",
    ) -> None:
        super().__init__()
        self.user = user
        self.example = example
        self.max_turns = max_turns
        self.stop = stop or StopRule()
        self.input_key = input_key

    async def next_turn(
        self,
        transcript: Sequence[Message],
        scores: Mapping[str, float | bool | None] | None = None,
    ) -> TurnInput | None:
        self.user_calls = []
        if self.ended_because is not None:
            return None
        resolved = self._resolved(scores)
        if resolved is not None:
            self._end(resolved)
            return None
        if self.turns_given >= self.max_turns:
            self._end(f"max_turns reached ({self.max_turns})")
            return None
        try:
            turn = self._turn_of(await self._ask([dict(m) for m in transcript]))
        except SimulatedUserError as exc:  # the conversation's error: it ends here
            self._end(str(exc))
            raise
        if turn is None:
            self._end(USER_DONE)
            return None
        self.turns_given += 1
        return turn

    async def _ask(self, transcript: list[Message]) -> str | dict[str, Any] | None:
        """The user's reply, its model calls recorded in a trace of their own."""
        from agenteval_cli.trace.recorder import capture, error_text

        inputs = copy.deepcopy(self.example.inputs)
        with capture(own_agent=USER_AGENT) as recorder:
            try:
                reply = await self.user.reply(transcript, inputs=inputs, turn=self.turns_given + 1)
            except Exception as exc:
                failure: Exception | None = exc
            else:
                failure = None
        self.user_calls = recorder.trace().model_calls
        for call in self.user_calls:  # the user's, whatever model or graph made them
            call.agent, call.path = USER_AGENT, [USER_AGENT]
        if isinstance(failure, SimulatedUserError):
            raise failure
        if failure is not None:
            message = f"the simulated user failed: {error_text(failure)}"
            raise SimulatedUserError(message) from failure
        return reply

    def _turn_of(self, reply: Any) -> TurnInput | None:
        """A message becomes ``{input_key: text}``; None when the user is done (no reply, or
        one holding the stop marker)."""
        if reply is None:
            return None
        if isinstance(reply, str):
            if self.stop.marker in reply:
                return None
            if not reply.strip():
                raise SimulatedUserError("the simulated user replied with an empty message")
            return {self.input_key: reply.strip()}
        if isinstance(reply, dict) and reply:
            if set(reply) == {RESUME}:
                return Resume(reply[RESUME])
            return dict(reply)
        raise SimulatedUserError(
            f"the simulated user returned {type(reply).__name__} {reply!r:.60}: return a "
            "message (str), the turn's input fields (dict), or None when it is done"
        )

    def _resolved(self, scores: Mapping[str, float | bool | None] | None) -> str | None:
        judge = self.stop.judge
        if judge is None or not scores or self.turns_given == 0:
            return None
        score = scores.get(judge)
        if score is None or float(score) < self.stop.threshold:
            return None
        return f"{JUDGE_DONE} ({judge} scored {float(score):g} >= {self.stop.threshold:g})"


def transcript_message(turn: TurnInput, *, input_key: str = "question") -> Message:
    """The user's side of a turn in the transcript: the message (``input_key``'s text), the
    turn's fields as JSON when it has no message, or a resume's value."""
    value = turn.value if isinstance(turn, Resume) else turn.get(input_key, turn)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return {"role": "user", "content": text}


@dataclass
class SimulatedUser:
    """A spec's ``simulated_user:``, loaded: who writes the turns, and when they stop."""

    user: User
    max_turns: int = 5
    stop: StopRule = field(default_factory=StopRule)
    pricing: Mapping[str, Any] = field(default_factory=dict)  # the spec's, for its calls
    # What its conversations depend on beside the row (its section of the spec), for the
    # response cache's key: another user writes other conversations.
    identity: str = ""

    def turns_for(self, example: Example, *, input_key: str = "question") -> SimulatedTurns:
        return SimulatedTurns(
            self.user, example, max_turns=self.max_turns, stop=self.stop, input_key=input_key
        )


def turn_source(
    example: Example, *, input_key: str = "question", simulated: SimulatedUser | None = None
) -> TurnSource | None:
    """The row's turns: its script when it has ``inputs.turns``, else the simulated user's
    when the spec has one; None for a single-turn row."""
    if is_conversation(example):
        return ScriptedTurns(example, input_key=input_key)
    if simulated is not None:
        return simulated.turns_for(example, input_key=input_key)
    return None
