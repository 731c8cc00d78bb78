"""Scoring one result: every evaluator of the experiment, failures kept as null scores.

An evaluator limited to a sample (``sample: 0.25``) runs only on its chosen examples (see
:func:`choose_sample`) and adds no score elsewhere, so its mean is over the examples it saw.
What judges spend while scoring a result is added as ``judge_*`` scores, apart from the
target's own ``token_cost``.

The evaluators of one result run concurrently; an :class:`EvaluatorPool` (the runner's) caps
how many evaluator calls are in flight across the whole run, and gives them a retry policy,
a rate limit and a time limit (``evaluator_timeout_s``, per attempt) of their own, apart from
the target's.

An evaluator of the user's (anything not agenteval's own) is kept from harming the run: it
gets its own deep copy of the arguments it asks for, so what it changes is seen by no other
evaluator, the store or the cache; a sync one runs in a worker thread, off the event loop,
so a slow one neither blocks the run nor outlives its time limit; and a
``KeyboardInterrupt`` it raises is its own failure when the run handles Ctrl-C itself.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import hashlib
import inspect
import pickle
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.records import Example, Result, Run, Score, Trace, no_answer_reason
from agenteval_cli.core.retry import Limiter, RetryPolicy, call_with_retries
from agenteval_cli.core.safe_text import exception_text
from agenteval_cli.evaluators.invoke import (
    KNOWN_PARAMETERS,
    Plan,
    argument_plan,
    normalize,
    planned_arguments,
)
from agenteval_cli.evaluators.judge_model import collect_judge_usage, usage_scores
from agenteval_cli.evaluators.slots import AdaptiveSlots
from agenteval_cli.metrics.catalog import BUILT_IN
from agenteval_cli.metrics.registry import Level, MetricInfo


@dataclass
class BoundEvaluator:
    """An evaluator built from the spec, with the keys to report if it fails."""

    name: str
    fn: Callable[..., Any]
    keys: tuple[str, ...] = ()
    sample: float | None = None  # share of examples to score, None for all
    seed: int = 0
    example_ids: frozenset[str] | None = None  # the chosen sample; None scores every example
    summary: bool = False  # dataset-level: run once per target, not per result
    metrics: tuple[MetricInfo, ...] = ()  # how its keys read, as the spec and it declare
    # "conversation": scored once on a conversation's whole transcript, not on each turn
    level: Level = "request"
    references: tuple[str, ...] = ()  # the reference fields it reads (needed or optional)
    # (fn, its argument plan for score()'s names, or the error working it out raised)
    _plan: tuple[Any, Any] | None = field(default=None, init=False, repr=False, compare=False)
    # (fn, whether it runs in the event loop as it is): see in_loop()
    _in_loop: tuple[Any, bool] | None = field(default=None, init=False, repr=False, compare=False)

    def needs_answer(self, key: str) -> bool:
        """Whether its score ``key`` is null for a result with no final answer."""
        for declared in self.metrics:
            if declared.key == key:
                return declared.needs_answer
        return BUILT_IN.needs_answer(key)

    def in_loop(self) -> bool:
        """Whether ``fn`` is one of agenteval's own sync evaluators, called in the event
        loop as it is (:func:`runs_inline`)."""
        if self._in_loop is None or self._in_loop[0] is not self.fn:
            self._in_loop = (self.fn, is_own(self.fn) and not _is_async(self.fn))
        return self._in_loop[1]

    def wants_run(self) -> bool:
        """Whether ``fn`` takes the ``run`` view (one whose signature cannot be read is
        counted as taking it: calling it says why it failed)."""
        try:
            return self.plan()[1]
        except Exception:
            return True

    def plan(self) -> Plan:
        """How ``fn`` takes score()'s arguments, worked out on first use."""
        cached = self._plan
        if cached is None or cached[0] is not self.fn:
            try:
                cached = (self.fn, argument_plan(self.fn, KNOWN_PARAMETERS))
            except Exception as exc:  # no signature to read: raised where it is called
                cached = (self.fn, exc)
            self._plan = cached
        if isinstance(cached[1], Exception):
            raise cached[1]
        return cached[1]


