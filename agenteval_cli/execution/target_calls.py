"""One target call as the run makes it, whether it is a row's only call or one turn of a
conversation: its trace recorder, its deadline, what it raised as the example's error, and
its trace once it ended."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.interrupts import INTERRUPT_KEY, raised_interrupts
from agenteval_cli.core.records import ModelCall, Trace
from agenteval_cli.core.safe_text import exception_text
from agenteval_cli.execution.guards.deadline import Call, within
from agenteval_cli.execution.guards.stalls import LoopStalls, blocked_text
from agenteval_cli.targets import Target
from agenteval_cli.trace.pending import (
    FUNCTION,
    PendingRecorder,
    capture_pending,
    langchain_loaded,
)

# The thread requests of the target call running in this context that found every thread
# busy and had to wait: set per call, filled by the worker pool.
WAITING: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "agenteval_waiting", default=None
)


class ThreadsExhausted(Exception):
    """A sync call timed out waiting for a worker thread, all of them held by earlier calls
    stuck past their time-out: not the time-out of this call, which never started. Raised
    from the ``TimeoutError``, so a policy that retries time-outs retries it."""


@dataclass(frozen=True)
class CallGuard:
    """What every target call of a run is held to: its own time-out (the loop's stalls
    given back), a raised ``GraphInterrupt`` read as the interrupted state it stands for,
    and outputs the store can keep."""

    timeout_s: float
    stalls: LoopStalls | None
    threads: int  # the worker threads sync targets share, named when none came free
    owns_signals: bool  # the run handles Ctrl-C: a KeyboardInterrupt is the target's own

    async def outputs(self, call: Awaitable[Any], who: Call) -> Any:
        """``await call`` within the time-out: what the target returned, or raised."""
        waited: list[Any] = []  # this call's thread requests that found no free thread
        WAITING.set(waited)
        try:
            outputs = await within(call, self.timeout_s, self.stalls, who)
        except TimeoutError:
            if any(_never_ran(request) for request in waited):
                raise ThreadsExhausted(
                    f"no worker thread came free within {self.timeout_s:g} s: all "
                    f"{self.threads} are held by sync calls stuck past their time-out"
                ) from None
            raise
        except Exception as exc:  # a GraphInterrupt no graph caught: a result
            pending = raised_interrupts(exc)
            if pending is None:
                raise
            outputs = {INTERRUPT_KEY: pending}
        return outputs

    def failure(self, exc: BaseException) -> str | None:
        """The example's error for what a call raised, or None when it is not the example's
        and must go on up: Ctrl-C in a run that does not handle it (it stops the run), the
        run cancelling the call (a stop, the grace period ending).

        SystemExit, GeneratorExit, a BaseException of the target's own or a CancelledError
        it raised are the example's error like any exception."""
        if isinstance(exc, TimeoutError):
            error = f"TimeoutError: no answer within {self.timeout_s:g} s"
            blocked_s: float = getattr(exc, "blocked_s", 0.0)  # set where the call stalled
            if blocked_s:
                return f"{error}: {blocked_text(blocked_s)}"
            waited: str | None = getattr(exc, "waiting_on", None)  # set where it waited
            return f"{error}: {waited}" if waited else error
        if isinstance(exc, KeyboardInterrupt) and not self.owns_signals:
            return None
        if isinstance(exc, asyncio.CancelledError) and cancelled_from_outside():
            return None
        return exception_text(exc)


def checked_outputs(outputs: Any) -> dict[str, Any]:
    """Outputs must survive the store's JSON; a value that cannot is the target's error.
    Checked once the call's trace is closed, so the trace does not end in this error."""
    if not isinstance(outputs, dict):
        raise TypeError(f"target returned {type(outputs).__name__}; return a dict")
    return outputs


def _never_ran(request: Any) -> bool:
    """Whether a thread request (a ``concurrent.futures.Future``) was dropped unstarted."""
    return request.cancelled() or not (request.running() or request.done())


