"""Running a spec from Python: :func:`run` and :func:`arun` return a :class:`RunReport`.

The library prints nothing: progress goes to ``on_result``, the run's start to
``on_start``, notes to ``on_note``, and the warnings come back in the report. A stopped
run (Ctrl-C, SIGTERM, or an ``on_result`` that raises KeyboardInterrupt) returns with
``status == "interrupted"``; its results are kept and it can be resumed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from agenteval_cli.core.envfiles import loaded_env
from agenteval_cli.core.pinned import pinned_process
from agenteval_cli.execution.options import RunOptions, resumes
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.core.records import Result
    from agenteval_cli.execution.experiment import PreparedRun, Status
    from agenteval_cli.metrics.summary import Summary
    from agenteval_cli.otel.export.destination import OtelDestination
    from agenteval_cli.otel.export.exporter import OtelExport
    from agenteval_cli.otel.export.spans import Request
    from agenteval_cli.results.failures import TargetErrors
    from agenteval_cli.spec.model import Spec
    from agenteval_cli.store.db import ExperimentRecord, Store

ResultHook = Callable[[str, "Result"], None]
NoteHook = Callable[[str], None]


@dataclass(frozen=True)
class ExperimentReport:
    """One target's experiment in the store, and its metrics as ``--json`` writes them."""

    name: str
    target: str
    id: str
    status: str
    results: int  # results stored
    store: Path

    @functools.cached_property
    def _summary(self) -> Summary:
        """Read from the store when first asked for: a pass over every result that a caller
        who never looks (the command) does not pay for."""
        from agenteval_cli.results.figures import from_store
        from agenteval_cli.store.db import Store

        with Store(self.store, readonly=True) as store:
            return from_store(store, store.experiment(self.id))

    @property
    def metrics(self) -> dict[str, float | None]:
        """The mean of each score, the error rate and latency percentiles (the ``metrics``
        of the ``--json`` export)."""
        return self._summary.metrics()

    @property
    def pass_k(self) -> dict[str, Any] | None:
        """pass@k and pass^k of each pass/fail metric and the flaky examples (the
        ``pass_k`` of the ``--json`` export); None when no example was repeated."""
        from agenteval_cli.report.json_report import pass_k_json

        return pass_k_json(self._summary)


@dataclass(frozen=True)
class RunStart:
    """What a run is about to do, given to ``on_start`` before any target is called.

    ``totals`` are every call of the run per target, ``done`` those a resumed run has
    already made and keeps (0 for a new run), so a resumed run's progress reads as the
    uninterrupted run's would; ``left`` is what is still to call."""

    prefix: str
    experiments: list[str]
    totals: dict[str, int]  # every call of the run, per target
    examples: int
    repetitions: int
    concurrency: int
    resumed: bool
    done: dict[str, int] = field(default_factory=dict)  # kept from before a resume

    @property
    def left(self) -> dict[str, int]:
        """Calls still to make, per target."""
        return {name: total - self.done.get(name, 0) for name, total in self.totals.items()}


