"""The asyncio engine: every target on every example, at most ``concurrency`` calls in flight.

Each finished call is traced, scored and handed to ``on_result`` (which persists it) before
the next one starts, so results reach the store as they finish, not at the end. Transient
failures are retried by the spec's policy (:mod:`agenteval_cli.retry`), calls are spaced by
its rate limit, and a cached answer (:mod:`agenteval_cli.cache`) replaces the call.

``stop()`` (Ctrl-C or SIGTERM under ``run(handle_signals=True)``) stops dispatching; calls in
flight get ``grace_s`` seconds to finish and be saved, the rest are cancelled and left for
``--resume``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from agenteval_cli.evaluators.scoring import BoundEvaluator, score
from agenteval_cli.records import Example, Result, Trace
from agenteval_cli.retry import RateLimiter, RetryPolicy, call_with_retries
from agenteval_cli.safe_text import exception_text
from agenteval_cli.targets import Target

if TYPE_CHECKING:
    from agenteval_cli.cache import ResponseCache


@dataclass
class RunSettings:
    concurrency: int = 4
    timeout_s: float = 60.0
    repetitions: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    requests_per_minute: float | None = None
    grace_s: float = 5.0  # after stop(), how long calls in flight may finish


@dataclass
class WorkItem:
    target: Target
    example: Example
    repetition: int
    replace: bool = False  # a retry of an errored result: the stored row is swapped out
    cache_key: str | None = None


ResultSink = Callable[[WorkItem, Result], None]
YIELD_EVERY_S = 0.02  # longest a worker runs without letting the event loop in
# Threads a sync target may leave behind, stuck past their time-out, before its further
# calls wait for a thread to free up instead of starting another one.
ABANDONED_THREADS = 32
# The thread requests of the target call running in this context that found every thread
# busy and had to wait: set per attempt, filled by the worker pool.
_WAITING: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "agenteval_waiting", default=None
)


class ThreadsExhausted(Exception):
    """A sync call timed out waiting for a worker thread, all of them held by earlier calls
    stuck past their time-out: not the time-out of this call, which never started. Raised
    from the ``TimeoutError``, so a policy that retries time-outs retries it."""


@dataclass
class Runner:
    targets: list[Target]
    evaluators: list[BoundEvaluator]
    settings: RunSettings = field(default_factory=RunSettings)
    cache: ResponseCache | None = None
    identities: dict[str, str] = field(default_factory=dict)  # target name -> cache identity
    cache_paths: dict[str, str] = field(default_factory=dict)  # target name -> absolute import path
    stopped: bool = field(default=False, init=False)
    _limiter: RateLimiter | None = field(default=None, init=False, repr=False)
    _force: asyncio.Event | None = field(default=None, init=False, repr=False)

    def work(self, examples: Iterable[Example]) -> Iterator[WorkItem]:
        """Repetition-major, then example, then target: targets advance side by side.

        ``examples`` is iterated once per repetition; a one-shot iterator is kept in a list
        only when there are several repetitions."""
        repetitions = self.settings.repetitions
        if repetitions > 1 and iter(examples) is examples:  # a one-shot iterator
            examples = list(examples)
        cached = self.cache is not None
        for repetition in range(repetitions):
            for example in examples:
                for target in self.targets:
                    yield WorkItem(
                        target,
                        example,
                        repetition,
                        cache_key=self._key(target, example, repetition) if cached else None,
                    )

    def _key(self, target: Target, example: Example, repetition: int) -> str | None:
        if self.cache is None:
            return None
        from agenteval_cli.cache import cache_key, target_identity

        identity = self.identities.get(target.name) or target_identity(target.import_path)
        return cache_key(identity, example.inputs, repetition)

    def stop(self) -> None:
        """Dispatch nothing new; a second call cancels the calls in flight at once."""
        if self.stopped and self._force is not None:
            self._force.set()
        self.stopped = True

    async def run(
        self, items: Iterable[WorkItem], on_result: ResultSink, *, handle_signals: bool = False
    ) -> bool:
        """Run ``items`` with ``concurrency`` workers; ``on_result`` sees each as it ends.

        Returns True when every item ran, False when stopped early.
        """
        from agenteval_cli.daemon_pool import DaemonThreadPool
        from agenteval_cli.threads import follow_threads

        loop = asyncio.get_running_loop()
        pool = DaemonThreadPool(
            max_threads=self.settings.concurrency + ABANDONED_THREADS, waiting=_WAITING
        )
        loop.set_default_executor(pool)
        rpm = self.settings.requests_per_minute
        self._limiter = RateLimiter(rpm) if rpm else None
        self._force = asyncio.Event()
        queue = iter(items)

        clock = time.monotonic
        turn = [clock() + YIELD_EVERY_S]
        cached = self.cache is not None

        async def worker() -> None:
            while not self.stopped:
                item = next(queue, None)  # a shared iterator: each item goes to one worker
                if item is None:
                    return
                # without a cache, run_one is _call: one coroutine fewer per item
                on_result(item, await (self.run_one(item) if cached else self._call(item)))
                if clock() >= turn[0]:
                    # Calls that never wait (an instant target) would keep this worker busy
                    # for the whole run: let signals, the store's commits and others in.
                    await asyncio.sleep(0)
                    turn[0] = clock() + YIELD_EVERY_S

        # A target that runs its graph on a thread or an executor of its own is traced
        # there too: those threads get the context of the call that starts them.
        # No more workers than work items: a large concurrency on a small dataset costs
        # nothing. Only the first ``concurrency`` items are taken ahead to count them.
        head = list(itertools.islice(queue, max(1, self.settings.concurrency)))
        queue = itertools.chain(head, queue)
        with follow_threads():
            workers = [asyncio.ensure_future(worker()) for _ in head]
            everything = asyncio.gather(*workers)
            with _signals(loop, self.stop, enabled=handle_signals):
                await self._until_done_or_stopped(everything)
        return not self.stopped

    async def _until_done_or_stopped(self, everything: asyncio.Future[Any]) -> None:
        assert self._force is not None
        while not everything.done() and not self.stopped:
            await asyncio.wait({everything}, timeout=0.1)
        if not everything.done():  # stopped: let calls in flight finish, up to grace_s
            force = asyncio.ensure_future(self._force.wait())
            await asyncio.wait(
                {everything, force},
                timeout=self.settings.grace_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
            force.cancel()
            if not everything.done():
                everything.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await everything
                return
        everything.result()  # re-raise a failure of on_result (e.g. the store)

    async def run_one(self, item: WorkItem) -> Result:
        """Call the target (or take its cached answer), then score it. Never raises for the
        target's or an evaluator's failure: those are recorded in the result."""
        if self.cache is not None and item.cache_key is not None:
            hit = self.cache.get(item.cache_key)
            if hit is not None:
                result = Result(
                    example_id=item.example.id,
                    repetition=item.repetition,
                    outputs=hit.outputs,
                    trace=hit.trace,
                    latency_s=hit.latency_s,
                    attempts=0,
                    cached=True,
                )
                result.scores = await score(self.evaluators, item.example, hit.outputs, hit.trace)
                return result
        return await self._call(item)

    async def _call(self, item: WorkItem) -> Result:
        timeout = self.settings.timeout_s
        recorder: Any = None  # the last attempt's, and when it started
        started: float | None = None

        target = item.target
        # Target.__call__ only awaits target.call: call that, one coroutine fewer per attempt
        call = target.call if type(target).__call__ is Target.__call__ else target
        waited: list[Any] = []  # this attempt's thread requests that found no free thread

        async def attempt() -> dict[str, Any]:
            nonlocal recorder, started
            while True:
                untraced = "langchain_core" not in sys.modules
                waited.clear()
                _WAITING.set(waited)
                # a fresh trace per attempt: failed ones don't count
                with _capture(target.coordinators) as recorder:
                    started = time.perf_counter()
                    try:
                        outputs = await _within(call(item.example.inputs, [recorder]), timeout)
                    except TimeoutError:
                        if any(_never_ran(request) for request in waited):
                            threads = self.settings.concurrency + ABANDONED_THREADS
                            raise ThreadsExhausted(
                                f"no worker thread came free within {timeout:g} s: all "
                                f"{threads} are held by sync calls stuck past their time-out"
                            ) from None
                        raise
                # LangChain was first imported while this call ran untraced (a target that
                # imports its graph lazily): its runs went unseen, so call again, traced.
                if not (untraced and "langchain_core" in sys.modules):
                    break
            if type(outputs) is not dict:
                _check_outputs(outputs)
            return outputs

        outputs: dict[str, Any] | None = None
        error: str | None = None
        attempts = 1
        try:
            outputs, attempts = await call_with_retries(
                attempt,
                self.settings.retry,
                before_attempt=None if self._limiter is None else self._limiter.acquire,
                max_wait_s=timeout,
            )
        except TimeoutError as exc:
            attempts = getattr(exc, "attempts", 1)
            error = f"TimeoutError: no answer within {timeout:g} s"
        except Exception as exc:
            attempts = getattr(exc, "attempts", 1)
            error = exception_text(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            # SystemExit, GeneratorExit, a BaseException of its own or a CancelledError the
            # target raised is this example's error. Only the run cancelling this call (a
            # stop, the grace period ending) is not: then the task is being cancelled.
            if isinstance(exc, asyncio.CancelledError) and _cancelled_from_outside():
                raise
            attempts = getattr(exc, "attempts", 1)
            error = exception_text(exc)
        latency = 0.0 if started is None else time.perf_counter() - started
        trace = (recorder or _PLAIN).trace()
        trace.latency_s = latency
        trace.error = error
        if error is None and not trace.model_calls:
            trace.untraced = _untraced(recorder, trace)
        result = Result(
            example_id=item.example.id,
            repetition=item.repetition,
            outputs=outputs,
            trace=trace,
            error=error,
            latency_s=latency,
            attempts=attempts,
        )
        if error is None:
            result.scores = await score(self.evaluators, item.example, outputs or {}, trace)
        return result


def _never_ran(request: Any) -> bool:
    """Whether a thread request (a ``concurrent.futures.Future``) was dropped unstarted."""
    return request.cancelled() or not (request.running() or request.done())


def _cancelled_from_outside() -> bool:
    """Whether the running task was asked to cancel (``Task.cancel``), as opposed to a
    ``CancelledError`` raised by the code it awaits. ``asyncio.timeout`` uncancels the task
    when it turns its own cancellation into ``TimeoutError``, so a time-out is not counted."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _within(call: Awaitable[Any], timeout: float | None) -> Any:
    """``await call`` under ``asyncio.timeout(timeout)``. A coroutine is started first, and
    the timeout (its deadline counted from the start) is set up only if it has to wait: one
    that finishes without waiting cannot be interrupted by a timeout anyway."""
    if type(call) is not CoroutineType:
        async with asyncio.timeout(timeout):
            return await call
    deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
    try:
        waiting_on = call.send(None)
    except StopIteration as done:
        return done.value
    async with asyncio.timeout_at(deadline):
        return await _Started(call, waiting_on)


