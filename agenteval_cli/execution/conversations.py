"""Driving a conversation: turns sent to one target, one call per turn on one thread,
until the last turn (of the row's script, or of a simulated user), a turn that errs, or
an interrupt no resume answers.

Each turn is a target call as a single-turn row's is (its own trace recorder, its own
time-out, its failure read the same way, :mod:`agenteval_cli.execution.target_calls`). A
transient failure in any turn redoes the conversation whole, on a new thread; the model
calls of the failed attempts are counted, marked retried, in the turn they were made at.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.core.records import Example, ModelCall, Result, Trace, Turn
from agenteval_cli.core.retry import Limiter, RetryPolicy, call_with_retries
from agenteval_cli.data.conversations import RESUME, Resume, TurnInput, shape_problem
from agenteval_cli.execution.guards.deadline import Call
from agenteval_cli.execution.target_calls import (
    CallGuard,
    callbacks_of,
    checked_outputs,
    finished_trace,
    injector_for,
    recorder_for,
    retried_calls,
)
from agenteval_cli.targets import Target
from agenteval_cli.targets.configs import row_fields
from agenteval_cli.targets.session import Session
from agenteval_cli.targets.users import SimulatedUserError, TurnSource
from agenteval_cli.trace.turns import merge_turn_traces

# Scores a turn as soon as it is answered, for a stopping rule that reads them (a judge
# saying the conversation is resolved); the runner scores every turn after the conversation.
TurnScorer = Callable[[Turn], Awaitable[None]]


@dataclass
class _Attempt:
    """One run of the conversation: the turns it finished, the one in flight, and how it
    ended when it ended without raising (an interrupt, a turn that could not be sent)."""

    session: Session = field(default_factory=Session)
    turns: list[Turn] = field(default_factory=list)
    sent: dict[str, Any] | None = None  # the turn in flight, as recorded
    recorder: Any = None  # the turn in flight's
    faults: Any = None  # the injector of the target's faults, for every turn of the attempt
    started: float | None = None
    error: str | None = None  # "turn 3: ...": the conversation's error
    interrupt: str | None = None

    def spent(self) -> list[list[ModelCall]]:
        """The model calls each turn of this failed attempt made, marked retried."""
        per_turn = []
        for turn in self.turns:
            for call in turn.trace.model_calls:
                call.retried = True
            per_turn.append(turn.trace.model_calls)
        if self.recorder is not None:  # the turn that failed
            per_turn.append(retried_calls(self.recorder))
        return per_turn

    def failed(self, error: str) -> None:
        """The turn in flight raised ``error``: it ends the conversation."""
        if self.sent is None:  # nothing was being sent
            self.error = error
            return
        latency = 0.0 if self.started is None else time.perf_counter() - self.started
        trace = finished_trace(self.recorder, error, latency)
        self.turns.append(Turn(self.sent, None, trace, error=error, latency_s=latency))
        self.error = f"turn {len(self.turns)}: {error}"


async def converse(
    target: Target,
    example: Example,
    repetition: int,
    guard: CallGuard,
    retry: RetryPolicy,
    limiter: Limiter | None,
    source: Callable[[], TurnSource],
    score_turn: TurnScorer | None = None,
) -> Result:
    """The conversation of ``example`` (repetition ``repetition``) with ``target``, its
    turns asked of a fresh ``source`` on each attempt (the row's script, or a simulated
    user): each turn's result in ``turns``, the last turn's outputs, every turn's trace
    merged."""
    problem = shape_problem(example.inputs, example.outputs)
    if problem is not None:  # no turn can be sent
        return Result(example.id, repetition, None, Trace(error=problem), error=problem)
    who = Call(target.name, example.id, target.runs_here)
    current: _Attempt | None = None
    spent: list[list[list[ModelCall]]] = []  # per failed attempt, per turn

    async def attempt() -> _Attempt:
        nonlocal current
        if current is not None:  # an earlier attempt failed: its calls were still made
            spent.append(current.spent())
        current = _Attempt(Session(row=row_fields(example, input_key=target.input_key)))
        current.faults = injector_for(target, (example.id, repetition))
        await _run_turns(current, target, source(), guard, who, limiter, score_turn)
        return current

    attempts = 1
    try:
        _, attempts = await call_with_retries(attempt, retry, max_wait_s=guard.timeout_s)
    except BaseException as exc:
        error = guard.failure(exc)
        if error is None or current is None:  # not the example's: it stops the run
            raise
        attempts = getattr(exc, "attempts", 1)
        current.failed(error)
    assert current is not None
    _count_retried(current.turns, spent)
    trace = merge_turn_traces([turn.trace for turn in current.turns])
    trace.error = current.error
    last = current.turns[-1] if current.turns else None
    return Result(
        example_id=example.id,
        repetition=repetition,
        outputs=None if last is None else last.outputs,
        trace=trace,
        error=current.error,
        latency_s=sum(turn.latency_s for turn in current.turns),
        attempts=attempts,
        interrupt=None if current.error is not None else current.interrupt,
        turns=current.turns,
    )


async def _run_turns(
    attempt: _Attempt,
    target: Target,
    source: TurnSource,
    guard: CallGuard,
    who: Call,
    limiter: Limiter | None,
    score_turn: TurnScorer | None,
) -> None:
    """Send the turns ``source`` gives, in order; a turn that raises leaves ``attempt``
    with it in flight. A turn that stops at an interrupt ends the conversation unless the
    next turn is a resume. The target's faults count the calls of all the turns."""
    session = attempt.session
    number = 0
    while True:
        last = attempt.turns[-1] if attempt.turns else None
        try:
            turn = await source.next_turn(
                session.history, None if last is None else last.score_map()
            )
        except SimulatedUserError as exc:  # the user could not write a turn: it ends here
            attempt.error = f"turn {number + 1}: {exc}"
            return
        if last is not None and turn is None:  # the reply that ended it answered the last
            last.user_calls.extend(source.user_calls)
        if last is not None and last.interrupt is not None and not isinstance(turn, Resume):
            attempt.interrupt = last.interrupt  # nothing answers it: it ends here
            last.ended = (
                f"turn {number} stopped at interrupt() and no resume followed"
                if turn is None
                else f"turn {number} stopped at interrupt() and turn {number + 1} is a "
                "message, not a resume: it was not sent"
            )
            return
        if turn is None:
            if last is not None:
                last.ended = source.ended_because
            return
        number += 1
        sent = {RESUME: turn.value} if isinstance(turn, Resume) else dict(turn)
        problem = _cannot_send(target, turn, number, session)
        if problem is not None:  # nothing is sent: the turn is the conversation's error
            unsent = Turn(sent, None, Trace(error=problem), error=problem, sent=False)
            attempt.turns.append(unsent)
            attempt.error = problem  # it names the turn
            return
        if limiter is not None:
            await limiter.acquire()
        attempt.sent, attempt.recorder, attempt.started = sent, None, None
        with recorder_for(target, injector=attempt.faults) as attempt.recorder:
            attempt.started = time.perf_counter()
            answered = await guard.outputs(
                target.turn(turn, session, callbacks_of(attempt.recorder)), who
            )
        latency = time.perf_counter() - attempt.started
        outputs = checked_outputs(answered)
        session.took(turn, outputs, target.input_key)
        trace = finished_trace(attempt.recorder, None, latency)
        done = Turn(sent, outputs, trace, interrupt=returned_interrupt(outputs), latency_s=latency)
        done.user_calls = list(source.user_calls)
        attempt.turns.append(done)
        attempt.sent = attempt.recorder = None
        if score_turn is not None:
            await score_turn(done)


