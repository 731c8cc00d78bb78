"""The driver of a Ray run: hands work to the workers, saves what they send back.

Each worker holds at most a window of items, topped up as its results arrive: its
concurrency, plus what it finishes in ``REFILL_S`` (at least half its concurrency again),
so a worker never waits for work while a batch is on its way, a fast worker takes more, and
slow calls are not queued behind each other on one worker while another is idle. Results
are handed to ``on_result`` (the store's writer) in this process only, each call's run tree
(when the run keeps them) to ``on_tree`` just before its result. A worker whose
process or node dies has its unfinished items run again on the others, and a replacement
is started; an item that was running each time a worker died ``MAX_DEATHS`` times (one that
crashes its process) is saved as that example's error instead of being run forever. Items
that were running at two deaths go out one to a worker, so the innocent ones are not blamed
with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agenteval_cli.core.records import Result, Trace
from agenteval_cli.evaluators.scoring import EVALUATOR_TIMEOUT_S, BoundEvaluator
from agenteval_cli.execution.ray_executor.cluster import (
    Connection,
    RayFailure,
    RayOptions,
    agenteval_version,
    connect,
)
from agenteval_cli.execution.ray_executor.limiter import SharedRateLimit
from agenteval_cli.execution.ray_executor.trees import ItemKey, Tree
from agenteval_cli.execution.ray_executor.worker import Finished, Job, Task, Worker
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.spec.model import Spec

MAX_DEATHS = 3  # workers an item may see die under it before it is saved as an error
SUSPECT = 2  # deaths after which an item goes out alone to a worker
READY_S = 180.0  # how long a new worker may take to start (runtime env, imports)
STOP_S = 5.0  # after the grace period, how long stopped workers get to send what they have
MAX_START_FAILURES = 3  # replacements in a row that fail to start before the run gives up
REFILL_S = 0.25  # a worker's window holds this long's worth of its results beyond its slots
MAX_WINDOW = 4096


class WorkersLost(RayFailure):
    """No Ray worker is left and none can be started: the run cannot go on."""


@dataclass
class _Slot:
    """One worker and the items it holds."""

    index: int
    actor: Any
    concurrency: int
    outstanding: dict[ItemKey, WorkItem] = field(default_factory=dict)
    suspects: int = 0  # items among ``outstanding`` that were running at SUSPECT deaths
    host: str = "?"
    alive: bool = True
    closed: bool = False
    received: int = 0  # results it sent back
    since: float = field(default_factory=time.monotonic)

    @property
    def window(self) -> int:
        """How many items it may hold: see the module."""
        rate = self.received / max(time.monotonic() - self.since, 1e-3)
        ahead = max(self.concurrency // 2 + 1, math.ceil(rate * REFILL_S))
        return min(MAX_WINDOW, self.concurrency + ahead)


class RayEngine:
    """Runs a prepared run's work items on Ray workers, with the face of
    :class:`~agenteval_cli.execution.runner.Runner` that the execution uses."""

    def __init__(
        self,
        local: Runner,
        job: Job,
        options: RayOptions,
        note: Callable[[str], None] | None = None,
        on_tree: Callable[[WorkItem, Tree], None] | None = None,
    ) -> None:
        self.local = local  # the driver's runner: cache lookups and settings
        self.on_tree = on_tree  # where a call's run tree is kept, when the job records them
        self.job, self.options = job, options
        self.note = note or (lambda text: None)
        self.stopped = False
        self.abandoned: list[asyncio.Task[Any]] = []
        self.on_forced_exit: Callable[[str], None] | None = None
        self.warnings: list[str] = []
        self.slots: list[_Slot] = []
        self.deaths: dict[ItemKey, int] = {}
        self.retry: deque[WorkItem] = deque()
        self.source: Iterator[WorkItem] = iter(())
        self.exhausted = False
        self.consumers: set[asyncio.Task[Any]] = set()
        self.start_failures = 0
        self.failure: BaseException | None = None
        self.replacing = 0  # replacement workers being started
        self.starting: set[asyncio.Task[Any]] = set()  # their tasks
        self.closing = False  # the run is over: nothing more starts
        self.sink: Callable[[WorkItem, Result], None] = lambda item, result: None
        self.connection: Connection | None = None
        self.actor_class: Any = None
        self.limiters: list[Any] = []
        self.shares: list[RunSettings] = []  # each worker's settings, by index

    # -- the face the execution uses --------------------------------------------------------

    def stop(self) -> None:
        """Stop dispatching; the workers stop as a local run does (a second stop cancels)."""
        self.stopped = True
        for slot in self._live():
            slot.actor.stop.remote()

    def stall_warnings(self) -> list[str]:
        return list(self.warnings)

    def abandoned_warnings(self) -> list[str]:
        return []

    async def run(
        self,
        items: Iterable[WorkItem],
        on_result: Callable[[WorkItem, Result], None],
        *,
        handle_signals: bool = False,
    ) -> bool:
        """Run ``items`` on the workers; True when every one ran."""
        self.source, self.sink = iter(items), on_result
        self.connection = connect(self.job.spec, self.options)
        try:
            with self._interrupts(enabled=handle_signals):
                await self._start()
                await self._until_done()
        finally:
            await self._shutdown()
        if self.failure is not None:
            raise self.failure
        return not self.stopped

    # -- starting and ending ----------------------------------------------------------------

    async def _start(self) -> None:
        assert self.connection is not None
        ray = self.connection.ray
        self.job.shipped = self.connection.shipped
        settings = self.local.settings
        limiter_class = ray.remote(SharedRateLimit).options(num_cpus=0)
        if settings.requests_per_minute:
            self.job.limiter = limiter_class.remote(settings.requests_per_minute)
            self.limiters.append(self.job.limiter)
        if settings.evaluator_requests_per_minute:
            self.job.evaluator_limiter = limiter_class.remote(
                settings.evaluator_requests_per_minute
            )
            self.limiters.append(self.job.evaluator_limiter)
        if self.job.judged:  # each judge's first call once for the run, not per worker
            from agenteval_cli.execution.ray_executor.first_calls import SharedFirstCalls

            first_calls = ray.remote(SharedFirstCalls).options(num_cpus=0)
            wait_s = settings.evaluator_timeout_s or EVALUATOR_TIMEOUT_S
            self.job.first_calls = first_calls.remote(wait_s + STOP_S)
            self.limiters.append(self.job.first_calls)
        cpus = self.connection.cpus
        count = self.options.workers or max(1, int(cpus))
        count = max(1, min(count, settings.concurrency))
        self.shares = _split(settings, count)
        self.actor_class = ray.remote(Worker).options(
            num_cpus=min(1.0, cpus / count), max_restarts=0
        )
        slots = [self._new_slot(index) for index in range(count)]
        await asyncio.gather(*(self._ready(slot) for slot in slots))
        hosts = sorted({slot.host for slot in slots})
        where = self.options.address or (
            "a local Ray instance" if self.connection.started else "Ray"
        )
        self.note(
            f"ray: {count} worker(s) on {len(hosts)} host(s) of {where}, concurrency "
            f"{'+'.join(str(s.concurrency) for s in self.shares)}"
        )
        for slot in slots:
            self._begin(slot)

    def _new_slot(self, index: int) -> _Slot:
        job = replace(self.job, settings=self.shares[index % len(self.shares)])
        actor = self.actor_class.remote(job)
        return _Slot(index, actor, concurrency=job.settings.concurrency)

    async def _ready(self, slot: _Slot) -> _Slot:
        """Wait for the worker to start; its problem (a target that will not import there) is
        the user's error, as it would be in a local run."""
        from agenteval_cli.core.errors import UserError

        info = await asyncio.wait_for(slot.actor.ready.remote(), READY_S)
        if info["problem"]:
            raise UserError(f"on a Ray worker ({info['host']}): {info['problem']}")
        slot.host = info["host"]
        return slot

    def _begin(self, slot: _Slot) -> None:
        self.slots.append(slot)
        self._fill(slot)
        task = asyncio.ensure_future(self._consume(slot))
        self.consumers.add(task)
        task.add_done_callback(self.consumers.discard)

    async def _until_done(self) -> None:
        """Until every item is saved and the workers have said goodbye (or the run failed,
        or it was stopped and its workers had their time). A replacement still starting
        when nothing is left to run is not waited for."""
        stop_deadline: float | None = None
        loop = asyncio.get_running_loop()
        while self.failure is None:
            working = self.consumers or (self.replacing and not self._all_saved())
            if not working:
                break
            if self.stopped and stop_deadline is None:
                stop_deadline = loop.time() + self.local.settings.grace_s + STOP_S
            if stop_deadline is not None and loop.time() > stop_deadline:
                break  # the workers did not end: what they hold is left for --resume
            await asyncio.sleep(0.05)

    def _all_saved(self) -> bool:
        return self.exhausted and not self.retry and not any(s.outstanding for s in self.slots)

    async def _shutdown(self) -> None:
        """The workers, the limiters and (when this run started it) Ray itself, ended."""
        self.closing = True
        left = [*self.consumers, *self.starting]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        for actor in [*(slot.actor for slot in self.slots), *self.limiters]:
            self._kill(actor)
        if self.connection is not None:
            self.connection.close()

    # -- dispatch ---------------------------------------------------------------------------

    def _live(self) -> list[_Slot]:
        return [slot for slot in self.slots if slot.alive]

    def _next(self, *, suspects_ok: bool) -> WorkItem | None:
        if self.retry:
            if suspects_ok or self.deaths.get(_key(self.retry[0]), 0) < SUSPECT:
                return self.retry.popleft()
            for index, item in enumerate(self.retry):  # a suspect is taken by another worker
                if self.deaths.get(_key(item), 0) < SUSPECT:
                    del self.retry[index]
                    return item
        if self.exhausted or self.stopped:
            return None
        fresh = next(self.source, None)
        if fresh is None:
            self.exhausted = True
        return fresh

    def _fill(self, slot: _Slot) -> None:
        if not slot.alive or slot.closed or self.stopped:
            return
        tasks = []
        cache = self.local.cache
        while len(slot.outstanding) < slot.window:
            item = self._next(suspects_ok=slot.suspects == 0)
            if item is None:
                break
            key = _key(item)
            if self.deaths.get(key, 0) >= SUSPECT:
                slot.suspects += 1
            cached = None
            if cache is not None and item.cache_key is not None:
                cached = cache.get(item.cache_key)
            slot.outstanding[key] = item
            tasks.append(Task(item.target.name, item.example, item.repetition, cached))
        if tasks:
            slot.actor.submit.remote(tasks)
        self._close_if_done()

    def _close_if_done(self) -> None:
        """Once every item is back, the workers are told there is no more."""
        if not self._all_saved():
            return
        for slot in self._live():
            if not slot.closed:
                slot.closed = True
                slot.actor.close.remote()

    # -- results and deaths -----------------------------------------------------------------

    async def _consume(self, slot: _Slot) -> None:
        from ray.exceptions import ObjectLostError, RayActorError  # a dead or lost worker

        try:
            async for ref in slot.actor.results.remote():
                message = await ref
                if isinstance(message, Finished):
                    self.warnings += [w for w in message.warnings if w not in self.warnings]
                    break
                for target, result in message:
                    key = (target, result.example_id, result.repetition)
                    item = slot.outstanding.pop(key, None)
                    if item is None:
                        continue  # not this worker's to send (already saved)
                    slot.received += 1
                    if self.deaths.get(_key(item), 0) >= SUSPECT:
                        slot.suspects -= 1
                    tree = message.trees.get(key)
                    if tree is not None and self.on_tree is not None:
                        self.on_tree(item, tree)  # before its result, as in-process
                    self._save(item, result)
                self._fill(slot)
                for other in self._live():  # a freed suspect may go to an idle worker
                    if other is not slot and len(other.outstanding) < other.window:
                        self._fill(other)
        except (RayActorError, ObjectLostError) as exc:
            self._died(slot, exc)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the runner or the store failed: the run cannot go on
            if self.failure is None:
                self.failure = exc

    def _save(self, item: WorkItem, result: Result) -> None:
        try:
            self.sink(item, result)
        except KeyboardInterrupt:
            self.stop()

    def _died(self, slot: _Slot, exc: BaseException) -> None:
        slot.alive = False
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        lost = list(slot.outstanding.values())
        slot.outstanding.clear()
        rerun = 0
        for item in lost:
            key = _key(item)
            self.deaths[key] = self.deaths.get(key, 0) + 1
            if self.deaths[key] >= MAX_DEATHS:
                self._save(item, _crashed(item, self.deaths[key], reason))
            else:
                self.retry.append(item)
                rerun += 1
        if self.stopped:
            return
        self.note(
            f"ray: worker {slot.index} on {slot.host} died ({reason}); "
            f"its {rerun} unfinished item(s) run again"
        )
        for other in self._live():
            self._fill(other)
        if self.retry or not self.exhausted:
            self._replace(slot)
        else:
            self._close_if_done()

    def _kill(self, actor: Any) -> None:
        if self.connection is not None:
            with contextlib.suppress(Exception):
                self.connection.ray.kill(actor)

    def _replace(self, dead: _Slot) -> None:
        self.replacing += 1

        async def start() -> None:
            slot = self._new_slot(dead.index)
            try:
                await self._ready(slot)
            except Exception as exc:  # no room on the cluster, or it failed to start
                self._kill(slot.actor)
                self.start_failures += 1
                if not self._live() and self.start_failures >= MAX_START_FAILURES:
                    self.failure = WorkersLost(
                        f"every Ray worker died and none could be started again ({exc}); "
                        "what finished is saved: run again with --resume"
                    )
                elif not (self.stopped or self.closing):
                    self._replace(dead)
                return
            except asyncio.CancelledError:  # the run ended first
                self._kill(slot.actor)
                raise
            finally:
                self.replacing -= 1
            self.start_failures = 0
            if self.stopped or self.closing:
                self._kill(slot.actor)
                return
            self._begin(slot)

        task = asyncio.ensure_future(start())
        self.starting.add(task)
        task.add_done_callback(self.starting.discard)

    # -- Ctrl-C -----------------------------------------------------------------------------

    def _interrupts(self, *, enabled: bool) -> contextlib.AbstractContextManager[Any]:
        if not enabled:
            return contextlib.nullcontext()
        from agenteval_cli.execution.guards.watchdog import Interrupts

        loop = asyncio.get_running_loop()
        return Interrupts(loop, self.stop, self.local.settings.grace_s + STOP_S, self._forced)

    def _forced(self, reason: str) -> None:
        if self.on_forced_exit is not None:
            self.on_forced_exit("the Ray workers did not stop within the grace period")


