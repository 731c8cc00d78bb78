"""Running a spec: load the dataset, targets and evaluators, create one experiment per
target in the store, run them side by side and persist every result as it finishes."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Result
from agenteval_cli.core.retry import RetryPolicy
from agenteval_cli.data.conversations import TURNS, is_conversation, turn_inputs
from agenteval_cli.evaluators.blame import blame
from agenteval_cli.evaluators.loading import catalog_of
from agenteval_cli.evaluators.reference_fields import Reads, reference_warnings, spec_reads
from agenteval_cli.evaluators.scoring import BoundEvaluator, EvaluatorPool
from agenteval_cli.execution.cache import (
    ResponseCache,
    absolute_import_path,
    target_identity,
    target_options,
)
from agenteval_cli.execution.faults_seen import FaultsSeen
from agenteval_cli.execution.guards.daemon_pool import DaemonThreadPool
from agenteval_cli.execution.guards.heap import heap_frozen
from agenteval_cli.execution.guards.leftovers import run_loop
from agenteval_cli.execution.loading import load_evaluators, load_simulated_user, load_targets
from agenteval_cli.execution.names import (
    NameCheck,
    RowNotes,
    annotate_stored,
    check_after_run,
    check_before_run,
)
from agenteval_cli.execution.observed import Observed
from agenteval_cli.execution.one_agent import mark_one_agent_experiments
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.execution.twins import twin_experiments
from agenteval_cli.langsmith.offline import no_langsmith_tracing
from agenteval_cli.metrics.prices import rates
from agenteval_cli.spec.model import Executor, Spec
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.results import encode, unstorable
from agenteval_cli.targets import Target
from agenteval_cli.targets.inputs import cannot_take, cannot_take_hint, uncovered_fields
from agenteval_cli.targets.names import SystemNames

if TYPE_CHECKING:
    from agenteval_cli.execution.fingerprint import Fingerprint
    from agenteval_cli.execution.options import RunOptions
    from agenteval_cli.execution.ray_executor.cluster import RayOptions
    from agenteval_cli.execution.ray_executor.driver import RayEngine
    from agenteval_cli.targets.users import SimulatedUser

ProgressHook = Callable[[str, Result], None]
NoteHook = Callable[[str], None]  # one line of information: the caller decides where it goes
Status = Literal["finished", "interrupted"]  # how a run ends; "running" while it goes on
FINISHED: Status = "finished"
INTERRUPTED: Status = "interrupted"


@dataclass
class PreparedRun:
    spec: Spec
    examples: Sequence[Example]
    targets: list[Target]
    evaluators: list[BoundEvaluator]
    experiments: dict[str, ExperimentRecord] = field(default_factory=dict)
    use_cache: bool = False
    # Set by a resume: (example id, repetition) -> ended in error, per target name; those
    # pairs are skipped (or, with ``retry_errors``, the errored ones are run again).
    done: dict[str, dict[tuple[str, int], bool]] | None = None
    retry_errors: bool = False
    warnings: list[str] = field(default_factory=list)  # set by execute(): targets that blocked
    keep_run_trees: bool = False  # each call's run tree is kept for a LangSmith upload
    notes: NoteHook | None = None  # where the run's notes go (the dataset file grew)
    shard: tuple[int, int] | None = None  # (i, N) of a --shard run: only shard i's examples
    dataset_examples: int | None = None  # a shard's whole dataset (before the split)
    ray: RayOptions | None = None  # set when the calls run on Ray workers (executor: ray)
    users: SimulatedUser | None = None  # the spec's simulated_user:, loaded
    # target -> example id -> what its scores' comments add, by turn: the names the row
    # gives that the target has not (agenteval_cli.execution.names)
    name_notes: dict[str, dict[str, RowNotes]] = field(default_factory=dict)
    # the lines of those names (also among ``warnings``): before the run, then after it
    # for targets whose names only their traces show
    name_warnings: list[str] = field(default_factory=list)
    names: NameCheck | None = None  # what was checked before the run
    _fingerprints: dict[str, Fingerprint] = field(default_factory=dict, repr=False)

    @property
    def total_per_target(self) -> int:
        return len(self.examples) * self.spec.repetitions

    def fingerprint(self, target: str) -> Fingerprint:
        """What ``target``'s answers depend on now (its project files, its ``cache_env``),
        taken once per run: kept with its experiment and in its cache entries."""
        taken = self._fingerprints.get(target)
        if taken is None:
            from agenteval_cli.execution import fingerprint

            declared = next(t for t in self.spec.targets if t.name == target)
            # a served graph's code is the server's: only its cache_env is known here
            taken = fingerprint.take(declared.target, self.spec.base_dir, declared.cache_env)
            self._fingerprints[target] = taken
        return taken


def prepare(
    spec: Spec,
    options: RunOptions | None = None,
    *,
    store: Store | None = None,
    on_note: NoteHook | None = None,
) -> PreparedRun:
    """Everything that can fail on bad input fails here, before any target is called.

    ``store`` caches the examples of a LangSmith dataset (``dataset: {langsmith: ...}``);
    ``on_note`` gets the notes of the preparation and of the run. Of the ``options``:
    ``cache`` and ``upload`` override the spec's when not None; ``shard`` ``(i, N)`` keeps
    only the examples of shard i (:func:`agenteval_cli.data.examples.shard_of`), of the
    first ``limit``; ``executor`` (the spec's unless given) ``"ray"`` runs the calls on Ray
    workers, at ``ray_address`` (the spec's ``ray.address`` unless given)."""
    from agenteval_cli.data.examples import open_examples, shard_examples

    options = options or {}
    limit, shard = options.get("limit"), options.get("shard")
    cache, upload = options.get("cache"), options.get("upload")
    examples: Sequence[Example]
    if spec.dataset.langsmith is not None:
        examples = _langsmith_examples(spec, store, on_note)
        if limit is not None:
            examples = examples[:limit]
    elif spec.dataset.path is None:
        raise UserError("the dataset has no 'path'", file=spec.source, line=spec.line_of("dataset"))
    else:  # a .jsonl or .csv file is checked now and read again as the run goes
        examples = open_examples(spec.dataset.path, limit)
    dataset_examples = None
    if shard is not None:
        dataset_examples = len(examples)
        examples = shard_examples(examples, shard)
    only = options.get("targets")
    targets = load_targets(spec, list(only) if only else None)
    check_target_inputs(spec, targets, examples)
    names = check_before_run(targets, examples, _dataset_source(spec))
    strict = options.get("strict")
    if (spec.strict_names if strict is None else strict) and (refusal := names.refusal()):
        raise refusal
    for warning in names.lines():
        if on_note is not None:
            on_note(warning)
    for target in targets:
        if target.no_answer is not None and on_note is not None:
            line = spec.line_of("targets", target.name)
            on_note(f"{spec.source}:{line}: target {target.name!r}: {target.no_answer}")
    if not spec.evaluators and on_note is not None:
        on_note(
            f"{spec.source}: no evaluators: only error rate and latency are measured "
            "(name some under 'evaluators:', see 'agenteval evaluators list')"
        )
    ray = _ray_options(spec, options.get("executor"), options.get("ray_address"))
    keep_run_trees = bool(spec.upload) if upload is None else upload
    skipped: list[str] = []  # the report's warnings: the library prints nothing
    evaluators = load_evaluators(spec, examples, warn=skipped.append)
    reads = _reads(spec, evaluators)
    return PreparedRun(
        spec=spec,
        examples=examples,
        targets=targets,
        evaluators=evaluators,
        users=load_simulated_user(spec),
        warnings=skipped
        + reference_warnings(reads, examples, _dataset_source(spec))
        + names.lines(),
        name_notes=names.notes(keys_reading(reads, evaluators)),
        name_warnings=names.lines(),
        names=names,
        use_cache=bool(getattr(spec, "cache", False)) if cache is None else cache,
        keep_run_trees=keep_run_trees,
        notes=on_note,
        shard=shard,
        dataset_examples=dataset_examples,
        ray=ray,
    )


def reference_field_warnings(
    spec: Spec,
    evaluators: Sequence[BoundEvaluator],
    examples: Sequence[Example],
    *,
    source: str | None = None,
) -> list[str]:
    """A line for an evaluator whose reference field no row has while rows have one no
    evaluator reads (a misspelt ``expected_agent`` would score 100% routing accuracy)."""
    return reference_warnings(_reads(spec, evaluators), examples, source or _dataset_source(spec))


def _dataset_source(spec: Spec) -> str:
    """Where the rows come from, as a warning names it."""
    return str(spec.dataset.path or spec.source)


def _reads(spec: Spec, evaluators: Sequence[BoundEvaluator]) -> list[Reads]:
    """What each of the spec's evaluators reads of the references."""
    functions = {e.name: e.fn for e in evaluators}
    return spec_reads([i for i in spec.evaluators if i.name in functions], functions)


def keys_reading(
    reads: Sequence[Reads], evaluators: Sequence[BoundEvaluator]
) -> dict[str, list[str]]:
    """reference field -> the score keys of the evaluators that read it."""
    keys = {e.name: e.keys or (e.name,) for e in evaluators}
    found: dict[str, list[str]] = {}
    for read in reads:
        for name in (*read.needed, *read.optional):
            found.setdefault(name, []).extend(keys.get(read.name, ()))
    return found


def _ray_options(spec: Spec, executor: Executor | None, address: str | None) -> RayOptions | None:
    """The Ray settings when the run is on Ray (checked installed, not imported), else None."""
    if (executor or ("ray" if address else spec.executor)) != "ray":
        return None
    from agenteval_cli.execution.ray_executor.cluster import RayOptions, check

    options = RayOptions.of(spec, address)
    check(spec, options)
    return options


CHECKED_ROWS = 8192  # rows whose input fields are checked before the run (a large file: its first)


def check_target_inputs(spec: Spec, targets: Sequence[Target], examples: Sequence[Example]) -> None:
    """A UserError at the target's line when an example lacks an input field the target
    reads on every call: each such call would only fail. A conversation row is called turn
    by turn, so its turns' inputs are checked, and a target reading ``{turns}`` is refused."""
    from itertools import islice

    if not any(
        target.input_fields or target.passes_through or target.config_fields for target in targets
    ):
        return  # functions read what they like: nothing to check, nothing to read again
    rows = list(islice(examples, CHECKED_ROWS))
    simulated = spec.simulated_user is not None
    for target in targets:
        _check_config_fields(spec, target, rows)
        calls = list(_calls(rows, target.input_key, simulated=simulated))
        if TURNS in target.input_fields and any(turn for _, turn, _ in calls):
            _refuse_whole_conversations(spec, target)
        if target.passes_through:
            _check_passed_through(spec, target, calls)
        for name in target.input_fields:
            lacking = [call for call in calls if name not in call[2]]
            if not lacking:
                continue
            first, turn, inputs = lacking[0]
            fields = ", ".join(str(k) for k in inputs) or "none"
            missing = {id(example) for example, _, _ in lacking}
            some = "every example" if len(missing) == len(rows) else f"{len(missing):,} example(s)"
            raise UserError(
                f"target {target.name!r} reads inputs.{name}, which {some} of the dataset "
                f"lack ({_where(first, turn)} has: {fields})",
                file=spec.source,
                line=spec.line_of("targets", target.name),
                hint="set input_key to a field the rows have, or map the fields with input:",
            )


def _check_config_fields(spec: Spec, target: Target, rows: Sequence[Example]) -> None:
    """A UserError naming the first row that lacks a field the target's ``config:`` fills a
    placeholder from: its every call would only fail."""
    from agenteval_cli.targets.configs import row_fields

    if not target.config_fields:
        return
    for example in rows:
        fields = row_fields(example, input_key=target.input_key)
        lacking = [name for name in target.config_fields if name not in fields]
        if not lacking:
            continue
        turn = 1 if is_conversation(example) else None
        has = ", ".join(str(k) for k in fields) or "none"
        raise UserError(
            f"target {target.name!r} config: fills {{{lacking[0]}}} from the row, which "
            f"{_where(example, turn)} lacks (it has: {has})",
            file=spec.source,
            line=spec.line_of("targets", target.name, "config"),
            hint=f"give every row inputs.{lacking[0]}, or take the placeholder out of config:",
        )


Call = tuple[Example, int | None, dict[str, Any]]  # an example, its turn (1-based), the inputs


def _calls(rows: Sequence[Example], input_key: str, *, simulated: bool = False) -> Iterator[Call]:
    """The inputs of each call the rows make: a single-turn row's inputs, or each turn of a
    conversation (a resume turn sends no fields: nothing to check). The turns a simulated
    user writes are not known before the run: such rows are not checked."""
    for example in rows:
        if not is_conversation(example):
            if not simulated:
                yield example, None, example.inputs
            continue
        for number, turn in enumerate(turn_inputs(example, input_key=input_key), 1):
            if isinstance(turn, dict):
                yield example, number, turn


def _where(example: Example, turn: int | None) -> str:
    where = f"row {example.row}" if example.row is not None else f"example {example.id!r}"
    return where if turn is None else f"{where} turn {turn}"


def _refuse_whole_conversations(spec: Spec, target: Target) -> None:
    """``{turns}`` would send every turn of a conversation in one call, which answers only
    the first: the runner drives a conversation turn by turn instead."""
    raise UserError(
        f"target {target.name!r} reads inputs.{TURNS}, which would send every turn of a "
        "conversation in one call (only the first would be answered)",
        file=spec.source,
        line=spec.line_of("targets", target.name, "input"),
        hint="conversation rows are driven turn by turn: map a turn's field instead, such as "
        '"{question}"',
    )


def _check_passed_through(spec: Spec, target: Target, calls: Sequence[Call]) -> None:
    """A graph given the inputs as they are must take every field of every call's inputs."""
    keys = target.passes_through
    for example, turn, inputs in calls:
        fields = uncovered_fields(inputs, keys)
        if not fields:
            continue
        raise UserError(
            f"target {target.name!r} gets each example's inputs as they are, and "
            + cannot_take(fields, keys, f" of {_where(example, turn)}"),
            file=spec.source,
            line=spec.line_of("targets", target.name),
            hint=cannot_take_hint(list(inputs), keys, target.input_key),
        )


def _langsmith_examples(spec: Spec, store: Store | None, on_note: NoteHook | None) -> list[Example]:
    from agenteval_cli.langsmith.remote import load_langsmith_examples

    if store is None:
        raise UserError(
            "a LangSmith dataset needs the experiment store for its offline copy",
            file=spec.source,
            line=spec.line_of("dataset"),
        )
    return load_langsmith_examples(
        spec.dataset.langsmith or "",
        store,
        version=spec.dataset.version,
        splits=spec.dataset.splits,
        say=(lambda text: None) if on_note is None else on_note,
    )


def git_commit(directory: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def start_experiments(run: PreparedRun, store: Store) -> None:
    from agenteval_cli.data.examples import dataset_hash

    spec = run.spec
    data_hash = dataset_hash(spec.dataset.path) if spec.dataset.path else None
    commit = git_commit(spec.base_dir)
    run_id = uuid.uuid4().hex
    for target in run.targets:
        run.experiments[target.name] = store.create_experiment(
            prefix=spec.experiment_prefix,
            target=target.name,
            target_path=target.import_path,
            spec=spec.raw,
            spec_path=str(spec.source),
            spec_hash=spec.content_hash,
            dataset_path=str(spec.dataset.path) if spec.dataset.path else None,
            dataset_name=spec.dataset.name,
            dataset_hash=data_hash,
            git_commit=commit,
            repetitions=spec.repetitions,
            example_count=len(run.examples),
            run_id=run_id,
            shard=run.shard,
            dataset_examples=run.dataset_examples,
            target_fingerprint=run.fingerprint(target.name).to_json(),
            catalog=catalog_of(run.evaluators),
        )


def run_settings(spec: Spec) -> RunSettings:
    """The runner's settings from the spec: the targets' retries and rate limit, and the
    evaluators' pool (``evaluator_concurrency``, ``evaluator_retries``,
    ``evaluator_rate_limit``, ``evaluator_timeout_s``) apart from them."""
    settings = RunSettings(
        concurrency=spec.concurrency, timeout_s=spec.timeout_s, repetitions=spec.repetitions
    )
    settings.retry = _retry_policy(getattr(spec, "retries", None)) or settings.retry
    settings.requests_per_minute = _per_minute(getattr(spec, "rate_limit", None))
    settings.evaluator_concurrency = getattr(spec, "evaluator_concurrency", None)
    settings.evaluator_retry = (
        _retry_policy(getattr(spec, "evaluator_retries", None)) or settings.evaluator_retry
    )
    settings.evaluator_requests_per_minute = _per_minute(
        getattr(spec, "evaluator_rate_limit", None)
    )
    settings.evaluator_timeout_s = getattr(
        spec, "evaluator_timeout_s", settings.evaluator_timeout_s
    )
    pricing = getattr(spec, "pricing", None) or {}
    settings.pricing = {model: rates(entry) for model, entry in pricing.items()}
    return settings


def _retry_policy(retries: Any) -> RetryPolicy | None:
    """A spec's ``retries:``-shaped section as the runner's policy; None without one."""
    if retries is None:
        return None
    return RetryPolicy(
        max=retries.max,
        backoff=retries.backoff,
        on=tuple(retries.on),
        base_s=retries.initial_delay_s,
        max_s=retries.max_delay_s,
    )


def _per_minute(rate_limit: Any) -> float | None:
    return None if rate_limit is None else rate_limit.requests_per_minute


def make_runner(run: PreparedRun, store: Store) -> Runner:
    runner = Runner(
        targets=run.targets,
        evaluators=run.evaluators,
        settings=run_settings(run.spec),
        users=run.users,
        name_notes=run.name_notes,
    )
    if run.use_cache:
        runner.cache = ResponseCache(store)
        for target in run.spec.targets:
            path = (
                absolute_import_path(target.target, run.spec.base_dir)
                if target.target is not None
                else target.described
            )
            runner.cache_paths[target.name] = path
            taken = run.fingerprint(target.name)
            runner.cache_fingerprints[target.name] = taken.to_json()
            runner.identities[target.name] = target_identity(
                path,
                target.input_key,
                target.initial_state,
                fingerprint=taken.digest(),
                **target_options(target, run.spec.base_dir),
            )
    return runner


def pending_items(run: PreparedRun, runner: Runner) -> Iterator[WorkItem]:
    """Every work item of the run, less the pairs a resumed run already has."""
    if run.done is None:
        return runner.work(run.examples)
    return _not_done(run, runner)


def _not_done(run: PreparedRun, runner: Runner) -> Iterator[WorkItem]:
    """A resumed run's items: those it has not stored, and the errored ones it retries."""
    assert run.done is not None
    for item in runner.work(run.examples):
        errored = run.done.get(item.target.name, {}).get((item.example.id, item.repetition))
        if errored is None:
            yield item
        elif errored and run.retry_errors:
            item.replace = True
            yield item


def execute(
    run: PreparedRun,
    store: Store,
    on_result: ProgressHook | None = None,
    on_forced_exit: Callable[[str], None] | None = None,
) -> Status:
    """Run every target in an event loop of its own; the status the experiments end with.

    Ctrl-C (or SIGTERM) stops dispatching and lets calls in flight finish for a few seconds;
    what finished is saved and the run ends ``"interrupted"``. A run that does not stop by
    then is ended by force (agenteval_cli.execution.guards.watchdog): what finished is saved,
    ``on_forced_exit(reason)`` reports it, and the process exits with 130."""
    execution = Execution(run, store, on_result, on_forced_exit)
    completed = False
    try:
        completed = run_loop(execution.main(handle_signals=True), execution.abandoned)
    except KeyboardInterrupt:  # Ctrl-C outside the run's own handling: stopped all the same
        pass
    finally:
        status = execution.close(completed)
    return execution.conclude(status)


async def execute_async(
    run: PreparedRun,
    store: Store,
    on_result: ProgressHook | None = None,
    *,
    handle_signals: bool = False,
    on_forced_exit: Callable[[str], None] | None = None,
) -> Status:
    """:func:`execute` in the running event loop (a notebook's, an application's). The
    process's signals are left alone unless ``handle_signals``: they are not the run's."""
    execution = Execution(run, store, on_result, on_forced_exit)
    completed = False
    try:
        completed = await execution.main(handle_signals=handle_signals)
    finally:
        status = execution.close(completed)
    status = execution.conclude(status, summaries=False)
    if status == FINISHED:  # the dataset-level evaluators, in this loop too
        await score_summaries_async(run, store)
    return status


class Execution:
    """One run of a prepared spec: results persisted as they finish, the experiments'
    status set however the run ends. An ``on_result`` that raises KeyboardInterrupt stops
    the run as Ctrl-C does: nothing new starts, the calls in flight finish and are kept."""

    def __init__(
        self,
        run: PreparedRun,
        store: Store,
        on_result: ProgressHook | None = None,
        on_forced_exit: Callable[[str], None] | None = None,
    ) -> None:
        if not run.experiments:
            start_experiments(run, store)
        self.run, self.store = run, store
        self.on_result, self.on_forced_exit = on_result, on_forced_exit
        self.runner = make_runner(run, store)
        self.engine: Runner | RayEngine = self.runner
        if run.ray is not None:  # the calls on Ray workers; this process keeps the store
            from agenteval_cli.execution.ray_executor.driver import RayEngine, make_job

            job = make_job(run.spec, self.runner, run.evaluators, keep_run_trees=run.keep_run_trees)
            on_tree = _tree_keeper(run, store) if run.keep_run_trees else None
            self.engine = RayEngine(self.runner, job, run.ray, note=run.notes, on_tree=on_tree)
        self.engine.on_forced_exit = self._forced
        self.writer = store.writer(run=True)
        self.changed: list[UserError] = []  # the dataset's rows changed under the run
        self.faults_seen = FaultsSeen(run.targets)  # whether the targets' faults failed calls
        self.pass_marks = catalog_of(run.evaluators).pass_marks()  # what a failed check is
        self._observed = Observed(run.experiments)  # what the stored results show

    def abandoned(self) -> Sequence[asyncio.Task[Any]]:
        return self.engine.abandoned

    async def main(self, *, handle_signals: bool) -> bool:
        """True when every pending item ran, False when the run was stopped early."""
        items = _until_dataset_changes(pending_items(self.run, self.runner), self.changed)
        if self.run.keep_run_trees and self.run.ray is None:
            # keep each call's run tree for the upload (child runs); on Ray the workers
            # record them and the engine hands them to _tree_keeper
            items = _with_run_trees(self.run, self.store, items)
        with no_langsmith_tracing(), heap_frozen():  # a local run never reaches LangSmith
            try:
                return await self.engine.run(items, self._persist, handle_signals=handle_signals)
            finally:
                self.writer.flush()  # what finished is committed, however the run ended

    def close(self, completed: bool) -> Status:
        """Commit what is left and mark every experiment finished or interrupted; in a
        finished run, the rows of a target that showed one agent against references naming
        others are marked unmeasured (:mod:`agenteval_cli.execution.one_agent`)."""
        status = FINISHED if completed and not self.changed else INTERRUPTED
        try:
            self.writer.close()
        finally:
            self.run.warnings += self.engine.stall_warnings() + self.engine.abandoned_warnings()
            for experiment in self.run.experiments.values():
                self.store.finish_experiment(experiment.id, status)
        if status == FINISHED:
            observed = self.observed()
            experiments = list(self.run.experiments.values())
            self.run.warnings += mark_one_agent_experiments(
                experiments,
                self.run.evaluators,
                self.store,
                lambda experiment: observed.one_agent(experiment.target),
            )
        return status

    def observed(self) -> Observed:
        """What the run's results show: as they were stored, or (a resumed run, whose
        earlier results only the store holds) read back from it."""
        if self.run.done is not None and any(self.run.done.values()):
            return Observed.stored(self.run.experiments, self.store)
        return self._observed

    def conclude(self, status: Status, *, summaries: bool = True) -> Status:
        """After a run, its notes (cached answers called again; after a finished run, the
        dataset file grown) and (unless the caller scores them in its own loop) a finished
        run's dataset-level scores; a changed dataset is the run's error (the calls in
        flight finished and are kept; it can be resumed)."""
        if self.changed:
            raise self.changed[0]
        notes = [_changed_reads_note(self.runner), *self.faults_seen.notes(self.run.spec)]
        if status == FINISHED:
            notes.append(_grown_note(self.run.examples))
        for note in notes:
            if note is not None and self.run.notes is not None:
                self.run.notes(note)
        if status == FINISHED:
            names_after_run(self.run, self.store, self.observed().names)
            if summaries:
                score_summaries(self.run, self.store)
        return status

    def _forced(self, reason: str) -> None:
        self.writer.flush()
        for experiment in self.run.experiments.values():
            self.store.finish_experiment(experiment.id, INTERRUPTED)
        self.run.warnings += self.engine.stall_warnings()
        if self.on_forced_exit is not None:
            self.on_forced_exit(reason)

    def _persist(self, item: WorkItem, result: Result) -> None:
        run, runner, writer = self.run, self.runner, self.writer
        experiment_id = run.experiments[item.target.name].id
        cache_key = None if result.cached else item.cache_key
        fingerprint_json = runner.cache_fingerprints.get(item.target.name)
        if result.env_reads:  # the variables the call read, kept with its cache entry
            from agenteval_cli.execution.cache import entry_fingerprint

            fingerprint_json = entry_fingerprint(fingerprint_json, result.env_reads)
        result.blame = blame(result, item.example.outputs, pass_marks=self.pass_marks)
        try:
            encoded = encode(
                experiment_id,
                item.example,
                result,
                replace=item.replace,
                cache_key=cache_key,
                target_path=runner.cache_paths.get(item.target.name, item.target.import_path),
                fingerprint_json=fingerprint_json,
                texts=writer.texts(),
            )
        except Exception as exc:  # outputs (or a trace) JSON cannot hold: this example's error
            encoded = encode(
                experiment_id, item.example, unstorable(result, exc), replace=item.replace
            )
        writer.add(encoded)
        self.faults_seen.saw(item.target.name, result)
        self._observed.saw(item.target.name, item.example.outputs, result)
        if self.on_result is not None:
            try:
                self.on_result(item.target.name, result)
            except KeyboardInterrupt:  # the caller's way to stop the run
                self.engine.stop()


def _until_dataset_changes(items: Iterator[WorkItem], changed: list[UserError]) -> Iterator:
    """``items``, ending early (no new call starts, the calls in flight finish and are
    kept) when the dataset's rows changed after they were checked, or the file can no longer
    be read (removed, say); the error is kept in ``changed`` for the run to report."""
    try:
        yield from items
    except UserError as exc:  # reading the examples is all that raises it here
        changed.append(exc)


def _changed_reads_note(runner: Runner) -> str | None:
    if runner.cache is None:
        return None
    from agenteval_cli.execution.cache import changed_note

    return changed_note(runner.cache)


def names_after_run(run: PreparedRun, store: Store, seen_by: Callable[[str], SystemNames]) -> None:
    """The run's name warnings, once its traces are in (``seen_by(target)``: what they
    show): a name no trace of a target shows where its graph could not tell its names
    before the run (a function, a Runnable) is warned of; one said unknown before the run
    that the traces show is not, and the run says so."""
    before = run.names or NameCheck(_dataset_source(run.spec))
    after = check_after_run(run.targets, run.examples, seen_by, before)
    withdrawn = {u.line(before.source) for u in after.shown}
    lines = [u.after_all(before.source) for u in after.shown] + after.unknown.lines()
    run.warnings = [w for w in run.warnings if w not in withdrawn] + lines
    run.name_warnings = [w for w in run.name_warnings if w not in withdrawn] + lines
    if after.unknown.unknowns:
        reading = keys_reading(_reads(run.spec, run.evaluators), run.evaluators)
        annotate_stored(after.unknown, reading, run.experiments, store)


def _grown_note(examples: Sequence[Example]) -> str | None:
    """A note when the dataset file changed during the run without changing its rows (lines
    appended): the run used the rows it checked."""
    from agenteval_cli.data.examples import StreamedExamples

    if isinstance(examples, StreamedExamples) and examples.changed():
        return (
            f"{examples.path}: the dataset file changed during the run; "
            f"the run used the {len(examples):,} examples it had when it started"
        )
    return None


def _with_run_trees(run: PreparedRun, store: Store, items: Iterator[WorkItem]) -> Iterator:
    from agenteval_cli.langsmith.capture import wrap_items
    from agenteval_cli.store.langsmith_state import LangSmithState

    state = LangSmithState.of(store)
    ids = {name: e.id for name, e in run.experiments.items()}
    return wrap_items(items, ids, state.save_tree)


def _tree_keeper(run: PreparedRun, store: Store) -> Callable[[WorkItem, list[Any]], None]:
    """Where a run tree recorded on a Ray worker is stored: as in-process, under its
    (experiment, example, repetition)."""
    from agenteval_cli.store.langsmith_state import LangSmithState

    state = LangSmithState.of(store)

    def keep(item: WorkItem, runs: list[Any]) -> None:
        experiment_id = run.experiments[item.target.name].id
        state.save_tree(experiment_id, item.example.id, item.repetition, runs)

    return keep


def score_summaries(run: PreparedRun, store: Store) -> None:
    """Dataset-level evaluators: once per target, over every result the store holds for it,
    each call within ``evaluator_timeout_s``; a faulted target's paired with its fault-free
    twin's."""
    score_stored_summaries(run.spec, run.evaluators, store, list(run.experiments.values()))


def score_stored_summaries(
    spec: Spec,
    evaluators: Sequence[BoundEvaluator],
    store: Store,
    experiments: Sequence[ExperimentRecord],
    stored: Sequence[ExperimentRecord] = (),
) -> None:
    """The dataset-level evaluators of experiments already stored (a run's, a merge's, a
    session's combined, an import's), under the spec's limits (:func:`summary_pool`); a
    faulted target's experiment paired with its fault-free twin's among ``experiments``,
    else among ``stored`` (an earlier import's)."""
    from agenteval_cli.evaluators.summaries import score_experiment_summaries

    if not any(e.summary for e in evaluators):
        return
    ids = [e.id for e in experiments]
    twins = twin_experiments(spec, {e.target: e for e in [*stored, *experiments]})
    with summary_pool(spec) as pool:
        score_experiment_summaries(evaluators, store, ids, pool, twins)


async def score_summaries_async(run: PreparedRun, store: Store) -> None:
    """:func:`score_summaries` in the running event loop."""
    from agenteval_cli.evaluators.summaries import score_experiment_summaries_async

    ids = [e.id for e in run.experiments.values()]
    twins = twin_experiments(run.spec, run.experiments)
    with summary_pool(run.spec) as pool:
        await score_experiment_summaries_async(run.evaluators, store, ids, pool, twins)


@contextlib.contextmanager
def summary_pool(spec: Spec) -> Iterator[EvaluatorPool]:
    """The summary evaluators' limits: the spec's ``evaluator_timeout_s``, a sync one in a
    daemon thread (one stuck past its limit does not hold the process at exit)."""
    settings = run_settings(spec)
    threads = DaemonThreadPool("agenteval-summary", max_threads=settings.evaluator_slots())
    try:
        yield EvaluatorPool(1, timeout_s=settings.evaluator_timeout_s, executor=threads)
    finally:
        threads.shutdown(wait=False)