class _Started:
    """Awaiting a coroutine that has already run up to its first wait (``waiting_on``, what
    it yielded to the task): the rest is driven as ``await`` would drive it."""

    __slots__ = ("coro", "waiting_on")

    def __init__(self, coro: Coroutine[Any, Any, Any], waiting_on: Any) -> None:
        self.coro, self.waiting_on = coro, waiting_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, step = self.coro, self.waiting_on
        self.waiting_on = None
        while True:
            try:
                sent = yield step
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    step = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    step = coro.send(sent)
                except StopIteration as done:
                    return done.value


class PlainRecorder:
    """The trace of a call made while LangChain is not loaded: no LangChain run can happen
    in it, so there are no events to record, only the call's time and error."""

    def start(self) -> None:
        pass

    def finish(self, error: BaseException | str | None = None) -> None:
        pass

    def trace(self) -> Trace:
        return Trace()

    def __enter__(self) -> PlainRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


_PLAIN = PlainRecorder()  # it keeps nothing, so one serves every call

UNTRACED_NO_LANGCHAIN = (
    "no LangChain run was seen during the call: LangChain was not even loaded, so no "
    "LangChain model or graph ran"
)
UNTRACED_NO_RUN = (
    "no LangChain run was seen during the call: a graph run on a thread agenteval cannot "
    "follow, or no LangChain model at all"
)