@dataclass
class RunReport:
    """The outcome of :func:`run`: its status, experiments, warnings and errored calls."""

    status: Status  # "finished" or "interrupted"
    experiments: list[ExperimentReport]
    spec: Spec = field(repr=False)
    store: Path
    examples: int
    warnings: list[str] = field(default_factory=list)
    # those of ``warnings`` that name what the dataset gives and no target has
    # (agenteval_cli.execution.names), which the run's table is read with
    name_warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[TargetErrors] = field(default_factory=list)  # per experiment, in order
    title: str = ""
    otel: OtelExport | None = None  # what the OpenTelemetry export sent, when asked for

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.experiments]

    @property
    def saved(self) -> int:
        """Results stored across the experiments."""
        return sum(e.results for e in self.experiments)

    def experiment(self, target: str) -> ExperimentReport:
        """The experiment of ``target``."""
        for found in self.experiments:
            if found.target == target:
                return found
        raise KeyError(target)

    def over_error_rate(self, max_error_rate: float | None = None) -> list[str]:
        """Targets whose calls errored more often than allowed (the spec's rate by default)."""
        allowed = self.spec.max_error_rate if max_error_rate is None else max_error_rate
        return [e.target for e in self.errors if e.errored and e.over(allowed)]

    def over_interrupt_rate(self, max_interrupt_rate: float | None = None) -> list[str]:
        """Targets with more requests stopped at interrupt() than allowed (the spec's rate
        by default): results of status ``interrupted``, not a run stopped by Ctrl-C."""
        allowed = self.spec.max_interrupt_rate if max_interrupt_rate is None else max_interrupt_rate
        return [e.target for e in self.errors if e.interrupted and e.over_interrupts(allowed)]

    def broken_evaluators(self) -> list[str]:
        """Evaluator keys that failed on every result they scored, in some experiment."""
        found: list[str] = []
        for errors in self.errors:
            found += [k for k in errors.evaluators_failing_everywhere() if k not in found]
        return found

    def ok(self, max_error_rate: float | None = None) -> bool:
        """Finished, no target above its error or interrupt rate and no evaluator failing
        everywhere."""
        clean = not self.over_error_rate(max_error_rate) and not self.broken_evaluators()
        clean = clean and not self.over_interrupt_rate()
        return self.status == "finished" and clean


def run(
    spec: str | Path | Spec,
    *,
    store: str | Path | Store | None = None,
    on_result: ResultHook | None = None,
    on_start: Callable[[RunStart], None] | None = None,
    on_note: NoteHook | None = None,
    on_forced_exit: Callable[[RunReport, str], None] | None = None,
    **options: Unpack[RunOptions],
) -> RunReport:
    """Run every target of ``spec`` on every example, in an event loop of its own.

    Ctrl-C and SIGTERM stop the run (see :func:`agenteval_cli.execution.experiment.execute`);
    use :func:`arun` inside a running event loop. ``resume`` continues the latest unfinished
    run of the spec, or the one a string names; ``retry_errors`` resumes and runs again what
    ended in error. ``cache`` and ``upload`` (keep each call's run tree for an upload) are
    the spec's unless given. ``on_forced_exit(report, reason)`` is called when a run that
    would not stop is about to end the process. ``shard=(i, N)`` runs only the examples of
    shard i of N (a split by example id, the same everywhere), for :func:`merge` to combine.
    ``executor="ray"`` (the spec's ``executor`` unless given) runs the calls on Ray workers:
    a local Ray instance, or the cluster at ``ray_address``; this process keeps the store.
    The variables of the ``.env`` files from the spec's folder up to the project root (or
    of ``env_file`` alone) that the process lacks are set for the run, then unset
    (:mod:`agenteval_cli.core.envfiles`); ``AGENTEVAL_NO_DOTENV=1`` reads none.
    When the calls end, the working directory and standard streams a target changed are put
    back and the processes started meanwhile are ended (:mod:`agenteval_cli.core.pinned`),
    each said in the report's warnings."""
    from agenteval_cli.execution import experiment

    _no_running_loop()
    with (
        pinned_process() as pin,
        spec_env(spec, options.get("env_file")),
        _session(spec, store, on_note) as session,
    ):
        prepared = session.prepare(options)
        hook = session.starting(prepared, on_start, on_result)
        forced = session.forced_hook(prepared, on_forced_exit)
        status = experiment.execute(prepared, session.store, hook, on_forced_exit=forced)
        # the outputs go where they were asked for; Ray's own processes end with Ray
        prepared.warnings += pin.restore(end_children=prepared.ray is None)
        report = session.report(prepared, status)
        if session.otel is not None:
            from agenteval_cli.otel.export.exporter import export_results

            report.otel = export_results(session.otel, session.otel_results(prepared))
        return report


