"""Reading stored experiments from Python: compare them, gate them, report on them.

Every function takes its experiments as ``agenteval compare`` does (target names, their
latest experiment; experiment names, ids or prefixes; ``--json`` or baseline files), or as
a :class:`~agenteval_cli.api.running.RunReport`, its experiments, or loaded
:class:`~agenteval_cli.results.sources.ExperimentData`. A store given as a path (by default
``.agenteval/agenteval.db``) is opened read-only, and only when a name needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from agenteval_cli.api.running import ExperimentReport, RunReport, load
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.gating.family import CheckOutcome
    from agenteval_cli.gating.verdict import GateFailure
    from agenteval_cli.report.comparison import Comparison
    from agenteval_cli.results.sources import ExperimentData
    from agenteval_cli.spec.model import Spec
    from agenteval_cli.store.db import Store

    # a name or file as the commands take them, a run's experiment, or one already loaded
    Experiment: TypeAlias = str | Path | ExperimentReport | ExperimentData | RunReport
    Experiments: TypeAlias = RunReport | Iterable[Experiment]


def load_experiments(
    experiments: Experiments, *, store: str | Path | Store | None = None
) -> list[ExperimentData]:
    """Each experiment loaded with its results, in the order given."""
    from agenteval_cli.results import sources
    from agenteval_cli.results.sources import ExperimentData

    experiments = _listed(experiments)
    items = _flat(experiments)
    where = _store_of(experiments, store)
    loaded: list[ExperimentData] = []
    pending: list[str] = []  # names resolved together, so the store opens once

    def flush() -> None:
        if pending:
            loaded.extend(sources.load(pending, where))
            pending.clear()

    for item in items:
        if isinstance(item, ExperimentData):
            flush()
            loaded.append(item)
        else:
            pending.append(item.id if isinstance(item, ExperimentReport) else str(item))
    flush()
    return loaded


def compare(
    *experiments: Experiment,
    store: str | Path | Store | None = None,
    allow_different_data: bool = False,
    top: int = 10,
    seed: int | None = None,
    from_langsmith: bool = False,
    on_note: Callable[[str], None] | None = None,
    bootstrap: bool = False,
) -> Comparison:
    """Every experiment against the first, with paired statistics: per metric the means,
    the difference, its 95% interval and p-value (``Comparison.rows``), and the examples
    where they disagree most. ``from_langsmith`` reads every name as a LangSmith
    experiment instead (``on_note`` gets the progress lines). ``bootstrap``: percentile
    bootstrap intervals (seeded by ``seed``) instead of t for the metrics that are not 0/1
    outcomes; it needs 30 or more shared examples."""
    from agenteval_cli.report import comparison
    from agenteval_cli.results import sources

    if from_langsmith:
        names = [str(e) for e in experiments]
        sides = sources.from_langsmith(names, say=on_note or (lambda _: None))
    else:
        sides = load_experiments(experiments, store=store)
    _check_two_different(sides)
    return comparison.build(
        sides,
        allow_different_data=allow_different_data,
        top=top,
        seed=seed,
        method="bootstrap" if bootstrap else "t",
    )


def compare_each(
    *experiments: Experiment,
    store: str | Path | Store | None = None,
    allow_different_data: bool = False,
    top: int = 10,
    seed: int | None = None,
    bootstrap: bool = False,
) -> list[Comparison]:
    """:func:`compare`, or, when an argument holds several targets' experiments (a file
    from a spec with two targets), one comparison per target, each target's experiment of
    every argument paired by its name; its note says so."""
    from agenteval_cli.report import comparison
    from agenteval_cli.results.pairing import by_target

    groups = [load_experiments([e], store=store) for e in experiments]
    paired = by_target(groups, [_shown(e) for e in experiments])
    if paired is None:
        return [
            compare(
                *[side for group in groups for side in group],
                allow_different_data=allow_different_data,
                top=top,
                seed=seed,
                bootstrap=bootstrap,
            )
        ]
    found = []
    for sides in paired:
        _check_two_different(sides)
        result = comparison.build(
            sides,
            allow_different_data=allow_different_data,
            top=top,
            seed=seed,
            method="bootstrap" if bootstrap else "t",
        )
        said = (
            f"{sides[0].target}: paired by target name across "
            f"{', '.join(_shown(e) for e in experiments)}"
        )
        result.note = "; ".join(n for n in (said, result.note) if n)
        found.append(result)
    return found


def _shown(experiment: Experiment) -> str:
    """How an argument reads in a line: its name or path."""
    if isinstance(experiment, str | Path):
        return str(experiment)
    return str(getattr(experiment, "name", experiment))


def _check_two_different(sides: list[ExperimentData]) -> None:
    """A comparison needs two experiments, each named once."""
    from agenteval_cli.core.errors import UserError

    if len(sides) < 2:
        named = f" ({sides[0].name})" if sides else ""
        raise UserError(
            f"compare needs two or more experiments, got {len(sides)}{named}",
            hint="name two, e.g. 'agenteval compare supervisor swarm'; "
            "'agenteval report NAME -o report.html' shows one",
        )
    seen: set[str] = set()
    for side in sides:
        if side.name in seen:
            raise UserError(
                f"{side.name} is named twice: an experiment compared with itself shows nothing",
                hint="name two different experiments (a target name means its latest)",
            )
        seen.add(side.name)


@dataclass
class Gate:
    """The CI gate's verdict: an empty ``failures`` passes. ``checks``: what it decided
    about each baseline check (failed, cleared by Holm's adjustment, passed, unchanged or
    untested), with the interval it decided from."""

    failures: list[GateFailure] = field(default_factory=list)
    checked: bool = False  # there were thresholds or a baseline to check
    missing_baseline: str | None = None  # the spec's baseline file, not written yet
    checks: list[CheckOutcome] = field(default_factory=list)
    allow_untested: bool = False  # an untested check passes (listed, not failed)

    @property
    def passed(self) -> bool:
        return not self.failures


def gate(
    experiments: Experiments,
    *,
    spec: str | Path | Spec | None = None,
    thresholds: Mapping[str, Any] | None = None,
    baseline: str | Path | None = None,
    max_regression: Mapping[str, float] | None = None,
    store: str | Path | Store | None = None,
    allow_untested: bool | None = None,
) -> Gate:
    """Check the thresholds and the baseline (a file or a stored experiment) of the
    experiments; each is the spec's (a run report's own) unless given. A baseline check
    no result could fail fails the gate unless ``allow_untested``."""
    from agenteval_cli.gating.baselines import load_baselines
    from agenteval_cli.gating.verdict import judge

    experiments = _listed(experiments)
    sides = load_experiments(experiments, store=store)
    loaded = _spec_of(experiments, spec)
    if thresholds is None:
        thresholds = loaded.thresholds if loaded is not None else _stored_thresholds(sides)
    if max_regression is None:
        max_regression = loaded.max_regression if loaded is not None else {}
    if allow_untested is None:
        allow_untested = loaded.allow_untested if loaded is not None else False
    name = str(baseline) if baseline is not None else None
    if name is None and loaded is not None and loaded.baseline:
        name = str(loaded.baseline)
    baselines: dict[str, ExperimentData] = {}
    if name is not None:
        where = _store_of(experiments, store)
        baselines = load_baselines(name, where, sides, from_spec=baseline is None)
    verdict = judge(
        sides,
        thresholds=thresholds,
        baselines=baselines,
        max_regression=max_regression,
        allow_untested=allow_untested,
    )
    missing = name if name is not None and not baselines else None
    return Gate(
        verdict.failures,
        checked=bool(thresholds or baselines),
        missing_baseline=missing,
        checks=verdict.checks,
        allow_untested=allow_untested,
    )


def preflight(
    *,
    store: str | Path | Store | None = None,
    outputs: Iterable[tuple[str, str | Path | None]] = (),
    baseline: str | None = None,
    spec_baseline: Path | None = None,
) -> str | None:
    """What would fail after a run fails before it, in this order: the store (made if
    missing, as the run will make it), each output file that cannot be written (``(option,
    path)`` pairs; ``-`` is stdout), a ``baseline`` file that does not exist or cannot be
    compared (the spec's too, once written). A stored baseline is pinned to the experiment
    its name means now, before a run's own experiments would take the name: the baseline
    to gate against is returned (a file's path as given; None without one)."""
    from agenteval_cli.api.running import opened_store
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.gating.baselines import read_baseline_file
    from agenteval_cli.report.output_paths import check_writable
    from agenteval_cli.results.sources import looks_like_file
    from agenteval_cli.store.lookup import resolve_experiment

    with opened_store(store) as opened:
        for option, path in outputs:
            if path is not None and str(path) != "-":
                check_writable(Path(path), option)
        if baseline is None:
            if spec_baseline is not None and spec_baseline.is_file():
                read_baseline_file(spec_baseline)
            return None
        if looks_like_file(baseline):
            if not Path(baseline).is_file():
                raise UserError(
                    f"--baseline file not found: {baseline}",
                    hint="write one with 'agenteval run SPEC --save-baseline FILE'",
                )
            read_baseline_file(Path(baseline))  # comparable now rather than after
            return baseline
        return resolve_experiment(opened, baseline, option="--baseline").name


def check_judges(experiments: Experiments, min_kappa: Mapping[str, float]) -> None:
    """Refuse (a UserError, exit 3) a gate that rests on judges people have not confirmed:
    a score key whose kappa against people's labels is unknown or below its
    ``min_kappa``."""
    from agenteval_cli.gating.calibration import refuse_uncalibrated

    refuse_uncalibrated(load_experiments(experiments), min_kappa)


def write_report(
    experiments: Experiments,
    *,
    html: str | Path | None = None,
    markdown: str | Path | None = None,
    junit: str | Path | None = None,
    store: str | Path | Store | None = None,
    thresholds: Mapping[str, Any] | None = None,
    gate_failures: list[GateFailure] | None = None,
    title: str | None = None,
    allow_different_data: bool = False,
    gate: Gate | None = None,
    reports: Mapping[str, str | Path | None] | None = None,
) -> list[Path]:
    """Write each report asked for (a self-contained HTML page, a Markdown summary, JUnit
    XML: any format of :data:`agenteval_cli.api.formats.FORMATS`, by its keyword or in
    ``reports`` by its name), whole or not at all; the paths written, in the formats'
    order. The thresholds shown are the spec's of a run report, else those the experiments
    were run with. ``gate``: its failures in the Markdown (unless ``gate_failures`` are
    given) and a JUnit case per baseline check."""
    from agenteval_cli.api.formats import FORMATS, ReportInput, format_named
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.report import comparison

    asked = {"html": html, "markdown": markdown, "junit": junit, **(reports or {})}
    paths = {format_named(k).name: Path(v) for k, v in asked.items() if v is not None}
    if not paths:
        raise UserError(
            "nothing to write", hint="give -o report.html, --markdown PATH or --junit PATH"
        )
    experiments = _listed(experiments)
    sides = load_experiments(experiments, store=store)
    if thresholds is None:
        loaded = _spec_of(experiments, None)
        thresholds = loaded.thresholds if loaded is not None else _stored_thresholds(sides)
    result = comparison.build(sides, allow_different_data=allow_different_data)
    if gate is not None and gate_failures is None:
        gate_failures = gate.failures
    given = ReportInput(
        comparison=result,
        thresholds=dict(thresholds),
        title=title or " vs ".join(result.names),
        gate_failures=gate_failures,
        gate_checks=gate.checks if gate is not None else (),
        allow_untested=gate is not None and gate.allow_untested,
    )
    written = []
    for found in FORMATS:
        if found.name in paths:
            found.write(paths[found.name], given)
            written.append(paths[found.name])
    return written


def save_baseline(
    path: str | Path, experiments: Experiments, *, store: str | Path | Store | None = None
) -> Path:
    """Write the experiments as a baseline JSON, a small file a repository commits."""
    from agenteval_cli.gating.baselines import save_baseline as write_baseline

    sides = load_experiments(experiments, store=store)
    written = Path(path)
    write_baseline(written, sides, git_commit=sides[0].git_commit if sides else None)
    return written


def _listed(experiments: Experiments) -> RunReport | list[Any]:
    """The experiments as a run report or a list: read more than once, never exhausted."""
    if isinstance(experiments, RunReport):
        return experiments
    if isinstance(experiments, str | Path):
        return [experiments]
    return list(experiments)


def _flat(experiments: Experiments) -> list[Any]:
    """The experiments one by one, a run report's in its order."""
    if isinstance(experiments, RunReport):
        return list(experiments.experiments)
    if isinstance(experiments, str | Path):
        return [experiments]
    items: list[Any] = []
    for item in experiments:
        items += item.experiments if isinstance(item, RunReport) else [item]
    return items


def _store_of(experiments: Experiments, store: str | Path | Store | None) -> Path | Store:
    """The store given, else the one a run report was stored in, else the project's."""
    if store is not None:
        return Path(store) if isinstance(store, str) else store
    if isinstance(experiments, RunReport):
        return experiments.store
    if not isinstance(experiments, str | Path):
        for item in experiments:
            if isinstance(item, RunReport):
                return item.store
    return find_store(Path.cwd())


def _spec_of(experiments: Experiments, spec: str | Path | Spec | None) -> Spec | None:
    if spec is not None:
        return load(spec)
    return experiments.spec if isinstance(experiments, RunReport) else None


def _stored_thresholds(sides: list[ExperimentData]) -> dict[str, Any]:
    """The thresholds of the specs the experiments ran with, the first's winning."""
    merged: dict[str, Any] = {}
    for side in reversed(sides):
        merged.update(side.thresholds)
    return merged