def _cannot_send(target: Target, turn: TurnInput, number: int, session: Session) -> str | None:
    """Why a resume turn cannot be sent, or None: the turn before it did not stop at an
    interrupt, or the graph has no checkpointer to resume from."""
    if not isinstance(turn, Resume):
        return None
    if not session.interrupted:
        return f"turn {number} is a resume, but turn {number - 1} did not stop at interrupt()"
    if target.kind == "graph" and not target.keeps_state:
        return (
            f"turn {number} is a resume, but the graph has no checkpointer, so it cannot "
            "resume from interrupt(): compile it with one (checkpointer=InMemorySaver())"
        )
    return None


def _count_retried(turns: list[Turn], spent: list[list[list[ModelCall]]]) -> None:
    """The model calls of failed attempts, before each turn's own calls: those made at a
    turn in that turn, those made past the last turn of this attempt in its last turn."""
    if not turns:
        return
    earlier: list[list[ModelCall]] = [[] for _ in turns]
    for per_turn in spent:  # attempt by attempt, in the order they were made
        for index, calls in enumerate(per_turn):
            earlier[min(index, len(turns) - 1)].extend(calls)
    for turn, calls in zip(turns, earlier, strict=True):
        if calls:
            turn.trace.model_calls = [*calls, *turn.trace.model_calls]
