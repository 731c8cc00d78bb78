"""The asyncio engine: every target on every example, at most ``concurrency`` calls in flight.

Each finished call is traced and its slot given to the next call at once; the result is
scored in a pool of its own (``evaluator_concurrency`` evaluator calls in flight, the
evaluators of one result side by side, with retries and a rate limit of their own) and handed
to ``on_result`` (which persists it) when its scores are done, so results reach the store as
they finish, not at the end, and slow judges do not hold the target's slots. A run whose
evaluators are all agenteval's own sync ones (no judge: each runs in the event loop as it
is, :func:`~agenteval_cli.evaluators.scoring.runs_inline`) scores a result where its call
ended, with no hand-over. Transient
failures are retried by the spec's policy (:mod:`agenteval_cli.core.retry`), calls are spaced by
its rate limit, and a cached answer (:mod:`agenteval_cli.execution.cache`) replaces the call.
A row with ``inputs.turns`` is a conversation, one call per turn
(:mod:`agenteval_cli.execution.conversations`); every call, single or a turn, is held to
the same deadline and its failure read the same way (:mod:`agenteval_cli.execution.target_calls`).

``stop()`` (Ctrl-C or SIGTERM under ``run(handle_signals=True)``) stops dispatching; calls in
flight, and the scoring of those that finished, get ``grace_s`` seconds to finish and be
saved; calls still running then are cancelled and left for ``--resume``, results still being
scored are saved with null scores saying why. A run that will not stop is ended by force
(:mod:`agenteval_cli.execution.guards.watchdog`), the same results saved first.
Each step of a call is timed: a target that blocks the event loop is timed out and named, and
the calls it starved get that time back (:mod:`agenteval_cli.execution.guards.stalls`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.core.records import Example, ModelCall, Result, Score, Turn
from agenteval_cli.core.retry import Limiter, RateLimiter, RetryPolicy, call_with_retries
from agenteval_cli.data.conversations import conversation_references, is_conversation
from agenteval_cli.evaluators.scoring import (
    EVALUATOR_TIMEOUT_S,
    BoundEvaluator,
    EvaluatorPool,
    Scoring,
    runs_inline,
    score,
    scoring,
    unscored,
)
from agenteval_cli.execution.guards.daemon_pool import DaemonThreadPool
from agenteval_cli.execution.guards.deadline import (
    OWN_FILES,
    Call,
    call_on_stack,
    calls_in_flight,
)
from agenteval_cli.execution.guards.leftovers import SETTLE_S, abandoned_warnings, settle
from agenteval_cli.execution.guards.stalls import LoopStalls
from agenteval_cli.execution.guards.watchdog import CANCEL_S, Interrupts, where
from agenteval_cli.execution.names import RowNotes, with_notes
from agenteval_cli.execution.target_calls import (
    WAITING,
    CallGuard,
    callbacks_of,
    checked_outputs,
    finished_trace,
    recorder_for,
    recorder_options,
    retried_calls,
)
from agenteval_cli.metrics.prices import price_calls, result_calls
from agenteval_cli.targets import Target
from agenteval_cli.trace.pending import prepare_tracing
from agenteval_cli.trace.threads import follow_threads

if TYPE_CHECKING:
    from agenteval_cli.execution.cache import Answers
    from agenteval_cli.targets.users import SimulatedUser


@dataclass
class RunSettings:
    concurrency: int = 4
    timeout_s: float = 60.0
    repetitions: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    requests_per_minute: float | None = None
    grace_s: float = 5.0  # after stop(), how long calls in flight may finish
    # evaluator calls in flight across the run; None: sized from what the run observes,
    # from twice ``concurrency`` up to evaluator_cap()
    evaluator_concurrency: int | None = None
    evaluator_retry: RetryPolicy = field(default_factory=RetryPolicy)  # no retries
    evaluator_requests_per_minute: float | None = None
    evaluator_timeout_s: float | None = EVALUATOR_TIMEOUT_S  # per evaluator call; None: none
    # the spec's pricing: table (model -> USD per 1M tokens by part): each call is priced
    # with it (else the price data in use) as its result comes back, and keeps that price
    pricing: dict[str, dict[str, float]] = field(default_factory=dict)

    def evaluator_slots(self) -> int:
        """Evaluator calls in flight at the start (and throughout, when set by the user)."""
        return self.evaluator_concurrency or 2 * self.concurrency

    def evaluator_cap(self) -> int:
        """The most evaluator calls in flight: the user's figure, else room for judges up
        to eight times slower than the target, two per result (within MAX_EVALUATOR_SLOTS)."""
        if self.evaluator_concurrency:
            return self.evaluator_concurrency
        return max(self.evaluator_slots(), min(MAX_EVALUATOR_SLOTS, 16 * self.concurrency))

    def evaluator_pool(self, **more: Any) -> EvaluatorPool:
        """The evaluators' pool these settings describe (``more``: its other fields)."""
        erpm = self.evaluator_requests_per_minute
        return EvaluatorPool(
            self.evaluator_slots(),
            cap=None if self.evaluator_concurrency else self.evaluator_cap(),
            per_second=erpm / 60 if erpm else None,
            timeout_s=self.evaluator_timeout_s,
            **more,
        )