def choose_sample(ids: Sequence[str], share: float, *, seed: int, name: str) -> frozenset[str]:
    """``round(share * n)`` example ids (at least one), the same for every target and
    repetition: ids ranked by a seeded hash, so the choice is reproducible and stable when
    examples are added."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return frozenset()
    count = max(1, round(share * len(unique)))

    def rank(example_id: str) -> str:
        return hashlib.sha256(f"{seed}:{name}:{example_id}".encode()).hexdigest()

    return frozenset(sorted(unique, key=rank)[:count])


def apply_sampling(evaluators: Sequence[BoundEvaluator], examples: Sequence[Example]) -> None:
    """Fix each sampled evaluator's examples; call once the examples are known."""
    sampled = [e for e in evaluators if e.sample is not None and e.sample < 1]
    if not sampled:  # the examples (maybe a file read again) need not be read for ids
        return
    ids = [e.id for e in examples]
    for evaluator in sampled:
        share = evaluator.sample
        assert share is not None
        evaluator.example_ids = choose_sample(ids, share, seed=evaluator.seed, name=evaluator.name)


# What the comment of an evaluator's failure looks like, as an SQL LIKE pattern.
FAILED_LIKE = "evaluator %failed: %"

# How long one evaluator call (one attempt) may take when the spec sets no
# ``evaluator_timeout_s``: room for a slow LLM judge, not for one that never answers.
EVALUATOR_TIMEOUT_S = 120.0


@dataclass
class EvaluatorPool:
    """What every evaluator call of a run shares: at most ``concurrency`` in flight (with a
    ``cap``, that many at first, then as many as the run's demand needs, up to ``cap``: see
    :mod:`agenteval_cli.evaluators.slots`), retried by ``retry`` (no retries by default),
    spaced by ``limiter`` when there is one (``per_second`` its rate), each attempt given
    ``timeout_s`` seconds (None: no limit). Sync evaluators of the user's run on ``executor``
    (None: the loop's default one). ``owns_signals``: the run handles Ctrl-C itself, so a
    ``KeyboardInterrupt`` inside an evaluator is the evaluator's own."""

    concurrency: int
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limiter: Limiter | None = None
    timeout_s: float | None = EVALUATOR_TIMEOUT_S
    executor: Executor | None = None
    owns_signals: bool = False
    cap: int | None = None
    per_second: float | None = None
    _slots: asyncio.Semaphore | AdaptiveSlots | None = field(default=None, init=False, repr=False)

    def slots(self) -> asyncio.Semaphore | AdaptiveSlots:
        if self._slots is None:  # made lazily, inside the running event loop
            self._slots = (
                asyncio.Semaphore(self.concurrency)
                if self.cap is None
                else AdaptiveSlots(self.concurrency, self.cap, per_second=self.per_second)
            )
        return self._slots

    def observe(self, seconds: float) -> None:
        """One evaluator attempt took ``seconds``: what an adaptive pool sizes itself by."""
        if isinstance(self._slots, AdaptiveSlots):
            self._slots.observe(seconds)


class EvaluatorTimeout(TimeoutError):
    """An evaluator call ran past ``evaluator_timeout_s``."""


