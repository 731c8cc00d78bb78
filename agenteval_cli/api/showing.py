"""What the commands show of stored experiments, read in one opening of the store and
handed back as data: the run's table, its per-agent usage, the list of experiments and the
``--json`` document. The commands render it; they never open the store themselves."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.api.reading import Gate
    from agenteval_cli.metrics.summary import Summary
    from agenteval_cli.report.agents import AgentUsage
    from agenteval_cli.results.calibration import Calibration
    from agenteval_cli.results.sources import ExperimentData
    from agenteval_cli.store.db import ExperimentRecord, Store


@contextlib.contextmanager
def read_store(store: str | Path | Store | None) -> Iterator[Store]:
    """The store given, or the existing one at its path (by default the project's) opened
    read-only for the duration; a missing one is a UserError, never an empty new file."""
    from agenteval_cli.store.db import Store
    from agenteval_cli.store.lookup import open_store

    if isinstance(store, Store):
        yield store
        return
    with open_store(find_store(Path.cwd()) if store is None else Path(store)) as opened:
        yield opened


@dataclass(frozen=True)
class TableColumn:
    """One experiment's column of the run's table and the lines said under it."""

    target: str
    name: str
    status: str
    summary: Summary
    dataset_scores: dict[str, Any]  # the dataset-level (summary) scores, by key
    usage_note: str | None  # why tokens or cost read n/a, if they do
    # models its calls have no price for, when its spec priced tokens (a gap in the cost)
    unpriced_models: list[str]
    # models whose calls were stored without their price (per-call cost n/a)
    unstored_models: list[str]


@dataclass(frozen=True)
class RunTable:
    """What ``agenteval run`` prints of its experiments: their columns, the note on
    results without an answer, each judge's agreement with people's labels, and where
    failed requests started (per target, the agent and kind of their first wrong step)."""

    columns: list[TableColumn]
    unanswered: str | None
    calibration: list[tuple[str, list[Calibration], str | None]]  # target, found, error
    failure_starts: list[tuple[str, Counter[tuple[str, str]]]]
    store: Path

    @property
    def cached(self) -> bool:
        """Some result was reused from the response cache."""
        return any(column.summary.cached for column in self.columns)


def run_table(experiment_ids: Sequence[str], *, store: str | Path | Store | None) -> RunTable:
    """The run table's figures of stored experiments (by id), each read once."""
    from agenteval_cli.metrics.summary import unanswered_note, usage_note
    from agenteval_cli.report.blame import stored_counts
    from agenteval_cli.report.table import unpriced_models, unstored_models
    from agenteval_cli.results.calibration import stored_calibration
    from agenteval_cli.results.figures import from_store
    from agenteval_cli.store.summaries import summary_scores

    with read_store(store) as opened:
        records = [opened.experiment(i) for i in experiment_ids]
        columns = []
        for record in records:
            summary = from_store(opened, record)
            columns.append(
                TableColumn(
                    target=record.target,
                    name=record.name,
                    status=record.status,
                    summary=summary,
                    dataset_scores={s.key: s.score for s in summary_scores(opened, record.id)},
                    usage_note=usage_note(summary),
                    unpriced_models=unpriced_models(summary) if _prices_tokens(record) else [],
                    unstored_models=unstored_models(summary, record.spec.get("pricing") or {}),
                )
            )
        calibration = [(r.target, *stored_calibration(opened, r)) for r in records]
        return RunTable(
            columns=columns,
            unanswered=unanswered_note([c.summary for c in columns]),
            calibration=calibration,
            failure_starts=stored_counts(opened, list(experiment_ids)),
            store=opened.path,
        )


def _prices_tokens(experiment: ExperimentRecord) -> bool:
    """Whether the experiment's spec configured ``token_cost``: only then does a model
    without a price leave a figure incomplete."""
    for entry in experiment.spec.get("evaluators") or []:
        if entry == "token_cost" or (
            isinstance(entry, dict) and "token_cost" in (entry.get("name"), entry.get("type"))
        ):
            return True
    return False


def agent_usage(
    experiment_ids: Sequence[str], *, store: str | Path | Store | None
) -> list[tuple[str, AgentUsage]]:
    """``--by-agent``: each stored experiment's target and its agents' calls, tokens, cost
    and model time over every result (failed requests too), priced as it ran."""
    from agenteval_cli.report.agents import stored_usage

    with read_store(store) as opened:
        return [(opened.experiment(i).target, stored_usage(opened, i)) for i in experiment_ids]


@dataclass(frozen=True)
class Listed:
    """One stored experiment as ``agenteval experiments`` lists it."""

    name: str
    target: str
    status: str
    results: int
    repetitions: int
    dataset_hash: str | None
    started_at: str
    run_id: str | None = None


def list_experiments(
    *, target: str | None = None, store: str | Path | Store | None = None
) -> list[Listed]:
    """The stored experiments (of ``target``, if given), newest first."""
    with read_store(store) as opened:
        return [
            Listed(
                name=e.name,
                target=e.target,
                status=e.status,
                results=opened.result_count(e.id),
                repetitions=e.repetitions,
                dataset_hash=e.dataset_hash,
                started_at=e.started_at,
                run_id=e.run_id,
            )
            for e in opened.experiments(target=target)
        ]


def experiment_name(
    name: str, *, store: str | Path | Store | None = None, option: str | None = None
) -> str:
    """The stored experiment a name means now (a target's latest, a name, an id or a
    unique prefix); ``option`` names the option it came from, for the error."""
    from agenteval_cli.store.lookup import resolve_experiment

    with read_store(store) as opened:
        return resolve_experiment(opened, name, option=option).name


def write_json(
    destination: str | Path | IO[str],
    experiment_ids: Sequence[str],
    *,
    store: str | Path | Store | None = None,
    gate: Gate | None = None,
    warnings: Sequence[str] = (),
) -> None:
    """The ``--json`` document of stored experiments (every result, the metrics, the
    gate's verdict when it checked something, a run's ``warnings``), to a file written
    whole or to an open stream."""
    from agenteval_cli.report.gate_json import gate_json
    from agenteval_cli.report.json_report import json_chunks
    from agenteval_cli.report.json_report import write_json as write_file

    verdict = (
        None
        if gate is None or not gate.checked
        else gate_json(gate.failures, gate.checks, allow_untested=gate.allow_untested)
    )
    with read_store(store) as opened:
        ids = list(experiment_ids)
        if isinstance(destination, str | Path):
            write_file(Path(destination), opened, ids, verdict, warnings=warnings)
            return
        for chunk in json_chunks(opened, ids, verdict, warnings=warnings):
            destination.write(chunk)


def json_text(value: Any, **options: Any) -> str:
    """JSON every parser accepts, as ``--json`` writes it: null for NaN and ±Infinity,
    known secrets redacted."""
    from agenteval_cli.store.results import strict_json

    return strict_json(value, **options)


@dataclass(frozen=True)
class LatestRun:
    """The newest run of a spec (or of the store), its experiments loaded with their
    results; empty ``experiments`` when there is none."""

    prefix: str
    name: str  # its first experiment's name
    experiments: list[ExperimentData]


def latest_run(
    spec: str | Path | None = None, *, store: str | Path | Store | None = None
) -> LatestRun | None:
    """The newest run in the store (of ``spec``'s experiment prefix, and among those of
    that spec file, when one is given); None when there is none."""
    from agenteval_cli.results import sources
    from agenteval_cli.store.lookup import latest_run as newest

    prefix = source = None
    if spec is not None:
        from agenteval_cli.spec.model import load_spec

        loaded = load_spec(Path(spec))
        prefix, source = loaded.experiment_prefix, loaded.source
    with read_store(store) as opened:
        group = newest(opened, prefix=prefix, spec_path=source)
        if not group:
            return None
        sides = [sources.from_store(opened, e) for e in group]
    return LatestRun(group[0].prefix, group[0].name, sides)


def __getattr__(name: str) -> Any:
    """``SHOWN_REASONS``, the error reasons shown per target, imported when first asked
    for: the read model it lives in is not loaded by a command that only lists the store."""
    if name == "SHOWN_REASONS":
        from agenteval_cli.results.failures import SHOWN_REASONS

        return SHOWN_REASONS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