def _key(item: WorkItem) -> ItemKey:
    return (item.target.name, item.example.id, item.repetition)


def _crashed(item: WorkItem, deaths: int, reason: str) -> Result:
    error = (
        f"WorkerCrashed: the Ray worker running this call died {deaths} times ({reason}); "
        "the call is not tried again"
    )
    return Result(
        example_id=item.example.id,
        repetition=item.repetition,
        outputs=None,
        trace=Trace(error=error),
        error=error,
    )


def _split(settings: RunSettings, count: int) -> list[RunSettings]:
    """Each worker's share of the run's concurrency and of the evaluator slots the user set
    (spread as evenly as they divide; unset, each worker sizes its own pool from its share
    of the work); every other setting is the run's."""

    def share(total: int, index: int) -> int:
        return max(1, total // count + (1 if index < total % count else 0))

    given = settings.evaluator_concurrency
    return [
        replace(
            settings,
            concurrency=share(settings.concurrency, index),
            evaluator_concurrency=share(given, index) if given else None,
        )
        for index in range(count)
    ]


def make_job(
    spec: Spec,
    runner: Runner,
    evaluators: list[BoundEvaluator],
    *,
    keep_run_trees: bool = False,
) -> Job:
    """What every worker of the run is built from; ``shipped`` and the limiters are set
    once the run has connected. With ``keep_run_trees`` each result comes back with its
    call's run tree (for an upload)."""
    return Job(
        spec=spec,
        only_targets=[t.name for t in runner.targets],
        settings=runner.settings,
        samples={e.name: e.example_ids for e in evaluators},
        shipped=False,
        version=agenteval_version(),
        sys_path=[p for p in sys.path if p],
        judged=any(getattr(e.fn, "judge_calls", None) is not None for e in evaluators),
        name_notes=runner.name_notes,
        keep_run_trees=keep_run_trees,
    )
