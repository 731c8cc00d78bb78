"""Combining the runs a test session made into one experiment per spec and target.

A pytest session calls :func:`agenteval_cli.api.run` once per test, each call a run of its
own, in one store per process (pytest-xdist's workers each write theirs). At the end of the
session these runs become what the session measured: one experiment per target of each
spec, holding every result of every run of it, its metrics read from them and its
dataset-level scores computed over them, as :mod:`agenteval_cli.execution.merge` does for
the shards of one run. An example (and repetition) run again later in the session (a test
rerun, two tests running the same example) is kept once, as its latest run left it; the
count replaced is said.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.core.errors import UserError
from agenteval_cli.execution.merge import merged_spec
from agenteval_cli.spec.model import Spec
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.merging import SharedExamples, copy_results, create_like

if TYPE_CHECKING:
    from agenteval_cli.metrics.catalog import Catalog


@dataclass
class Piece:
    """One run's experiment of one target, in the store that holds it."""

    store: Path
    record: ExperimentRecord


@dataclass
class Combined:
    """The experiments made of one spec's runs, and what went into them."""

    spec: Spec
    experiments: list[ExperimentRecord]
    runs: int  # the runs combined
    examples: int  # the distinct examples of their results, over every target
    stores: int  # the stores they came from (the session's processes)
    replaced: int = 0  # results of an example run again, the earlier run's dropped
    unfinished: list[str] = field(default_factory=list)  # runs stopped before their end


def read_pieces(paths: Sequence[Path]) -> list[Piece]:
    """Every experiment of the stores at ``paths``, oldest first across the stores."""
    pieces: list[Piece] = []
    for path in paths:
        if not Path(path).is_file():
            raise UserError(f"no experiment store at {path}", hint="pass the runs' store files")
        with Store(path, readonly=True) as store:
            pieces += [Piece(Path(path), record) for record in store.experiments()]
    return sorted(pieces, key=lambda p: (p.record.started_at, p.record.ended_at or ""))


def combine(paths: Sequence[Path], out: Store, *, session: str) -> list[Combined]:
    """The runs stored at ``paths`` combined into ``out``: per spec (by content hash), one
    finished experiment per target, of run id derived from ``session`` and the spec (so
    every process of one session agrees on it). A spec's experiments are ``interrupted``
    when one of its runs was."""
    groups: dict[str, list[Piece]] = {}
    for piece in read_pieces(paths):
        key = piece.record.spec_hash or piece.record.spec_path or piece.record.prefix
        groups.setdefault(key, []).append(piece)
    return [_combine_spec(pieces, out, session) for pieces in groups.values()]


def _combine_spec(pieces: list[Piece], out: Store, session: str) -> Combined:
    from agenteval_cli.evaluators.loading import catalog_of
    from agenteval_cli.execution.experiment import score_stored_summaries
    from agenteval_cli.execution.loading import load_evaluators

    first = pieces[0].record
    spec = merged_spec(first)
    evaluators = load_evaluators(spec)  # a user's evaluator that fails to load fails here
    key = first.spec_hash or first.spec_path or first.prefix
    run_id = hashlib.sha256(f"{session}\n{key}".encode()).hexdigest()[:32]
    order = [t.name for t in spec.targets]  # the spec's order, as a run lists them
    by_target: dict[str, list[Piece]] = {}
    for piece in sorted(pieces, key=lambda p: _index(order, p.record.target)):
        by_target.setdefault(piece.record.target, []).append(piece)
    combined = Combined(
        spec,
        [],
        runs=len({p.record.run_id or p.record.id for p in pieces}),
        examples=len(_examples(pieces)),
        stores=len({p.store for p in pieces}),
    )
    combined.unfinished = sorted({p.record.name for p in pieces if p.record.status != "finished"})
    created: list[ExperimentRecord] = []
    status = "interrupted"
    try:
        for found in by_target.values():
            created.append(_create(out, found, spec, run_id, catalog_of(evaluators)))
            for piece in found:
                combined.replaced += _copy(out, piece, created[-1].id)
        score_stored_summaries(spec, evaluators, out, created)
        status = "interrupted" if combined.unfinished else "finished"
    finally:
        for experiment in created:
            out.finish_experiment(experiment.id, status)
    combined.experiments = [out.experiment(e.id) for e in created]
    return combined


def _index(order: list[str], target: str) -> int:
    return order.index(target) if target in order else len(order)


def _create(
    out: Store, pieces: list[Piece], spec: Spec, run_id: str, catalog: Catalog
) -> ExperimentRecord:
    """The experiment the pieces of one target go into: their spec and target as the first
    ran them, the spec's dataset file when they all ran it (not a single example's file),
    and as many examples as they hold."""
    first = pieces[0].record
    paths = {p.record.dataset_path for p in pieces}
    dataset = str(spec.dataset.path) if spec.dataset.path else None
    dataset_path = dataset if paths == {dataset} else None
    hashes = sorted({p.record.dataset_hash or "" for p in pieces})
    dataset_hash = hashes[0] or None
    if len(hashes) > 1:  # inline examples, or several files: the same set hashes the same
        dataset_hash = hashlib.sha256("\n".join(hashes).encode()).hexdigest()
    return create_like(
        out,
        first,
        run_id=run_id,
        catalog=catalog,
        dataset_path=dataset_path,
        dataset_hash=dataset_hash,
        example_count=len(_examples(pieces)),
    )


def _examples(pieces: Sequence[Piece]) -> set[str]:
    """The ids of the examples the pieces hold results of."""
    found: set[str] = set()
    for piece in pieces:
        with Store(piece.store, readonly=True) as store:
            found |= {example for example, _ in store.result_keys(piece.record.id)}
    return found


def _copy(out: Store, piece: Piece, experiment_id: str) -> int:
    try:
        return copy_results(out, piece.store, [(piece.record.id, experiment_id)], replace=True)
    except SharedExamples:  # replace=True keeps none twice: a store that changed under us
        raise UserError(
            f"{piece.store}: the results of {piece.record.name} could not be combined",
            hint="run the session again",
        ) from None
