"""Combining the stores of a sharded run (``agenteval run --shard i/N``) into one.

Each shard store holds a finished run of one shard; the merge checks that the shards are of
one spec and one dataset, that every shard 1 to N is there once, and copies every result
into one new experiment per target in the output store, as an unsharded run would have
stored them. Nothing is averaged: the metrics are read from the merged results, and the
dataset-level evaluators are scored again over them.

Merging the same shards again replaces the earlier merge in the output store (its
experiments carry a run id made from the shards' run ids), so a CI job that is run again
leaves one merge, not two.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agenteval_cli.core.errors import UserError
from agenteval_cli.spec.model import Spec, load_spec
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.merging import (
    SharedExamples,
    copy_results,
    create_like,
    delete_experiments,
)


@dataclass
class ShardRun:
    """The sharded run a shard store holds: one finished experiment per target."""

    store: Path
    experiments: list[ExperimentRecord]

    @property
    def first(self) -> ExperimentRecord:
        return self.experiments[0]

    @property
    def index(self) -> int:
        return self.first.shard_index or 0

    @property
    def count(self) -> int:
        return self.first.shard_count or 0

    @property
    def label(self) -> str:
        return f"{self.store} (shard {self.index}/{self.count})"

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(e.target for e in self.experiments)


def read_shard(path: Path) -> ShardRun:
    """The latest sharded run of the store at ``path``; a UserError when it has none, or
    when that run is unfinished."""
    if not path.is_file():
        raise UserError(f"no experiment store at {path}", hint="pass the shard runs' --store files")
    with Store(path, readonly=True) as store:
        sharded = [e for e in store.experiments() if e.shard_count is not None]
        if not sharded:
            raise UserError(
                f"{path} holds no sharded run",
                hint=f"run the spec with --shard i/N --store {path}",
            )
        latest = sharded[0]  # newest first
        group = store.run_experiments(latest.run_id) if latest.run_id else [latest]
    unfinished = [e for e in group if e.status != "finished"]
    if unfinished:
        states = ", ".join(f"{e.name} {e.status}" for e in unfinished)
        raise UserError(
            f"{path}: the run of shard {latest.shard_index}/{latest.shard_count} is unfinished "
            f"({states})",
            hint=f"finish it with 'agenteval run SPEC --resume --store {path}', then merge",
        )
    return ShardRun(path, group)


def check_shards(shards: Sequence[ShardRun]) -> list[ShardRun]:
    """The shards in order 1 to N; a UserError naming the stores when they are not the
    shards of one run of one spec on one dataset, each there once."""
    if not shards:
        raise UserError("no shard stores to merge", hint="agenteval merge STORE... --store OUT")
    _same(shards, "spec (spec hash)", lambda s: s.first.spec_hash, "run every shard with one spec")
    _same(
        shards,
        "dataset version (dataset hash)",
        lambda s: (s.first.dataset_hash, s.first.dataset_examples),
        "run every shard on the same dataset file",
    )
    _same(shards, "shard count N", lambda s: s.count, "run every shard with the same --shard i/N")
    _same(shards, "targets", lambda s: s.targets, "run every shard with the same --target options")
    _same(shards, "repetitions", lambda s: s.first.repetitions, "run every shard with one spec")
    count = shards[0].count
    by_index: dict[int, list[ShardRun]] = {}
    for shard in shards:
        by_index.setdefault(shard.index, []).append(shard)
    for index, found in sorted(by_index.items()):
        if len(found) > 1:
            stores = ", ".join(str(s.store) for s in found)
            raise UserError(
                f"shard {index}/{count} is in more than one store: {stores}",
                hint="pass each shard's store once",
            )
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        names = ", ".join(f"{i}/{count}" for i in missing)
        have = ", ".join(s.label for s in sorted(shards, key=lambda s: s.index))
        raise UserError(
            f"shard(s) {names} missing: the stores given hold {have}",
            hint="pass the store of every shard 1 to N",
        )
    return sorted(shards, key=lambda s: s.index)


def _same(shards: Sequence[ShardRun], what: str, key, hint: str) -> None:
    groups: dict[object, list[ShardRun]] = {}
    for shard in shards:
        groups.setdefault(key(shard), []).append(shard)
    if len(groups) > 1:
        parts = ["; ".join(str(s.store) for s in group) for group in groups.values()]
        raise UserError(
            f"the shards are of different {what}: " + " vs ".join(parts),
            hint=hint,
        )


def merge_run_id(shards: Sequence[ShardRun]) -> str:
    """The run id of the merge of ``shards``: the same for the same shard runs."""
    ids = sorted(s.first.run_id or s.first.id for s in shards)
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:32]


def merged_spec(record: ExperimentRecord) -> Spec:
    """The shards' spec, for their dataset-level evaluators: its file when it is the one
    the shards ran (same content hash), else the copy the store kept."""

    path = Path(record.spec_path) if record.spec_path else None
    if path is not None and path.is_file():
        with contextlib.suppress(UserError):
            spec = load_spec(path)
            if spec.content_hash == record.spec_hash:
                return spec
    source = path or Path("spec.yaml")
    base_dir = source.parent.resolve()
    try:
        spec = Spec.model_validate(record.spec, context={"base_dir": base_dir, "source": source})
    except Exception as exc:
        raise UserError(
            f"the shards' spec {source} is not there as they ran it, and its stored copy "
            f"does not load ({type(exc).__name__})",
            hint="merge where the spec the shards ran is at the path they ran it from",
        ) from None
    spec._source = source
    spec._base_dir = base_dir
    return spec


def merge(paths: Sequence[Path], out: Store) -> tuple[Spec, list[ExperimentRecord]]:
    """Merge the shard stores at ``paths`` into ``out``: one finished experiment per
    target, an earlier merge of the same shards replaced. Returns the spec and them."""
    from agenteval_cli.evaluators.loading import catalog_of
    from agenteval_cli.execution.experiment import score_stored_summaries
    from agenteval_cli.execution.loading import load_evaluators

    out_path = Path(out.path).resolve()
    for path in paths:
        if Path(path).resolve() == out_path:
            raise UserError(
                f"--store {out.path} is one of the shard stores",
                hint="merge into a new file, such as --store merged.db",
            )
    shards = check_shards([read_shard(Path(p)) for p in paths])
    first = shards[0].first
    spec = merged_spec(first)
    evaluators = load_evaluators(spec)  # a user's evaluator that fails to load fails here
    run_id = merge_run_id(shards)
    _drop_merge(out, run_id)
    catalog = catalog_of(evaluators)
    created = [
        create_like(out, source, run_id=run_id, catalog=catalog) for source in shards[0].experiments
    ]
    status = "interrupted"
    try:
        _copy_results(out, shards, created)
        score_stored_summaries(spec, evaluators, out, created)  # evaluator_timeout_s
        status = "finished"
    finally:
        for experiment in created:
            out.finish_experiment(experiment.id, status)
    return spec, [out.experiment(e.id) for e in created]


def _copy_results(out: Store, shards: Sequence[ShardRun], created: Sequence[ExperimentRecord]):
    """Every shard's results into the new experiments, shard 1's first, each shard's in
    the order it stored them; a transaction per shard."""
    for shard in shards:
        pairs = [
            (source.id, new.id) for source, new in zip(shard.experiments, created, strict=True)
        ]
        try:
            copy_results(out, shard.store, pairs)
        except SharedExamples:
            raise UserError(
                f"{shard.label} holds examples another shard holds too",
                hint="run every shard with the same agenteval and dataset",
            ) from None


def _drop_merge(out: Store, run_id: str) -> None:
    """Remove an earlier merge of the same shards (its experiments and what they hold)."""
    delete_experiments(out, [e.id for e in out.run_experiments(run_id)])