def cancelled_from_outside() -> bool:
    """Whether the running task was asked to cancel (``Task.cancel``), as opposed to a
    ``CancelledError`` raised by the code it awaits. ``asyncio.timeout`` uncancels the task
    when it turns its own cancellation into ``TimeoutError``, so a time-out is not counted."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def recorder_for(
    target: Target,
    key: Sequence[Any] = (),
    injector: Any = None,
    options: dict[str, Any] | None = None,
) -> contextlib.AbstractContextManager[Any]:
    """A callback recorder for a call of ``target``, which reads the trace as the target
    declares (``options``, :func:`recorder_options`, when the caller keeps them). A target
    with ``faults`` also gets their injector: ``injector`` (a conversation's, which counts
    the calls of all its turns), or a fresh one seeded by ``key`` (the example's id and the
    repetition)."""
    if options is None:
        options = recorder_options(target)
    if target.faults:  # injected through LangChain's callbacks: it is loaded for them
        return _faulted(injector or injector_for(target, key), options)
    if target.kind == FUNCTION and not langchain_loaded():  # imported only if it does so
        return capture_pending(options)
    from agenteval_cli.trace.recorder import capture

    return capture(**options)


def recorder_options(target: Target) -> dict[str, Any]:
    """How a recorder reads ``target``'s trace: its coordinators, its name (its agent's,
    where the graph names none), the state key of its active agent and its skill tools
    (none: skills unknown). Read, never changed: one dict serves every call."""
    return {
        "coordinators": target.coordinators,
        "own_agent": target.name,
        "active_agent": target.active_agent,
        "skill_tools": target.skill_tools or None,
    }


def injector_for(target: Target, key: Sequence[Any]) -> Any:
    """The injector of ``target``'s faults for one request (``key``: the example's id and
    the repetition), or None for a target without faults."""
    if not target.faults:
        return None
    from agenteval_cli.trace.faults import FaultInjector

    return FaultInjector(target.faults, key, own_agent=target.name)


@contextlib.contextmanager
def _faulted(injector: Any, options: dict[str, Any]) -> Iterator[Any]:
    """A recorder followed by the injector of the target's faults, for graphs (in the
    call's callbacks) and functions (through the configure hook) alike."""
    from agenteval_cli.trace.faults import injecting
    from agenteval_cli.trace.recorder import capture

    with capture(**options) as recorder:
        injector.recorder = recorder  # the call's failed calls are marked in its trace
        recorder.followers.append(injector)
        with injecting(injector):
            yield recorder


def callbacks_of(recorder: Any) -> list[Any]:
    """The callbacks a target call is handed: its recorder (and the handlers that follow
    it), once LangChain is there."""
    if isinstance(recorder, PendingRecorder):
        return recorder.callbacks
    return [recorder, *getattr(recorder, "followers", ())]


def finished_trace(
    recorder: Any, error: str | None, latency_s: float, retried: Sequence[ModelCall] = ()
) -> Trace:
    """The trace of a call that ended: what its recorder saw (nothing when it never
    started), its latency and error, why it has no trace when it has none (an errored call
    is measured too), and the model calls of failed attempts before its own."""
    trace = recorder.trace() if recorder is not None else Trace()
    trace.latency_s = latency_s
    trace.error = error
    if not trace.model_calls:
        trace.untraced = untraced(recorder, trace)
    if retried:
        trace.model_calls = [*retried, *trace.model_calls]
    return trace


def retried_calls(recorder: Any) -> list[ModelCall]:
    """The model calls a failed attempt made, marked as retried (none for an untraced one)."""
    calls = recorder.trace().model_calls
    for call in calls:
        call.retried = True
    return calls


UNTRACED_NEVER_STARTED = "no LangChain run was seen: the call failed before it started"
UNTRACED_NO_RUN = (
    "no LangChain run was seen during the call: a graph run on a thread agenteval cannot "
    "follow, or no LangChain model at all"
)


def untraced(recorder: Any, trace: Trace) -> str | None:
    """Why a call that returned has no trace to speak of, or ``None`` when it has one.

    A call is untraced when no LangChain run reached its recorder: agents, handoffs and
    tokens are then unknown, not none. A graph without models still has runs, so is traced.
    """
    if recorder is None:  # it failed before its first attempt began
        return UNTRACED_NEVER_STARTED
    if trace.tool_calls or trace.messages or trace.agent_path or _saw_runs(recorder):
        return None
    return UNTRACED_NO_RUN


def _saw_runs(recorder: Any) -> bool:
    """Whether any LangChain run (a chain, a graph node, a tool) reached the recorder."""
    return bool(getattr(recorder, "saw_runs", False))
