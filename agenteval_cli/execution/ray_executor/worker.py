"""The Ray actor that runs a share of a distributed run's calls.

It is built from the spec the driver loaded (its targets and evaluators imported again on
the worker, from the spec's folder shipped as its working directory), takes batches of work
from the driver, runs them with the in-process :class:`~agenteval_cli.execution.runner.Runner`
and streams each finished result back. It writes nothing: the driver keeps the store.
This module does not import Ray; the driver makes the class an actor.
"""

from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Result
from agenteval_cli.execution.cache import CachedCall
from agenteval_cli.execution.names import RowNotes
from agenteval_cli.execution.ray_executor.limiter import RemoteLimiter
from agenteval_cli.execution.ray_executor.trees import ItemKey, RecordedTrees, Tree
from agenteval_cli.execution.runner import Feed, Runner, RunSettings, WorkItem
from agenteval_cli.spec.model import Spec
from agenteval_cli.store.results import as_stored, unstorable

# How long a worker gathers finished results before it sends them, unless it runs out of
# queued work first (then the driver needs to hear at once, to send more).
BATCH_S = 0.05


@dataclass
class Job:
    """What every worker of a run is built from."""

    spec: Spec
    only_targets: list[str] | None
    settings: RunSettings  # this worker's share of the run's concurrency
    samples: dict[str, frozenset[str] | None]  # evaluator name -> its sampled example ids
    shipped: bool  # the spec's folder is the worker's working directory
    version: str  # the driver's agenteval version: the worker's must be the same
    # the driver's import path: a worker on the same machine (nothing shipped) imports the
    # targets from where the driver did
    sys_path: list[str] = field(default_factory=list)
    limiter: Any = None  # the shared limiters' actor handles, or None
    evaluator_limiter: Any = None
    judged: bool = False  # an evaluator is an LLM judge: its first call is the run's
    first_calls: Any = None  # the judges' SharedFirstCalls actor handle, or None
    # what the comments of scores add where a row names what its target has not (the
    # driver's check: agenteval_cli.execution.names)
    name_notes: dict[str, dict[str, RowNotes]] = field(default_factory=dict)
    keep_run_trees: bool = False  # each call's run tree is sent back for the upload


@dataclass
class Task:
    """One work item as it travels: a target by name, and its cached answer when the driver
    found one."""

    target: str
    example: Example
    repetition: int
    cached: CachedCall | None = None


@dataclass
class Finished:
    """A worker's last message: its runner's warnings (targets that blocked its loop)."""

    warnings: list[str] = field(default_factory=list)


class Batch(list[tuple[str, Result]]):
    """(target name, result) as they finished; ``trees``, when the run keeps them, the run
    trees of their calls by (target name, example id, repetition)."""

    def __init__(
        self, done: Iterable[tuple[str, Result]] = (), trees: dict[ItemKey, Tree] | None = None
    ) -> None:
        super().__init__(done)
        self.trees: dict[ItemKey, Tree] = trees or {}


def shipped(result: Result) -> Result:
    """``result`` with its outputs as the store will keep them (their JSON, decoded), so
    what travels to the driver is plain values whatever the target returned (a lock, a
    client, an instance of a class in a target file, which the driver imports under another
    name); outputs JSON cannot hold are the error the store records for them."""
    try:
        result.outputs = as_stored(result.outputs)
        for turn in result.turns or []:  # a conversation's turns travel the same way
            turn.outputs = as_stored(turn.outputs)
            turn.inputs = as_stored(turn.inputs)
    except Exception as exc:
        unstorable(result, exc)
    return result


class _ShippedAnswers:
    """The cached answers the driver sent with the work, each taken once."""

    def __init__(self) -> None:
        self.answers: dict[str, CachedCall] = {}

    def get(self, key: str) -> CachedCall | None:
        return self.answers.pop(key, None)