async def arun(
    spec: str | Path | Spec,
    *,
    store: str | Path | Store | None = None,
    on_result: ResultHook | None = None,
    on_start: Callable[[RunStart], None] | None = None,
    on_note: NoteHook | None = None,
    handle_signals: bool = False,
    on_forced_exit: Callable[[RunReport, str], None] | None = None,
    **options: Unpack[RunOptions],
) -> RunReport:
    """:func:`run` in the running event loop (a notebook's, a server's, an async test's).

    The process's signal handlers are left alone unless ``handle_signals`` (then Ctrl-C
    stops the run, and a run that would not stop ends the process, as the CLI does)."""
    from agenteval_cli.execution import experiment

    with (
        pinned_process() as pin,
        spec_env(spec, options.get("env_file")),
        _session(spec, store, on_note) as session,
    ):
        prepared = session.prepare(options)
        hook = session.starting(prepared, on_start, on_result)
        forced = session.forced_hook(prepared, on_forced_exit)
        status = await experiment.execute_async(
            prepared, session.store, hook, handle_signals=handle_signals, on_forced_exit=forced
        )
        prepared.warnings += pin.restore(end_children=prepared.ray is None)
        report = session.report(prepared, status)
        if session.otel is not None:  # read here (the store's thread), sent off the loop
            import asyncio

            from agenteval_cli.otel.export.exporter import export_results

            results = list(session.otel_results(prepared))
            report.otel = await asyncio.to_thread(export_results, session.otel, results)
        return report


def rescore(
    spec: str | Path | Spec,
    experiments: Sequence[str],
    *,
    store: str | Path | Store | None = None,
    env_file: str | Path | None = None,
    reprice: bool = False,
    prices: str | Path | None = None,
) -> RunReport:
    """Score stored experiments again with ``spec``'s evaluators, calling no target: one
    new experiment each (names as ``agenteval compare`` takes them). The spec's ``.env``
    files are read as a run reads them (``env_file``: that file instead).

    Each model call keeps the price its run gave it, unless ``reprice``: then every call
    is priced again with the spec's ``pricing:``, else the price data in use, and the new
    experiment keeps those prices. ``prices``: a YAML file in the shape of ``pricing:``
    whose entries come before the spec's (it implies ``reprice``)."""
    from agenteval_cli.execution.rescore import rescore as rescore_experiments
    from agenteval_cli.spec.prices import read_prices

    _no_running_loop("rescore", "call it from a script, or from a thread of its own")
    extra = {} if prices is None else read_prices(Path(prices))
    with spec_env(spec, env_file), _session(spec, store, None, must_exist=True) as session:
        skipped: list[str] = []  # the report's warnings: the library prints nothing
        pricing = {**session.spec.pricing, **extra} if reprice or prices is not None else None
        created = rescore_experiments(
            session.spec, session.store, list(experiments), warn=skipped.append, reprice=pricing
        )
        title = f"{session.spec.experiment_prefix} · rescored"
        return session.stored_report(created, title=title, warnings=skipped)


def import_langsmith(
    spec: str | Path | Spec,
    experiments: Sequence[str],
    *,
    store: str | Path | Store | None = None,
    on_note: NoteHook | None = None,
    env_file: str | Path | None = None,
) -> RunReport:
    """Import LangSmith experiments into the store (again refreshes them), calling no
    target, to report and gate on them with ``spec``'s pricing and thresholds. Needs
    ``LANGSMITH_API_KEY`` (from the environment or the spec's ``.env`` files, or
    ``env_file``); ``on_note`` gets the progress lines."""
    from agenteval_cli.langsmith.client import connect, credentials
    from agenteval_cli.langsmith.experiments import import_experiment, read_experiments

    say = on_note or (lambda _: None)
    with spec_env(spec, env_file):
        loaded = load(spec)
        conn = connect(credentials())
        pricing = dict(loaded.pricing or {})
        remotes = read_experiments(conn, list(experiments), pricing=pricing, say=say)
    kept = dict(loaded.raw)  # as a local run records its spec (secrets unexpanded)
    with opened_store(store) as opened:  # only once every experiment was read
        session = _Session(loaded, opened, None)
        records = [import_experiment(opened, r, spec=kept, say=say) for r in remotes]
        examples = max((r.example_count or 0) for r in records)
        title = f"{loaded.experiment_prefix} · from LangSmith · {examples} examples"
        names = session.recorded_names(records)
        return session.stored_report(
            records, title=title, examples=examples, warnings=names, name_warnings=names
        )