def is_own(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is one of agenteval's evaluators (a built-in, a judge): trusted not to
    change its arguments nor to block the loop, so called as it is, without copies."""
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return isinstance(module, str) and module.startswith("agenteval_cli.")


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` only makes a coroutine (so it belongs in the event loop)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        type(fn).__call__  # a callable object's own method
    )


def _private(arguments: dict[str, Any]) -> dict[str, Any]:
    """The evaluator's own deep copy of the arguments it asks for, made in one go so that
    ``outputs`` and ``run.outputs`` stay one object: a pickle round trip (a third of
    ``deepcopy``'s time on a large trace), else ``deepcopy``, else the originals when they
    cannot be copied at all."""
    try:
        copied: dict[str, Any] = pickle.loads(pickle.dumps(arguments, pickle.HIGHEST_PROTOCOL))
        return copied
    except Exception:
        pass
    try:
        return copy.deepcopy(arguments)
    except Exception:
        return arguments


async def _invoke(
    fn: Callable[..., Any], arguments: dict[str, Any], pool: EvaluatorPool | None, own: bool
) -> Any:
    """``fn(**arguments)``, awaited when it returns an awaitable; a sync evaluator of the
    user's runs in a worker thread (its context copied, so judge usage still reaches this
    result). A ``KeyboardInterrupt`` raised there, never Ctrl-C, is raised here as
    :class:`_ThreadInterrupt`: an exception the evaluator's failure is recorded from."""
    if own or _is_async(fn):
        raw = fn(**arguments)
    else:
        context = contextvars.copy_context()

        def call() -> Any:
            try:
                return context.run(fn, **arguments)
            except KeyboardInterrupt as exc:  # never Ctrl-C: signals reach the main thread
                return _Raised(exc)

        executor = None if pool is None else pool.executor
        raw = await asyncio.get_running_loop().run_in_executor(executor, call)
        if isinstance(raw, _Raised):
            raise _ThreadInterrupt(raw.error)
    if inspect.isawaitable(raw):
        raw = await raw
    return raw


@dataclass
class _Raised:
    """What a worker thread hands back instead of raising a ``KeyboardInterrupt``, which
    asyncio would let out of the event loop."""

    error: BaseException


class _ThreadInterrupt(Exception):
    """A ``KeyboardInterrupt`` a sync evaluator raised in its worker thread."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _evaluators_own(exc: BaseException, owns_signals: bool = False) -> bool:
    """Whether ``exc`` is the evaluator's failure, to record as null scores: anything it
    raises (``SystemExit`` included) except the run cancelling the call, and Ctrl-C when
    the run leaves Ctrl-C to raise ``KeyboardInterrupt`` where the code runs."""
    if isinstance(exc, KeyboardInterrupt):
        return owns_signals
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is None or task.cancelling() == 0
    return True


async def call_evaluator(
    evaluator: BoundEvaluator, available: dict[str, Any], pool: EvaluatorPool | None = None
) -> list[Score]:
    """One evaluator on one result; raising or returning garbage becomes null scores.

    Under ``pool`` the call waits for one of its slots, and a failure of a kind its policy
    retries is called again (each attempt after the pool's rate limit)."""
    if runs_inline(evaluator, pool):
        now = called_inline(evaluator, available, pool)
        return now if isinstance(now, list) else await _awaited_inline(evaluator, now, pool)
    try:
        arguments = _arguments(evaluator, available)
        own = is_own(evaluator.fn)

        async def attempt() -> Any:
            started = time.perf_counter()
            try:
                return await bounded_call(evaluator.fn, arguments, pool, own)
            finally:
                if pool is not None:
                    pool.observe(time.perf_counter() - started)

        if pool is None:
            raw = await attempt()
        else:
            async with pool.slots():
                if pool.retry.max or pool.limiter is not None:
                    acquire = None if pool.limiter is None else pool.limiter.acquire
                    raw, _ = await call_with_retries(attempt, pool.retry, before_attempt=acquire)
                else:
                    raw = await attempt()
        return _scores_of(raw, evaluator)
    except BaseException as exc:
        return _failed(evaluator, exc, pool)


def called_inline(
    evaluator: BoundEvaluator,
    available: dict[str, Any],
    pool: EvaluatorPool | None,
    plan: Plan | None = None,
) -> list[Score] | Awaitable[Any]:
    """An evaluator that runs in the event loop (:func:`runs_inline`) called at once, with
    no coroutine of its own: its scores (null ones with the reason when it failed), or, from
    one that returned an awaitable after all, that awaitable (:func:`_awaited_inline`).
    ``plan``: its arguments' plan for ``available``, when the caller knows it."""
    try:
        if plan is None:
            raw = evaluator.fn(**_arguments(evaluator, available))
        else:
            raw = evaluator.fn(**planned_arguments(plan, available))
        if type(raw) is not dict and inspect.isawaitable(raw):  # a dict is the common answer
            return raw
        return _scores_of(raw, evaluator)
    except BaseException as exc:
        return _failed(evaluator, exc, pool)


async def _awaited_inline(
    evaluator: BoundEvaluator, raw: Awaitable[Any], pool: EvaluatorPool | None
) -> list[Score]:
    """What an in-loop evaluator returned to await: async work after all, held to the time
    limit."""
    try:
        return _scores_of(await _within_limit(raw, pool), evaluator)
    except BaseException as exc:
        return _failed(evaluator, exc, pool)


def _arguments(evaluator: BoundEvaluator, available: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``evaluator`` takes from ``available``."""
    names = tuple(available)
    # score() offers exactly KNOWN_PARAMETERS: the evaluator's plan for them is kept
    plan = evaluator.plan() if names == KNOWN_PARAMETERS else argument_plan(evaluator.fn, names)
    return planned_arguments(plan, available)


def _failed(
    evaluator: BoundEvaluator, exc: BaseException, pool: EvaluatorPool | None
) -> list[Score]:
    """The null scores of an evaluator that raised ``exc``; raises what is not its failure."""
    if not _evaluators_own(exc, pool is not None and pool.owns_signals):
        raise exc
    reason = f"evaluator {evaluator.name!r} failed: {failure_text(exc)}"
    return [Score(key, None, reason) for key in evaluator.keys or (evaluator.name,)]


def runs_inline(evaluator: BoundEvaluator, pool: EvaluatorPool | None) -> bool:
    """Whether ``evaluator`` is called as it is, in the event loop, outside ``pool``: one
    of agenteval's own sync evaluators (no I/O to wait on), which neither a time limit nor
    a slot could bound, since nothing else runs while it does; unless the pool retries
    failures or spaces its calls (``evaluator_retry``, ``evaluator_requests_per_minute``),
    which every evaluator call keeps to."""
    if pool is not None and (pool.retry.max or pool.limiter is not None):
        return False
    return evaluator.in_loop()


def _scores_of(raw: Any, evaluator: BoundEvaluator) -> list[Score]:
    """What an evaluator returned, as scores; saying nothing is its failure."""
    scores = normalize(raw, evaluator.name)
    if not scores:  # it said nothing: no pass, and its row would stay n/a in silence
        raise ValueError(
            f"it returned {raw!r}, no score; return a number, a bool or "
            "{'key', 'score', 'comment'}"
        )
    return scores


async def bounded_call(
    fn: Callable[..., Any], arguments: dict[str, Any], pool: EvaluatorPool | None, own: bool
) -> Any:
    """One attempt of ``fn(**arguments)`` under ``pool``'s time limit: on its own copy of
    the arguments unless ``own`` (agenteval's evaluator), so what an earlier attempt
    changed is not seen either, and a sync one in a worker thread."""
    given = arguments if own else _private(arguments)
    return await _within_limit(_invoke(fn, given, pool, own), pool)


async def _within_limit(call: Awaitable[Any], pool: EvaluatorPool | None) -> Any:
    """``await call`` within ``pool``'s time limit (``evaluator_timeout_s``), if any."""
    limit = None if pool is None else pool.timeout_s
    if limit is None:
        return await call
    try:
        async with asyncio.timeout(limit) as deadline:
            return await call
    except TimeoutError:
        if not deadline.expired():  # the evaluator's own TimeoutError
            raise
        raise EvaluatorTimeout(
            f"no result within {limit:g} s (evaluator_timeout_s); the call was abandoned"
        ) from None


def failure_text(exc: BaseException) -> str:
    """What an evaluator's failure is recorded as: ``"KeyError: 'x'"``."""
    return exception_text(exc.error if isinstance(exc, _ThreadInterrupt) else exc)


def evaluators_own(exc: BaseException, pool: EvaluatorPool | None) -> bool:
    """Whether ``exc``, raised by an evaluator called under ``pool``, is its failure."""
    return _evaluators_own(exc, pool is not None and pool.owns_signals)


class Scoring:
    """A run's evaluators as :func:`scoring` reads them for each result, worked out once:
    those that score every example (none sampled) and whether any takes the ``run`` view.
    The runner keeps one for the run, so a result pays for its evaluators' calls alone."""

    __slots__ = ("_every", "_wants_run", "evaluators", "inline", "pool")

    def __init__(self, evaluators: list[BoundEvaluator], pool: EvaluatorPool | None = None):
        self.evaluators, self.pool = evaluators, pool
        per_row = [e for e in evaluators if not e.summary and not reads_turns(e.fn)]
        sampled = any(e.example_ids is not None for e in per_row)
        self._every = None if sampled else per_row
        self._wants_run = None if sampled else any(e.wants_run() for e in per_row)
        # When every one of them runs in the loop (:func:`runs_inline`): each one's
        # arguments' plan, in their order; else None
        self.inline = None if sampled else _inline_plans(per_row, pool)

    def applying(self, example: Example) -> list[BoundEvaluator]:
        """The evaluators that score ``example`` (:func:`_applying`)."""
        every = self._every
        return _applying(self.evaluators, example) if every is None else every

    def wants_run(self, applying: list[BoundEvaluator]) -> bool:
        """Whether one of ``applying`` takes the ``run`` view."""
        wanted = self._wants_run
        return any(e.wants_run() for e in applying) if wanted is None else wanted


def _inline_plans(
    evaluators: list[BoundEvaluator], pool: EvaluatorPool | None
) -> list[Plan] | None:
    """The arguments' plan of each of ``evaluators`` when all run in the loop, else None."""
    if not all(runs_inline(evaluator, pool) for evaluator in evaluators):
        return None
    try:
        return [evaluator.plan() for evaluator in evaluators]
    except Exception:  # no signature to read: called as any, to say why it failed
        return None


async def score(
    evaluators: list[BoundEvaluator],
    example: Example,
    outputs: dict[str, Any],
    trace: Trace,
    pool: EvaluatorPool | None = None,
    *,
    interrupt: str | None = None,
) -> list[Score]:
    """Run every evaluator that applies to ``example``, concurrently (under ``pool``'s
    limits when given); one that fails yields null scores with the reason as their comment,
    and the others still run. Scores come in the evaluators' order.

    A result with no final answer (its target raised: ``trace.error``; or the graph stopped
    at ``interrupt()``: ``interrupt`` says what it waits for) is still measured from its
    trace, but every key declared to need an answer
    (:attr:`~agenteval_cli.metrics.registry.MetricInfo.needs_answer`) is null with the
    reason, and an evaluator all of whose keys need one is not called."""
    found = scoring(Scoring(evaluators, pool), example, outputs, trace, interrupt=interrupt)
    return found if isinstance(found, list) else await found


def scoring(
    plan: Scoring,
    example: Example,
    outputs: dict[str, Any],
    trace: Trace,
    *,
    interrupt: str | None = None,
) -> list[Score] | Coroutine[Any, Any, list[Score]]:
    """:func:`score` of ``plan``'s evaluators: the scores themselves when every evaluator
    that applies ran in the event loop (the common case, with no coroutine), else what is
    left of the scoring, to await."""
    unanswered = no_answer_reason(trace.error, interrupt)
    applying = plan.applying(example)
    available: dict[str, Any] = {
        "inputs": example.inputs,
        "outputs": outputs,
        "reference_outputs": example.outputs,
        "trace": trace,
        "run": _run_view(example, outputs, trace, interrupt) if plan.wants_run(applying) else None,
        "example": example,
    }
    skipped: list[Score] = []
    if unanswered is not None:
        skipped = [s for e in applying if not _measures_trace(e) for s in _null(e, unanswered)]
        applying = [e for e in applying if _measures_trace(e)]
    plans = plan.inline if unanswered is None else None  # else fewer evaluators apply
    spent: list[Any] = []
    if plans is not None:
        # agenteval's own sync evaluators: no judge (a judge waits on its model) reports
        # while they run; what one returned to await after all is awaited with a sink open
        each = _each(applying, available, plan.pool, plans)
    else:
        # What judges report while this result is scored. The tasks gather() starts copy
        # this context, so they report to this result's sink, and to no other result's.
        with collect_judge_usage(spent):
            each = _each(applying, available, plan.pool)
    if isinstance(each, list):
        return _gathered(applying, each, skipped, unanswered, spent)
    return _awaited(each, applying, skipped, unanswered, spent)


async def _awaited(
    each: Awaitable[list[list[Score]]],
    applying: list[BoundEvaluator],
    skipped: list[Score],
    unanswered: str | None,
    spent: list[Any],
) -> list[Score]:
    """:func:`scoring`'s evaluators that wait, awaited with the same judges' sink open."""
    with collect_judge_usage(spent):
        found = await each
    return _gathered(applying, found, skipped, unanswered, spent)


def _gathered(
    applying: list[BoundEvaluator],
    found: list[list[Score]],
    skipped: list[Score],
    unanswered: str | None,
    spent: list[Any],
) -> list[Score]:
    """Each evaluator's scores in their order, then the skipped ones and the judges' spend."""
    if unanswered is not None:
        found = [
            [_without_answer(evaluator, s, unanswered) for s in each]
            for evaluator, each in zip(applying, found, strict=True)
        ]
    if len(found) == 1 and not skipped:
        scores = found[0]  # a fresh list of the one evaluator's
    else:
        scores = [one for each in found for one in each] + skipped
    return scores + usage_scores(spent) if spent else scores


def _each(
    applying: list[BoundEvaluator],
    available: dict[str, Any],
    pool: EvaluatorPool | None,
    plans: list[Plan] | None = None,
) -> list[list[Score]] | Coroutine[Any, Any, list[list[Score]]]:
    """Each evaluator's scores, in their order: those called in the event loop as they are
    (:func:`runs_inline`) one after another, as they would run side by side all the same;
    the others side by side. When every one ran in the loop, the scores themselves (the
    common case, with no coroutine); else what is left, to await (:func:`_rest`).
    ``plans``: each one's arguments' plan, known to run in the loop (:attr:`Scoring.inline`)."""
    found: list[list[Score]] = [[] for _ in applying]
    for position, evaluator in enumerate(applying):
        if plans is None and not runs_inline(evaluator, pool):
            return _rest(applying, available, pool, found, position, None)
        now = called_inline(evaluator, available, pool, None if plans is None else plans[position])
        if not isinstance(now, list):
            return _rest(applying, available, pool, found, position, now)
        found[position] = now
    return found


async def _rest(
    applying: list[BoundEvaluator],
    available: dict[str, Any],
    pool: EvaluatorPool | None,
    found: list[list[Score]],
    start: int,
    awaited: Awaitable[Any] | None,
) -> list[list[Score]]:
    """:func:`_each` from position ``start`` on (``awaited``: what the in-loop evaluator
    there returned to await)."""
    apart: list[int] = []  # the positions of those that wait on something
    for position in range(start, len(applying)):
        evaluator = applying[position]
        if not runs_inline(evaluator, pool):
            apart.append(position)
            continue
        now = called_inline(evaluator, available, pool) if awaited is None else awaited
        awaited = None
        found[position] = (
            now if isinstance(now, list) else await _awaited_inline(evaluator, now, pool)
        )
    if len(apart) == 1:
        found[apart[0]] = await call_evaluator(applying[apart[0]], available, pool)
    elif apart:
        calls = [call_evaluator(applying[position], available, pool) for position in apart]
        for position, scores in zip(apart, await asyncio.gather(*calls), strict=True):
            found[position] = scores
    return found


def _keys(evaluator: BoundEvaluator) -> tuple[str, ...]:
    return evaluator.keys or (evaluator.name,)


def _measures_trace(evaluator: BoundEvaluator) -> bool:
    """Whether one of the evaluator's keys is read from the trace alone (needs no answer)."""
    return any(not evaluator.needs_answer(key) for key in _keys(evaluator))


NEEDS_ANSWER = "the metric needs a final answer"


def _null(evaluator: BoundEvaluator, reason: str) -> list[Score]:
    return [Score(key, None, f"{reason}; {NEEDS_ANSWER}") for key in _keys(evaluator)]


def _without_answer(evaluator: BoundEvaluator, found: Score, reason: str) -> Score:
    """A score of a result with no answer: kept when its key is the trace's, else null."""
    if not evaluator.needs_answer(found.key):
        return found
    return Score(found.key, None, f"{reason}; {NEEDS_ANSWER}")


def _applying(evaluators: list[BoundEvaluator], example: Example) -> list[BoundEvaluator]:
    """The evaluators that score ``example``: a summary runs once per target, a sampled
    evaluator only on its sample; the conversation evaluator never here (a conversation's
    scoring calls it once the turns are scored: :mod:`~agenteval_cli.evaluators.conversation`)."""
    return [
        evaluator
        for evaluator in evaluators
        if not evaluator.summary
        and not reads_turns(evaluator.fn)
        and (evaluator.example_ids is None or example.id in evaluator.example_ids)
    ]


# What the conversation evaluator's function is marked with: it reads a conversation's turns.
READS_TURNS = "reads_turns"


def reads_turns(fn: Any) -> bool:
    """Whether ``fn`` is the conversation evaluator, scored once per conversation row."""
    return bool(getattr(fn, READS_TURNS, False))


def unscored(evaluators: list[BoundEvaluator], example: Example, reason: str) -> list[Score]:
    """The null scores, with ``reason`` as their comment, of a result that was not scored."""
    return [
        Score(key, None, reason)
        for evaluator in _applying(evaluators, example)
        for key in evaluator.keys or (evaluator.name,)
    ]


def _run_view(
    example: Example, outputs: dict[str, Any], trace: Trace, interrupt: str | None = None
) -> Run:
    """The ``run`` argument of LangSmith-style evaluators: what the target did, as the
    read model every report uses (``run.id``, ``inputs``, ``outputs``, ``trace``, ``error``,
    ``status``)."""
    result = Result(example.id, 0, outputs, trace, error=trace.error, latency_s=trace.latency_s)
    result.interrupt = interrupt
    return Run.from_result(result, example.inputs, example.outputs, keep_trace=True)