@dataclass
class WorkItem:
    target: Target
    example: Example
    repetition: int
    replace: bool = False  # a retry of an errored result: the stored row is swapped out
    cache_key: str | None = None


ResultSink = Callable[[WorkItem, Result], None]


class Feed:
    """Work items that arrive while the run goes (a distributed run's driver sends them in
    batches): ``take()`` waits for the next item, and returns None once the feed is closed
    and empty."""

    def __init__(self) -> None:
        self._items: deque[WorkItem] = deque()
        self._closed = False
        self._ready = asyncio.Event()
        self.drained = asyncio.Event()  # set while no item waits to be taken
        self.drained.set()

    def put(self, items: Iterable[WorkItem]) -> None:
        self._items.extend(items)
        if self._items:
            self._ready.set()
            self.drained.clear()

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    async def take(self) -> WorkItem | None:
        while not self._items:
            if self._closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if not self._items:
            self.drained.set()
        return item


YIELD_EVERY_S = 0.02  # longest a worker runs without letting the event loop in
# Threads a sync target may leave behind, stuck past their time-out, before its further
# calls wait for a thread to free up instead of starting another one.
MAX_EVALUATOR_SLOTS = 512  # the default pool's ceiling, however slow the evaluators
ABANDONED_THREADS = 32


