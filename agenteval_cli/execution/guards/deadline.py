"""A call's time-out counted in its own time, and who holds the event loop.

A call of an async target is awaited step by step (the stretch between two of its awaits),
each step timed: one of ``BLOCKING_S`` or more held the loop and is blamed on the call
(:mod:`agenteval_cli.execution.guards.stalls`). Its deadline gives back the time the loop was
held by others before it fires, and a call that held the loop itself past its time-out is
timed out when it comes back, since nothing could interrupt it. The same bookkeeping tells
a stopped run's watchdog which call holds the loop, or which calls would not end.

Why not a plain ``asyncio.timeout(timeout)`` beside the stall warnings: its timer runs on
the loop, so a target that blocks the loop (``time.sleep`` in an async target) turns the
verdicts upside down. Each of these tests in ``tests/test_stalls.py`` fails with it:

- ``test_the_target_that_blocks_is_timed_out_and_its_neighbour_is_not``: the neighbour that
  awaited 0.2 s of a 0.5 s time-out fails with ``TimeoutError`` for the 1.5 s it was
  starved, while the blocker, which never awaits, comes back a success ("late");
- ``test_blocking_after_a_wait_is_timed_out_by_the_deadline_too``: a block of 1.0 s
  between two awaits times out its 0.4 s neighbour alongside the blocker, whose error no
  longer says that it blocked the loop;
- ``test_a_slow_neighbour_of_a_blocker_still_times_out_on_its_own_time``: the slow
  neighbour is timed out at 0.6 s of wall time, the 0.3 s it was starved not given back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Generator
from time import perf_counter
from types import FrameType
from typing import Any, NamedTuple

from agenteval_cli.execution.guards.stalls import BLOCKING_S, LoopStalls, blocked_text
from agenteval_cli.targets.waits import watched

# The files of the run's own machinery: where the loop was held is named outside them.
OWN_FILES = ("runner.py", "target_calls.py", "deadline.py", "watchdog.py")


class Call(NamedTuple):
    """Whose call it is: the target's name and the example's id; whether the target's code
    runs here (a served graph's runs on its server: what holds the loop during its call is
    agenteval's or the client's, never blamed on it, and given back as others' time)."""

    target: str
    example: str
    runs_here: bool = True


async def within(
    call: Awaitable[Any],
    timeout: float | None,
    stalls: LoopStalls | None = None,
    who: Call | None = None,
) -> Any:
    """``await call`` under a time-out of ``timeout`` seconds of its own time: the time the
    loop was held by others (``stalls``) does not count, and a call that held the loop
    itself past ``timeout`` (blocking code in an async target) is timed out when it comes
    back, since nothing could interrupt it (:mod:`agenteval_cli.execution.guards.stalls`). Each
    step of the call is timed; ``who`` names whom a blocking step is blamed on. A time-out
    that found the call waiting on something outside (a served graph's server) names it
    (``waiting_on``, :mod:`agenteval_cli.targets.waits`).

    The call's first step runs before its deadline is armed: a call that never waits (an
    instant one) needs no timer, and one that does is given its deadline as it first waits,
    counted from its start."""
    steps = _TimedSteps(call, stalls, who)
    if timeout is None:
        return await steps
    # only a served graph's client says what it waits on (targets.waits)
    with watched() if who is None or not who.runs_here else _UNWATCHED as waiting:
        loop = asyncio.get_running_loop()
        began, stalled = loop.time(), 0.0 if stalls is None else stalls.stalled()
        try:
            if steps.start():
                if steps.blocked:  # else it cannot have held the loop past its time-out
                    _Clock(loop, began, stalled, stalls, steps).check(timeout)
                return steps.value
            return await _timed(steps, timeout, _Clock(loop, began, stalled, stalls, steps))
        except TimeoutError as exc:
            said = None if waiting is None else waiting.text()
            if said is not None:
                exc.waiting_on = said  # type: ignore[attr-defined]
            raise


_UNWATCHED = contextlib.nullcontext()  # the waits of a call whose code runs here: none


class _Clock:
    """A call's own time since it started: the loop's time less what others held it for."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        start: float,
        stalled: float,
        stalls: LoopStalls | None,
        steps: _TimedSteps,
    ) -> None:
        """``start``: the loop's time as the call started; ``stalled``: ``stalls``' total
        then."""
        self.loop, self.start, self.stalled = loop, start, stalled
        self.stalls, self.steps = stalls, steps

    def starved(self) -> float:
        """Seconds the loop was held by others since the call started."""
        if self.stalls is None:
            return 0.0
        return max(0.0, self.stalls.stalled() - self.stalled - self.steps.blocked)

    def check(self, timeout: float) -> None:
        """A call that held the loop past its time-out is timed out like any other."""
        blocked = self.steps.blocked
        if blocked and self.loop.time() - self.start - self.starved() > timeout:
            error = TimeoutError(blocked_text(blocked))
            error.blocked_s = blocked  # type: ignore[attr-defined]
            raise error


async def _timed(steps: _TimedSteps, timeout: float, clock: _Clock) -> Any:
    """``within`` once the call has waited: the rest of its steps, under its deadline."""
    try:
        async with asyncio.timeout(None) as cm:
            deadline = _Deadline(cm, clock.start + timeout, clock.starved)
            try:
                value = await steps
            finally:
                deadline.cancel()
    except TimeoutError as exc:
        if steps.blocked:
            exc.blocked_s = steps.blocked  # type: ignore[attr-defined]
        raise
    clock.check(timeout)
    return value


class _TimedSteps:
    """Awaits ``call`` as ``await`` would, timing each step (the stretch between two of its
    awaits): a step of ``BLOCKING_S`` or more held the event loop, and is blamed on the
    call's target. :meth:`start` may run the first step before it is awaited."""

    def __init__(self, call: Awaitable[Any], stalls: LoopStalls | None, who: Call | None) -> None:
        self.call, self.stalls, self.who = call, stalls, who
        self.blocked = 0.0  # seconds this call held the loop, in steps of BLOCKING_S or more
        self._steps = call.__await__()
        self._first: Any = _NOT_RUN  # what the first step waits on, once start() ran it
        self.value: Any = None  # what the call returned, once it did in start()

    def _held(self, seconds: float) -> None:
        if self.who is not None and not self.who.runs_here:
            return  # not the target's code: the loop was held by others, given back
        self.blocked += seconds
        if self.stalls is not None and self.who is not None:
            self.stalls.blame(self.who.target, self.who.example, seconds)

    def _step(self, sent: Any, thrown: BaseException | None) -> tuple[bool, Any]:
        """One step: ``(True, what the call returned)`` or ``(False, what it waits on)``."""
        began = perf_counter()
        try:
            if thrown is None:
                return False, self._steps.send(sent)
            return False, self._steps.throw(thrown)
        except StopIteration as done:
            return True, done.value
        finally:
            took = perf_counter() - began
            if took >= BLOCKING_S:
                self._held(took)

    def start(self) -> bool:
        """Run the first step now: True when the call returned there (``value``)."""
        done, got = self._step(None, None)
        if done:
            self.value = got
        else:
            self._first = got
        return done

    def __await__(self) -> Generator[Any, Any, Any]:
        waiting_on = self._first
        if waiting_on is _NOT_RUN:
            done, waiting_on = self._step(None, None)
            if done:
                return waiting_on
        while True:
            try:
                sent, thrown = (yield waiting_on), None
            except GeneratorExit:
                self._steps.close()
                raise
            except BaseException as exc:  # thrown into the task: passed on to the call
                sent, thrown = None, exc
            done, waiting_on = self._step(sent, thrown)
            if done:
                return waiting_on


_NOT_RUN = object()  # the first step of a _TimedSteps not run yet


class _Deadline:
    """The call's deadline in ``cm`` (an ``asyncio.timeout``): when it falls due, the time
    the loop was held by others since the start (``starved``) is given back first."""

    def __init__(self, cm: asyncio.Timeout, due: float, starved: Callable[[], float]) -> None:
        self.cm, self.due, self.starved = cm, due, starved
        self.handle: asyncio.TimerHandle | None = asyncio.get_running_loop().call_at(
            due, self._check
        )

    def _check(self) -> None:
        loop = asyncio.get_running_loop()
        end = self.due + self.starved()
        if end - loop.time() > 0.001:  # starved meanwhile: the deadline moves by that
            self.handle = loop.call_at(end, self._check)
        else:
            self.handle = None
            self.cm.reschedule(loop.time())  # expires now: cancels the call, TimeoutError

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


# the frames a call's code runs under: where the loop's holder is read from (its ``who``)
_CALL_CODES = (within.__code__, _TimedSteps._step.__code__, _TimedSteps.__await__.__code__)


def call_on_stack(frame: FrameType | None) -> Call | None:
    """The call whose code ``frame`` (or a frame that called it) runs."""
    while frame is not None:
        if frame.f_code in _CALL_CODES:
            holder = frame.f_locals.get("who") or getattr(frame.f_locals.get("self"), "who", None)
            if isinstance(holder, Call):
                return holder
        frame = frame.f_back
    return None


def calls_in_flight() -> list[Call]:
    """The calls still running on the loop, found in the tasks' chains of awaits."""
    calls: list[Call] = []
    for task in asyncio.all_tasks():
        awaited: Any = task.get_coro()
        while awaited is not None:
            frame = getattr(awaited, "cr_frame", None)
            if frame is not None and frame.f_code is within.__code__:
                who = frame.f_locals.get("who")
                if isinstance(who, Call):
                    calls.append(who)
                break
            awaited = getattr(awaited, "cr_await", None)
    return calls