def _untraced(recorder: Any, trace: Trace) -> str | None:
    """Why a call that returned has no trace to speak of, or ``None`` when it has one.

    A call is untraced when no LangChain run reached its recorder: agents, handoffs and
    tokens are then unknown, not none. A graph without models still has runs, so is traced.
    """
    if recorder is None or recorder is _PLAIN:
        return UNTRACED_NO_LANGCHAIN
    if trace.tool_calls or trace.messages or trace.agent_path or _saw_runs(recorder):
        return None
    return UNTRACED_NO_RUN


def _saw_runs(recorder: Any) -> bool:
    """Whether any LangChain run (a chain, a graph node, a tool) reached the recorder."""
    return bool(getattr(recorder, "saw_runs", False))


def _capture(coordinators: tuple[str, ...] = ()) -> contextlib.AbstractContextManager[Any]:
    """A callback recorder for the call: LangChain's when LangChain is loaded (a graph, a
    Runnable, or a function whose module uses them), else a plain one."""
    if "langchain_core" in sys.modules:
        from agenteval_cli.tracing import capture

        return capture(coordinators=coordinators)
    return _PLAIN


def _check_outputs(outputs: Any) -> None:
    """Outputs must survive the store's JSON; a value that cannot is the target's error."""
    if not isinstance(outputs, dict):
        raise TypeError(f"target returned {type(outputs).__name__}; return a dict")


@contextlib.contextmanager
def _signals(
    loop: asyncio.AbstractEventLoop, on_signal: Callable[[], None], *, enabled: bool
) -> Iterator[None]:
    """Route Ctrl-C and SIGTERM to ``on_signal`` while the run is going (main thread only)."""
    installed: list[int] = []
    if enabled and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