@dataclass
class Runner:
    targets: list[Target]
    evaluators: list[BoundEvaluator]
    settings: RunSettings = field(default_factory=RunSettings)
    cache: Answers | None = None
    identities: dict[str, str] = field(default_factory=dict)  # target name -> cache identity
    cache_paths: dict[str, str] = field(default_factory=dict)  # target name -> absolute import path
    # target name -> what its answers depend on (agenteval_cli.execution.fingerprint), as JSON
    cache_fingerprints: dict[str, str] = field(default_factory=dict)
    # Set to share a rate limit with other runners (a distributed run's workers); None:
    # the settings' limits are kept by this runner alone.
    limiter: Limiter | None = field(default=None, repr=False)
    evaluator_limiter: Limiter | None = field(default=None, repr=False)
    stopped: bool = field(default=False, init=False)
    _limiter: Limiter | None = field(default=None, init=False, repr=False)
    _pool: EvaluatorPool | None = field(default=None, init=False, repr=False)  # the evaluators'
    _plan: Scoring | None = field(default=None, init=False, repr=False)  # see _evaluation()
    # target name -> how its calls' recorders read its traces (target_calls.recorder_options)
    _recording: dict[str, dict[str, Any]] = field(default_factory=dict, init=False, repr=False)
    # results whose target answered, not yet handed to on_result: waiting for their scores
    _scoring: dict[int, tuple[WorkItem, Result]] = field(
        default_factory=dict, init=False, repr=False
    )
    _sink: ResultSink | None = field(default=None, init=False, repr=False)
    _force: asyncio.Event | None = field(default=None, init=False, repr=False)
    # the run handles Ctrl-C itself: a KeyboardInterrupt inside a call is the target's own
    _owns_signals: bool = field(default=False, init=False, repr=False)
    # Called (in the main thread) before the process is ended by force, when a stopped run
    # would not end: it saves what finished and says why (see execution.guards.watchdog).
    on_forced_exit: Callable[[str], None] | None = field(default=None, repr=False)
    # Writes the turns of rows without a script (the spec's simulated_user:); None: only
    # rows with inputs.turns are conversations.
    users: SimulatedUser | None = field(default=None, repr=False)
    # target -> example id -> what its scores' comments add, by turn (execution.names): the
    # names the row gives that the target has not, so no score reads as a plain miss
    name_notes: dict[str, dict[str, RowNotes]] = field(default_factory=dict, repr=False)
    _stalls: LoopStalls | None = field(default=None, init=False, repr=False)
    _call_guard: CallGuard | None = field(default=None, init=False, repr=False)  # see _guard()
    # tasks the calls left behind that did not end when cancelled (guards.leftovers)
    abandoned: list[asyncio.Task[Any]] = field(default_factory=list, init=False, repr=False)

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
        from agenteval_cli.execution.cache import cache_key, target_identity

        identity = self.identities.get(target.name) or target_identity(target.import_path)
        if self.users is not None and not is_conversation(example):  # the user writes it
            identity = f"{identity}\nsimulated user: {self.users.identity}"
        return cache_key(identity, example.inputs, repetition)

    def stop(self) -> None:
        """Dispatch nothing new; a second call cancels the calls in flight at once."""
        if self.stopped and self._force is not None:
            self._force.set()
        self.stopped = True

    async def run(
        self,
        items: Iterable[WorkItem] | Feed,
        on_result: ResultSink,
        *,
        handle_signals: bool = False,
    ) -> bool:
        """Run ``items`` with ``concurrency`` workers; ``on_result`` sees each as it ends.

        ``items`` is an iterable, or a :class:`Feed` that items keep arriving on until it is
        closed. Returns True when every item ran, False when stopped early.
        """
        # Tracing is ready before the first call, so a target that imports its graph lazily
        # is traced on its first call: called once, billed once. Loading the targets made it
        # so already (execution.loading); a Runner built by hand gets it here.
        prepare_tracing(target.kind for target in self.targets)

        loop = asyncio.get_running_loop()
        pool = DaemonThreadPool(
            max_threads=self.settings.concurrency + ABANDONED_THREADS, waiting=WAITING
        )
        previous = getattr(loop, "_default_executor", None)  # given back to a loop not ours
        loop.set_default_executor(pool)
        rpm = self.settings.requests_per_minute
        self._limiter = self.limiter or (RateLimiter(rpm) if rpm else None)
        erpm = self.settings.evaluator_requests_per_minute
        # sync evaluators of the user's run here, apart from the targets' threads: one stuck
        # past its time limit holds none of theirs
        evaluator_threads = DaemonThreadPool(
            "agenteval-evaluator", max_threads=self.settings.evaluator_cap() + ABANDONED_THREADS
        )
        self._pool = self.settings.evaluator_pool(
            retry=self.settings.evaluator_retry,
            limiter=self.evaluator_limiter or (RateLimiter(erpm) if erpm else None),
            executor=evaluator_threads,
            owns_signals=handle_signals,
        )
        self._force = asyncio.Event()
        self._sink, self._scoring = on_result, {}
        feed = items if isinstance(items, Feed) else None
        queue: Iterator[WorkItem] = iter(()) if isinstance(items, Feed) else iter(items)
        scored = any(not evaluator.summary for evaluator in self.evaluators)
        # Only agenteval's own sync evaluators, each called in the event loop as it is
        # (scoring.runs_inline): a result is scored where its call ended, since no judge
        # could hold the target's slot, and goes to on_result with no hand-over.
        in_place = scored and all(
            runs_inline(evaluator, self._pool)
            for evaluator in self.evaluators
            if not evaluator.summary
        )
        # Results whose target call ended, waiting for a scorer. Bounded: when scoring is
        # slower than the targets, target calls wait rather than results pile up.
        finished: asyncio.Queue[tuple[WorkItem, Result] | None] = asyncio.Queue(
            maxsize=self.settings.concurrency
        )

        clock = time.monotonic
        turn = [clock() + YIELD_EVERY_S]

        async def worker() -> None:
            while not self.stopped:
                # a shared iterator (or feed): each item goes to one worker
                item = next(queue, None) if feed is None else await feed.take()
                if item is None:
                    return
                result = await self._target_result(item)  # the slot is free once it returns
                if scored:  # errored and interrupted results too: their traces are measured
                    self._scoring[id(result)] = (item, result)
                    if in_place:
                        waiting = self._scored(item, result)
                        if waiting is not None:
                            await waiting
                    else:
                        await finished.put((item, result))
                else:
                    on_result(item, result)
                if clock() >= turn[0]:
                    # Calls that never wait (an instant target) would keep this worker busy
                    # for the whole run: let signals, the store's commits and others in.
                    await asyncio.sleep(0)
                    turn[0] = clock() + YIELD_EVERY_S

        async def scorer() -> None:
            """Scores finished results, one at a time, until the workers are done: after a
            stop too, so every call that finished is scored and saved (within grace_s)."""
            while (done := await finished.get()) is not None:
                waiting = self._scored(*done)
                if waiting is not None:
                    await waiting

        async def calls() -> None:
            await asyncio.gather(*workers)
            for _ in scorers:
                await finished.put(None)  # each scorer ends after the results before it

        # A target that runs its graph on a thread or an executor of its own is traced
        # there too: those threads get the context of the call that starts them.
        # No more workers than work items: a large concurrency on a small dataset costs
        # nothing. Only the first ``concurrency`` items are taken ahead to count them.
        many = self.settings.evaluator_cap()  # results scored at once; idle ones cost nothing
        slots = self.settings.concurrency  # a feed's items arrive later: every worker starts
        if feed is None:
            head = list(itertools.islice(queue, max(1, slots)))
            queue = itertools.chain(head, queue)
            # as many scorers as results may be scored at once, and no more than items
            slots = len(head)
            if slots < self.settings.concurrency:
                many = min(many, slots)
        before = asyncio.all_tasks(loop)
        with follow_threads():
            workers = [asyncio.ensure_future(worker()) for _ in range(slots)]
            handed_over = scored and not in_place
            scorers = [asyncio.ensure_future(scorer()) for _ in range(many if handed_over else 0)]
            parts = [asyncio.ensure_future(calls()), *scorers]
            everything = asyncio.gather(*parts)
            self._stalls = LoopStalls(loop)
            try:
                self._owns_signals = handle_signals
                with self._interrupts(loop, enabled=handle_signals):
                    try:
                        await self._until_done_or_stopped(everything)
                    except asyncio.CancelledError:
                        await self._cancelled(everything)
                        raise
                    except Exception:  # on_result failed (the store): nothing goes on
                        for task in [*workers, *parts]:
                            task.cancel()
                        raise
                    if handle_signals:  # the process is ours: so is every task
                        self.abandoned = await settle(before, self._settle_s())
            finally:
                self._stalls.close()
                evaluator_threads.shutdown(wait=False)
                if not handle_signals:
                    _give_back(loop, previous, pool)
        return not self.stopped

    def _scored(self, item: WorkItem, result: Result) -> Coroutine[Any, Any, None] | None:
        """Score a finished result (held in ``_scoring`` meanwhile) and hand it to the
        run's sink, unless it was saved unscored in the meantime (the run ended by force):
        at once when its evaluators all ran in the event loop (None), else the rest, to
        await."""
        if self.name_notes.get(item.target.name):  # else nothing to add to the scores
            return self._saved_once(item, result, self._score(item, result))
        scores = self._scores(item, result)
        if not isinstance(scores, list):
            return self._saved_once(item, result, scores)
        self._save(item, result, scores)
        return None

    async def _saved_once(
        self, item: WorkItem, result: Result, scores: Awaitable[list[Score]]
    ) -> None:
        """:meth:`_save` once the scoring that waits has ended."""
        self._save(item, result, await scores)

    def _save(self, item: WorkItem, result: Result, scores: list[Score]) -> None:
        if self._scoring.pop(id(result), None) is None or self._sink is None:
            return
        result.scores = scores
        self._sink(item, result)

    def _settle_s(self) -> float:
        """How long the tasks left behind get once cancelled. A stopped run's watchdog ends
        the process ``CANCEL_S`` after the grace period (after a second signal: after it),
        naming the call that would not end; waiting longer than that here leaves a call
        that swallows its cancellation to the watchdog every time, rather than to whichever
        of the two happens to come first."""
        if not self.stopped:
            return SETTLE_S

        return SETTLE_S + CANCEL_S

    async def _cancelled(self, everything: asyncio.Future[Any]) -> None:
        """The run's own task was cancelled (its caller gave up on it): its calls are
        cancelled too and given ``SETTLE_S`` to end, so none goes on storing results
        after the run has returned."""
        self.stopped = True
        everything.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({everything}, timeout=SETTLE_S)

    def _interrupts(
        self, loop: asyncio.AbstractEventLoop, *, enabled: bool
    ) -> contextlib.AbstractContextManager[Any]:
        """Ctrl-C and SIGTERM stop the run; one that will not stop ends the process (see
        :mod:`agenteval_cli.execution.guards.watchdog`): ``on_forced_exit`` saves what
        finished first."""
        if not enabled:
            return contextlib.nullcontext()

        return Interrupts(loop, self.stop, self.settings.grace_s, self._forced_exit, self._stuck)

    def _forced_exit(self, reason: str) -> None:
        """Before the process is ended by force: the results still being scored are saved
        unscored, then ``on_forced_exit`` saves the rest."""
        self._save_unscored("the run was ended by force")
        if self.on_forced_exit is not None:
            self.on_forced_exit(reason)

    def _save_unscored(self, why: str) -> None:
        """Hand ``on_result`` each result whose target answered but whose scoring did not
        end (the run stopped before it could): null scores saying so, each result once."""
        reason = f"not scored: {why} before its evaluators finished"
        while self._scoring and self._sink is not None:
            _, (item, result) = self._scoring.popitem()
            result.scores = unscored(self.evaluators, item.example, reason)
            self._sink(item, result)

    def _stuck(self, frame: FrameType | None) -> str:
        """Which calls kept a stopped run going: the one holding the event loop (``frame``
        is where the main thread was), else those that did not end when cancelled."""
        holder = call_on_stack(frame)
        if holder is not None and not holder.runs_here:  # a served graph's: agenteval's code
            at = where(frame, OWN_FILES)
            return (
                f"agenteval's own code, calling target {holder.target!r} (example "
                f"{holder.example!r}), held the event loop and never gave it back"
                + (f", at {at}" if at else "")
                + " (not the target's code, which runs on its server: please report it)"
            )
        if holder is not None:
            at = where(frame, OWN_FILES)
            return (
                f"target {holder.target!r} (example {holder.example!r}) held the "
                "event loop and never gave it back"
                + (f", at {at}" if at else "")
                + " (blocking code or a busy loop in an async target)"
            )
        calls = [f"target {c.target!r} (example {c.example!r})" for c in calls_in_flight()]
        if not calls:
            return ""
        return (
            f"{', '.join(calls[:5])}{' and others' if len(calls) > 5 else ''} did not end "
            "when cancelled (a target that catches CancelledError and goes on)"
        )

    def abandoned_warnings(self) -> list[str]:
        """One line when tasks the calls left behind would not end when cancelled."""
        return abandoned_warnings(self.abandoned)

    def stall_warnings(self) -> list[str]:
        """One line per target that blocked the event loop (see
        :mod:`agenteval_cli.execution.guards.stalls`)."""
        if self._stalls is None:
            return []
        return self._stalls.warnings(self.settings.timeout_s)

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
                if self._force.is_set():  # a second Ctrl-C
                    self._save_unscored("the run was stopped at once")
                else:
                    self._save_unscored(
                        f"the run was stopped and {self.settings.grace_s:g} s passed"
                    )
                return
        everything.result()  # re-raise a failure of on_result (e.g. the store)

    async def run_one(self, item: WorkItem) -> Result:
        """Call the target (or take its cached answer), then score it. Never raises for the
        target's or an evaluator's failure: those are recorded in the result."""
        result = await self._target_result(item)
        result.scores = await self._score(item, result)
        return result

    async def _target_result(self, item: WorkItem) -> Result:
        """The target's answer (cached or called) and its trace, each model call priced
        (a cached answer's by this run's prices), not yet scored."""
        cached = self.cache is not None and item.cache_key is not None
        result = await (self._answer(item) if cached else self._called(item))
        if result.trace.model_calls or result.turns:
            price_calls(result_calls(result), self.settings.pricing)
        return result

    async def _answer(self, item: WorkItem) -> Result:
        """The cached answer, or the call's, kept for the cache with what it read."""
        assert self.cache is not None and item.cache_key is not None
        hit = self.cache.get(item.cache_key)
        if hit is not None:
            return Result(
                example_id=item.example.id,
                repetition=item.repetition,
                outputs=hit.outputs,
                trace=hit.trace,
                latency_s=hit.latency_s,
                attempts=0,
                cached=True,
                turns=hit.turns,
            )
        from agenteval_cli.execution.env_reads import recording

        with recording() as reads:  # what the answer depends on, for its cache entry
            result = await self._called(item)
        result.env_reads = reads.hashes()
        return result

    def _called(self, item: WorkItem) -> Coroutine[Any, Any, Result]:
        """The call (or conversation) of ``item``, to await: a coroutine the caller awaits
        itself, one layer fewer per call."""
        if is_conversation(item.example) or self.users is not None:
            return self._converse(item)
        return self._call(item)

    async def _converse(self, item: WorkItem) -> Result:
        """A conversation: the row's scripted turns, or the simulated user's. A judge that
        decides when it is resolved scores each turn as it is answered."""
        from agenteval_cli.execution.conversations import converse
        from agenteval_cli.targets.users import TurnSource, turn_source

        example, key = item.example, item.target.input_key

        def source() -> TurnSource:
            found = turn_source(example, input_key=key, simulated=self.users)
            assert found is not None  # a scripted row, or a user to write its turns
            return found

        judge = None if self.users is None else self.users.stop.judge
        judges = [e for e in self.evaluators if e.name == judge]

        async def score_turn(turn: Turn) -> None:
            # the judge reads the turn against the conversation's references
            asked = Example(example.id, turn.inputs, conversation_references(example))
            turn.scores = await score(
                judges,
                asked,
                turn.outputs or {},
                turn.trace,
                self._pool,
                interrupt=turn.interrupt,
            )

        scorer = score_turn if judges and not is_conversation(example) else None
        return await converse(
            item.target,
            example,
            item.repetition,
            self._guard(),
            self.settings.retry,
            self._limiter,
            source,
            scorer,
        )

    async def _score(self, item: WorkItem, result: Result) -> list[Score]:
        """The scores of a result, under the run's evaluator pool: for one that errored or
        stopped at an interrupt, the trace's (the scores that need an answer are null);
        a score whose references name what the target has not says so in its comment."""
        scores = self._scores(item, result)
        if not isinstance(scores, list):
            scores = await scores
        notes = self.name_notes.get(item.target.name, {}).get(item.example.id)
        if notes:
            turns = result.turns or []
            for number, turn in enumerate(turns, 1):
                turn.scores = with_notes(turn.scores, notes.get(number, {}), [turn.trace])
            traces = [result.trace, *(turn.trace for turn in turns)]
            scores = with_notes(scores, notes.get(None, {}), traces)
        return scores

    def _scores(
        self, item: WorkItem, result: Result
    ) -> list[Score] | Coroutine[Any, Any, list[Score]]:
        """The scores of ``result`` when its evaluators all ran in the event loop, else its
        scoring, to await (the caller awaits it itself)."""
        if result.turns is not None:  # a conversation: each turn, then the whole
            from agenteval_cli.evaluators.conversation import score_conversation

            pricing = None if self.users is None else self.users.pricing
            simulated = self.users is not None and not is_conversation(item.example)
            return score_conversation(
                self.evaluators,
                item.example,
                result,
                self._pool,
                pricing=pricing,
                judge=self.users.stop.judge if simulated and self.users else None,
            )
        outputs = result.outputs or {}
        return scoring(
            self._evaluation(), item.example, outputs, result.trace, interrupt=result.interrupt
        )

    def _evaluation(self) -> Scoring:
        """The run's evaluators as each result's scoring reads them, worked out once the run
        has its evaluator pool."""
        plan = self._plan
        if plan is None or plan.pool is not self._pool or plan.evaluators is not self.evaluators:
            plan = self._plan = Scoring(self.evaluators, self._pool)
        return plan

    async def _call(self, item: WorkItem) -> Result:
        """One call of the target on the example's inputs, retried by the run's policy."""
        guard = self._guard()
        target = item.target
        options = self._recording.get(target.name)
        if options is None:
            options = self._recording[target.name] = recorder_options(target)
        recorder: Any = None  # the last attempt's, and when it started
        started: float | None = None
        retried: list[ModelCall] = []  # the model calls of attempts that failed: spent too

        async def attempt() -> dict[str, Any]:
            nonlocal recorder, started
            if recorder is not None:  # an earlier attempt failed: its calls were still made
                retried.extend(retried_calls(recorder))
            # a fresh trace per attempt: failed ones don't count
            key = (item.example.id, item.repetition)
            with recorder_for(target, key, options=options) as recorder:
                started = time.perf_counter()
                outputs = await guard.outputs(
                    target(item.example.inputs, callbacks_of(recorder)),
                    Call(target.name, item.example.id, target.runs_here),
                )
            return checked_outputs(outputs)

        outputs: dict[str, Any] | None = None
        error: str | None = None
        attempts = 1
        policy = self.settings.retry
        try:
            if self._limiter is None:  # the first attempt waits for nothing: made here
                try:
                    outputs = await attempt()
                except Exception as exc:
                    if not policy.max:
                        raise
                    outputs, attempts = await call_with_retries(
                        attempt, policy, max_wait_s=guard.timeout_s, failed=exc
                    )
            else:
                outputs, attempts = await call_with_retries(
                    attempt,
                    policy,
                    before_attempt=self._limiter.acquire,
                    max_wait_s=guard.timeout_s,
                )
        except BaseException as exc:
            error = guard.failure(exc)
            if error is None:  # not the example's: it stops the run
                raise
            retrying = policy.max or self._limiter is not None  # else one attempt was made
            attempts = getattr(exc, "attempts", 1) if retrying else 1
        latency = 0.0 if started is None else time.perf_counter() - started
        return Result(
            item.example.id,
            item.repetition,
            outputs,
            finished_trace(recorder, error, latency, retried),
            error=error,
            latency_s=latency,
            attempts=attempts,
            interrupt=None if error is not None else returned_interrupt(outputs),
        )

    def _guard(self) -> CallGuard:
        """What each target call of this run is held to (its time-out, the loop's stalls):
        made once the run has them, for all its calls."""
        guard = self._call_guard
        if (
            guard is None
            or guard.stalls is not self._stalls
            or (guard.owns_signals != self._owns_signals)
        ):
            guard = self._call_guard = CallGuard(
                timeout_s=self.settings.timeout_s,
                stalls=self._stalls,
                threads=self.settings.concurrency + ABANDONED_THREADS,
                owns_signals=self._owns_signals,
            )
        return guard


def _give_back(loop: asyncio.AbstractEventLoop, previous: Any, pool: Any) -> None:
    """The caller's loop (a notebook's, an application's) gets its own default executor
    back after the run; the run's pool lets its threads end once idle (they are daemon
    threads: one stuck in a call does not hold the process)."""
    loop._default_executor = previous  # type: ignore[attr-defined]
    pool.shutdown(wait=False)