def import_traces(
    spec: str | Path | Spec,
    files: Sequence[str | Path],
    *,
    target: str | None = None,
    store: str | Path | Store | None = None,
    on_note: NoteHook | None = None,
    env_file: str | Path | None = None,
) -> RunReport:
    """Score recorded OpenTelemetry traces (OTLP JSON ``files``) as results of ``target``
    (the spec's only one unless named) with ``spec``'s evaluators and pricing, calling no
    target: one new experiment (docs/otel.md). ``on_note`` gets the traces no row claims
    and the rows no trace answers; the spec's ``.env`` files are read as a run reads them."""
    from agenteval_cli.execution.traces_import import import_traces as import_recorded

    _no_running_loop("import_traces", "call it from a script, or from a thread of its own")
    with spec_env(spec, env_file), _session(spec, store, on_note) as session:
        record = import_recorded(
            session.spec, session.store, list(files), target=target, note=session.note
        )
        title = f"{session.spec.experiment_prefix} · from traces"
        names = session.recorded_names([record])
        return session.stored_report([record], title=title, warnings=names, name_warnings=names)


def merge(
    stores: Sequence[str | Path],
    *,
    store: str | Path | Store,
) -> RunReport:
    """Combine the stores of a sharded run (each made by ``run(..., shard=(i, N))``) into
    ``store``: one experiment per target holding every shard's results, its metrics and
    dataset-level scores computed over them as an unsharded run's are. Shards of different
    specs or datasets, a shard missing or given twice, or an unfinished shard run are a
    UserError naming the stores; merging the same shards again replaces the earlier merge."""
    from agenteval_cli.execution.merge import merge as merge_stores

    _no_running_loop("merge", "call it from a script, or from a thread of its own")
    with opened_store(store) as opened:
        spec, records = merge_stores([Path(p) for p in stores], opened)
        session = _Session(spec, opened, None)
        examples = max((r.example_count or 0) for r in records)
        title = (
            f"{spec.experiment_prefix} · {examples} examples × {spec.repetitions} "
            f"repetition(s) · merged from {len(stores)} shards"
        )
        return session.stored_report(records, title=title, examples=examples)


def combine(
    stores: Sequence[str | Path],
    *,
    store: str | Path | Store,
    session: str | None = None,
) -> list[RunReport]:
    """Combine the runs held in ``stores`` (each call of :func:`run` in a test session, in
    one store per process) into ``store``: one experiment per target of each spec, holding
    every result of every run of it, with metrics and dataset-level scores computed over
    them. An example run again later replaces its earlier result (said in the notes). One
    report per spec; ``session`` (a new id unless given) names the run they make, the same
    in every process of the session."""
    import uuid

    from agenteval_cli.execution.combine import combine as combine_runs

    _no_running_loop("combine", "call it from a script, or from a thread of its own")
    reports: list[RunReport] = []
    with opened_store(store) as opened:
        for found in combine_runs(
            [Path(p) for p in stores], opened, session=session or uuid.uuid4().hex
        ):
            session_ = _Session(found.spec, opened, None)
            if found.replaced:
                session_.note(
                    f"{found.replaced} result(s) of examples run again in the session replaced "
                    "their earlier runs"
                )
            examples = found.examples
            title = (
                f"{found.spec.experiment_prefix} · {examples} examples × "
                f"{found.spec.repetitions} repetition(s) · combined from {found.runs} run(s) "
                f"in {found.stores} store(s)"
            )
            unfinished = [f"{name}: stopped before its end" for name in found.unfinished]
            reports.append(
                session_.stored_report(
                    found.experiments,
                    title=title,
                    status="interrupted" if found.unfinished else "finished",
                    warnings=unfinished,
                    examples=examples,
                )
            )
    return reports


# -- the pieces -----------------------------------------------------------------------------