class Worker:
    """A Ray actor (async: its methods run on its event loop). A spec that fails to load
    here (a target that does not import on the worker) is reported by :meth:`ready`."""

    def __init__(self, job: Job) -> None:
        from agenteval_cli.langsmith.offline import TRACING_VARS

        os.environ.update(dict.fromkeys(TRACING_VARS, "false"))  # a worker never traces
        self.job = job
        # The shipped copy of the spec's folder, where Ray started this worker (the shell
        # that did so recorded it in PWD); None when nothing was shipped.
        self.home = Path(os.environ.get("PWD") or os.getcwd()) if job.shipped else None
        self._back_home()
        self.feed = Feed()
        self.answers = _ShippedAnswers()
        self.trees = RecordedTrees() if job.keep_run_trees else None
        self.problem: str | None = None
        self.runner: Runner | None = None
        try:
            self.runner = self._build(job)
        except UserError as exc:
            self.problem = exc.format()
        # What is loaded by now (Ray, LangGraph, the targets) lives as long as the worker:
        # the collector need not walk it again on every full collection of the run.
        gc.freeze()

    def _build(self, job: Job) -> Runner:
        import agenteval_cli.evaluators  # noqa: F401 (registers every family)
        from agenteval_cli.evaluators.loading import bind_evaluators
        from agenteval_cli.execution.loading import load_simulated_user, load_targets

        spec = job.spec
        if self.home is not None:  # relative paths in the spec resolve in the shipped copy
            spec.relocate(self.home)
        else:
            sys.path.extend(p for p in job.sys_path if p not in sys.path)
        targets = load_targets(spec, job.only_targets)
        skipped: list[str] = []
        evaluators = bind_evaluators(spec, None, warn=skipped.append)
        built = {e.name for e in evaluators}
        missing = [name for name in job.samples if name not in built]
        if missing:
            raise UserError(
                f"evaluator(s) {', '.join(missing)} could not be built on a Ray worker"
                + (f" ({'; '.join(skipped)})" if skipped else "")
                + ", where the driver built them",
                hint="give the workers the keys they need with 'ray: {env: [NAME, ...]}'",
            )
        # the driver's evaluators (a judge it skipped is skipped here too), with its samples
        evaluators = [e for e in evaluators if e.name in job.samples]
        for evaluator in evaluators:
            evaluator.example_ids = job.samples[evaluator.name]
        runner = Runner(
            targets=targets,
            evaluators=evaluators,
            settings=job.settings,
            users=load_simulated_user(spec),
            name_notes=job.name_notes,
        )
        runner.cache = self.answers
        if job.limiter is not None:
            runner.limiter = RemoteLimiter(job.limiter)
        if job.evaluator_limiter is not None:
            runner.evaluator_limiter = RemoteLimiter(job.evaluator_limiter)
        if job.first_calls is not None:  # a refused judge key: one request for the run
            from agenteval_cli.evaluators.judge import share_first_calls
            from agenteval_cli.execution.ray_executor.first_calls import RemoteFirstCalls

            share_first_calls(RemoteFirstCalls(job.first_calls))
        return runner

    def _back_home(self) -> None:
        """Into the shipped folder again if it was unpacked anew under this worker. Nodes
        that share a machine share Ray's folder of unpacked code, and each node's agent
        unpacks a job's working_dir afresh when it first needs it, deleting the copy that
        workers of another node already run in: their calls' working directory would be
        a deleted folder, and every relative path in them would fail."""
        if self.home is None:
            return
        try:
            here, there = os.stat("."), os.stat(self.home)
        except OSError:  # the folder is being unpacked again: the next batch looks again
            return
        if (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
            os.chdir(self.home)

    async def ready(self) -> dict[str, Any]:
        """Who this worker is, and what keeps it from running (None when nothing does)."""
        from agenteval_cli.execution.ray_executor.cluster import agenteval_version

        self._back_home()
        version = agenteval_version()
        problem = self.problem
        if problem is None and version != self.job.version:
            problem = (
                f"the Ray worker has agenteval {version}, the driver {self.job.version}: "
                "install the same version on the cluster"
            )
        return {
            "host": platform.node(),
            "pid": os.getpid(),
            "problem": problem,
        }

    async def submit(self, tasks: list[Task]) -> None:
        if self.runner is None:
            return
        self._back_home()
        targets = {t.name: t for t in self.runner.targets}
        items = []
        for task in tasks:
            key = None
            if task.cached is not None:
                key = f"{task.target}\0{task.example.id}\0{task.repetition}"
                self.answers.answers[key] = task.cached
            items.append(
                WorkItem(targets[task.target], task.example, task.repetition, cache_key=key)
            )
        self.feed.put(items if self.trees is None else self.trees.wrap(items))

    async def close(self) -> None:
        """No more work: the worker ends once what it has is done."""
        self.feed.close()

    async def stop(self) -> None:
        """As Ctrl-C in a local run: nothing new starts; a second stop cancels the calls."""
        if self.runner is not None:
            self.runner.stop()
        self.feed.close()

    async def results(self) -> AsyncIterator[Batch | Finished]:
        """Every result as it finishes (:func:`shipped`), with its call's run tree when the
        run keeps them, in small batches, then :class:`Finished`."""
        runner = self.runner
        if runner is None:
            yield Finished()
            return
        out = Batch()
        wake = asyncio.Event()

        def sink(item: WorkItem, result: Result) -> None:
            key = (item.target.name, item.example.id, item.repetition)
            out.append((key[0], shipped(result)))
            tree = self.trees.take(*key) if self.trees is not None else None
            if tree is not None:
                out.trees[key] = tree
            wake.set()

        run = asyncio.ensure_future(runner.run(self.feed, sink))
        while True:
            waiter = asyncio.ensure_future(wake.wait())
            await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not run.done() and not self.feed.drained.is_set():
                drained = asyncio.ensure_future(self.feed.drained.wait())
                await asyncio.wait({run, drained}, timeout=BATCH_S)  # a few more to send
                drained.cancel()
            wake.clear()
            if out:
                batch = Batch(out, out.trees)
                out.clear()
                out.trees = {}
                yield batch
            if run.done() and not out:
                break
        run.result()  # a failure of the runner itself is the driver's to report
        yield Finished(runner.stall_warnings() + runner.abandoned_warnings())