def _no_running_loop(
    name: str = "run", instead: str = "use 'await agenteval.arun(...)' there"
) -> None:
    """``run`` and ``rescore`` make an event loop of their own, which cannot start inside a
    running one (a notebook's): say what to do instead, before anything is stored."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"agenteval.{name}() cannot start inside a running event loop (a notebook, an async "
        f"function); {instead}"
    )


def load(spec: str | Path | Spec) -> Spec:
    """A spec from its file (checked, its metric names included), or the one given."""
    from agenteval_cli.gating.thresholds import check_spec_metrics
    from agenteval_cli.spec.model import Spec, load_spec

    if isinstance(spec, Spec):
        return spec
    loaded = load_spec(Path(spec))
    check_spec_metrics(loaded)
    return loaded


def spec_env(
    spec: str | Path | Spec, env_file: str | Path | None = None
) -> contextlib.AbstractContextManager[dict[str, str]]:
    """The variables of the spec's ``.env`` files (or ``env_file``'s) that the process does
    not have, set for the duration (:mod:`agenteval_cli.core.envfiles`); before the spec
    is read, so its ``${VAR}`` see them."""
    from agenteval_cli.spec.model import Spec

    folder = spec.base_dir if isinstance(spec, Spec) else Path(spec).parent
    return loaded_env(folder, env_file)


@contextlib.contextmanager
def opened_store(store: str | Path | Store | None, *, must_exist: bool = False) -> Iterator[Store]:
    """The store given, or the one at its path (by default the project's, found as git finds
    its repository: :func:`agenteval_cli.store.find_store`), opened for the duration and
    closed after; ``must_exist``: a missing one is an error."""
    from agenteval_cli.store.db import Store

    if isinstance(store, Store):
        yield store
        return
    path = find_store(Path.cwd()) if store is None else Path(store)
    if must_exist:
        from agenteval_cli.store.lookup import open_store

        with open_store(path, write=True) as existing:
            yield existing
        return
    with Store(path) as created:
        yield created


@contextlib.contextmanager
def _session(
    spec: str | Path | Spec,
    store: str | Path | Store | None,
    on_note: NoteHook | None,
    *,
    must_exist: bool = False,
) -> Iterator[_Session]:
    loaded = load(spec)
    with opened_store(store, must_exist=must_exist) as opened:
        yield _Session(loaded, opened, on_note)


class _Session:
    """One call of the API: the spec, the open store, and what the run says on the way."""

    def __init__(self, spec: Spec, store: Store, on_note: NoteHook | None) -> None:
        from agenteval_cli.execution.untraced import UntracedResults

        self.spec, self.store = spec, store
        self.notes: list[str] = []
        self._on_note = on_note
        self.untraced = UntracedResults()
        self.otel: OtelDestination | None = None  # where the run's spans go, if anywhere

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self._on_note is not None:
            self._on_note(text)

    def prepare(self, options: RunOptions) -> PreparedRun:
        """The run to make or continue; bad input fails here, before any target is called."""
        from agenteval_cli.execution import experiment

        options = RunOptions(**options)  # a copy: the checked values replace the given
        if options.get("otel"):
            from agenteval_cli.otel.export.destination import otel_destination

            self.otel = otel_destination(str(options["otel"]))
        shard = options.get("shard")
        if shard is not None:
            from agenteval_cli.data.examples import check_shard

            options["shard"] = check_shard(shard)
        uploading = bool(self.spec.upload) if options.get("upload") is None else options["upload"]
        options["upload"] = uploading
        if uploading:  # no key: one line naming the variable, before any target runs
            from agenteval_cli.langsmith.client import credentials

            credentials()
        if resumes(options):
            if options.get("targets") or options.get("limit") is not None or options.get("shard"):
                raise ValueError("a resumed run keeps its own targets, examples and shard")
            from agenteval_cli.execution.resume import resume_run

            return resume_run(self.spec, self.store, options, on_note=self.note)
        prepared = experiment.prepare(self.spec, options, store=self.store, on_note=self.note)
        experiment.start_experiments(prepared, self.store)
        return prepared

    def otel_results(self, prepared: PreparedRun) -> Iterator[tuple[Request, Result, float]]:
        """What ``--otel`` exports: every result of the run's experiments (those a resumed
        run kept included), each with its request and its experiment's start (the time of a
        trace recorded without times)."""
        from datetime import datetime

        from agenteval_cli.otel.export.spans import Request

        for record in prepared.experiments.values():
            started = datetime.fromisoformat(record.started_at).timestamp()
            for stored in self.store.results(record.id):
                result = stored.result
                request = Request(record.target, record.name, result.example_id, result.repetition)
                yield request, result, started

    def starting(
        self,
        prepared: PreparedRun,
        on_start: Callable[[RunStart], None] | None,
        on_result: ResultHook | None,
    ) -> ResultHook:
        """Tell ``on_start`` what the run will do; the result hook that counts untraced ones."""
        if on_start is not None:
            on_start(_run_start(prepared))
        return self.untraced.counting(on_result)

    def forced_hook(
        self, prepared: PreparedRun, on_forced_exit: Callable[[RunReport, str], None] | None
    ) -> Callable[[str], None] | None:
        """The runner's forced-exit hook: a light report (no errors: the process ends)."""
        if on_forced_exit is None:
            return None

        def forced(reason: str) -> None:
            on_forced_exit(self.report(prepared, "interrupted", light=True), reason)

        return forced

    def report(self, prepared: PreparedRun, status: Status, *, light: bool = False) -> RunReport:
        """What the run left in the store. An interrupted run's warnings leave out the
        untraced counts: those of a run cut short are partial, its resumption gives them."""
        records = list(prepared.experiments.values())
        warnings = list(prepared.warnings)
        if status == "finished":
            warnings = self.untraced.warnings() + warnings
        spec = prepared.spec
        title = (
            f"{spec.experiment_prefix} · {len(prepared.examples)} examples × "
            f"{spec.repetitions} repetition(s)"
        )
        if prepared.shard is not None:
            title += f" · shard {prepared.shard[0]}/{prepared.shard[1]}"
        return self.stored_report(
            records,
            title=title,
            status=status,
            warnings=warnings,
            examples=len(prepared.examples),
            light=light,
            name_warnings=prepared.name_warnings,
        )

    def recorded_names(self, records: Sequence[ExperimentRecord]) -> list[str]:
        """The warnings of imported experiments' names: those their rows' references give
        that none of their traces shows (no graph was loaded to read them from)."""
        from agenteval_cli.core.records import Example
        from agenteval_cli.execution.names import check_recorded

        source = str(self.spec.dataset.path or self.spec.source)
        lines: list[str] = []
        for record in records:
            recorded = (
                (Example(s.result.example_id, s.inputs, s.reference_outputs), s.result)
                for s in self.store.results(record.id)
            )
            lines += check_recorded(record.target, recorded, source).lines()
        return lines

    def stored_report(
        self,
        records: Sequence[ExperimentRecord],
        *,
        title: str,
        status: Status = "finished",
        warnings: list[str] | None = None,
        examples: int | None = None,
        light: bool = False,
        name_warnings: list[str] | None = None,
    ) -> RunReport:
        """The report of experiments as the store holds them now."""
        from agenteval_cli.results.failures import run_errors

        experiments = [self._experiment(r.id) for r in records]
        ids = [e.id for e in experiments]
        return RunReport(
            status=status,
            experiments=experiments,
            spec=self.spec,
            store=Path(self.store.path),
            examples=max((r.example_count or 0) for r in records) if examples is None else examples,
            warnings=warnings or [],
            name_warnings=name_warnings or [],
            notes=list(self.notes),
            errors=[] if light else run_errors(self.store, ids),
            title=title,
        )

    def _experiment(self, experiment_id: str) -> ExperimentReport:
        record = self.store.experiment(experiment_id)
        return ExperimentReport(
            name=record.name,
            target=record.target,
            id=record.id,
            status=record.status,
            results=self.store.result_count(record.id),
            store=Path(self.store.path).absolute(),  # read later, maybe from elsewhere
        )


def _run_start(prepared: PreparedRun) -> RunStart:
    totals = {t.name: prepared.total_per_target for t in prepared.targets}
    done = dict.fromkeys(totals, 0)
    if prepared.done is not None:
        from agenteval_cli.execution.resume import remaining

        done = {name: totals[name] - left for name, left in remaining(prepared).items()}
    spec = prepared.spec
    return RunStart(
        prefix=spec.experiment_prefix,
        experiments=[e.name for e in prepared.experiments.values()],
        totals=totals,
        examples=len(prepared.examples),
        repetitions=spec.repetitions,
        concurrency=spec.concurrency,
        resumed=prepared.done is not None,
        done=done,
    )
