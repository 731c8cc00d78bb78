"""Resuming an interrupted run: find it, check nothing changed, and run only what is missing.

A run is the set of experiments one ``agenteval run`` started together (their ``run_id``).
Resuming it reuses those experiments, so the finished table is the one an uninterrupted run
would have printed: every example x repetition pair that already has a row is skipped, and
with ``retry_errors`` the pairs that ended in error run again and replace their row. A run
is locked while it runs (:meth:`Store.lock_run`), so it is never resumed twice at once.
"""

from __future__ import annotations

from agenteval_cli.core.errors import UserError
from agenteval_cli.execution.experiment import NoteHook, PreparedRun, prepare
from agenteval_cli.execution.options import RunOptions
from agenteval_cli.spec.model import Spec
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.lookup import latest_run, resolve_experiment, run_of

UNFINISHED = ("running", "interrupted")


def resume_run(
    spec: Spec,
    store: Store,
    options: RunOptions,
    *,
    on_note: NoteHook | None = None,
) -> PreparedRun:
    """The run to continue, prepared with the pairs it already has (``PreparedRun.done``):
    the latest unfinished run of the spec, or the one ``options["resume"]`` names; with
    ``retry_errors`` its errored pairs are called again. ``cache``, ``upload``, ``executor``
    and ``ray_address`` as :func:`prepare` reads them (a run may go on where it did not
    start); it keeps its own targets, examples and shard."""
    named = options.get("resume")
    retry_errors = bool(options.get("retry_errors"))
    group = (
        _named_run(store, named)
        if isinstance(named, str)
        else _latest_run(spec, store, retry_errors)
    )
    first = group[0]
    # Held until the store closes: a second --resume of this run (or one while the run
    # itself still goes on) is refused here, before it calls anything.
    store.lock_run(first.run_id or first.id, ", ".join(e.name for e in group))
    _refuse_changes(spec, first)
    shard = None
    if first.shard_index is not None and first.shard_count is not None:
        shard = (first.shard_index, first.shard_count)
    kept: RunOptions = {
        "targets": [e.target for e in group],
        "limit": first.dataset_examples if shard else first.example_count,
        "shard": shard,
    }
    run = prepare(spec, {**options, **kept}, store=store, on_note=on_note)
    if first.example_count is not None and len(run.examples) != first.example_count:
        raise UserError(
            f"the dataset now has {len(run.examples)} examples, {first.name} started with "
            f"{first.example_count}",
            file=spec.dataset.path,
            hint="run without --resume to start a new experiment",
        )
    run.experiments = {e.target: e for e in group}
    for e in group:
        for line in _target_changes(e):
            run.warnings.append(line)
            if on_note is not None:
                on_note(line)
    run.done = {e.target: store.result_keys(e.id) for e in group}
    run.retry_errors = retry_errors
    for e in group:
        store.reopen_experiment(e.id)
    return run


def _named_run(store: Store, name: str) -> list[ExperimentRecord]:
    return run_of(store, resolve_experiment(store, name, option="--resume"))


def _latest_run(spec: Spec, store: Store, retry_errors: bool) -> list[ExperimentRecord]:
    """The newest run of this spec that is unfinished (or, to retry errors, any run)."""
    group = latest_run(
        store,
        prefix=spec.experiment_prefix,
        spec_path=spec.source,
        statuses=None if retry_errors else UNFINISHED,
    )
    if not group:
        what = "experiment" if retry_errors else "unfinished experiment"
        raise UserError(
            f"no {what} of {spec.source} to resume in {store.path}",
            hint="run it without --resume, or name one: --resume EXPERIMENT",
        )
    return group


def _refuse_changes(spec: Spec, experiment: ExperimentRecord) -> None:
    """A changed spec or dataset would mix two experiments' results in one table."""
    from agenteval_cli.data.examples import dataset_hash

    if experiment.spec_hash and experiment.spec_hash != spec.content_hash:
        raise UserError(
            f"the spec changed since {experiment.name} started (its content hash differs); "
            "resuming would mix results of two different experiments",
            file=spec.source,
            hint="restore the spec, or run without --resume to start a new experiment",
        )
    path = spec.dataset.path
    if (
        experiment.dataset_hash
        and path is not None
        and dataset_hash(path) != experiment.dataset_hash
    ):
        raise UserError(
            f"the dataset changed since {experiment.name} started (its content hash differs); "
            "resuming would mix results of two different datasets",
            file=path,
            hint="restore the file, or run without --resume to start a new experiment",
        )


def remaining(run: PreparedRun) -> dict[str, int]:
    """Calls a resumed run still has to make, per target (for its progress bars)."""
    left = {}
    for target in run.targets:
        done = (run.done or {}).get(target.name, {})
        kept = sum(1 for errored in done.values() if not (errored and run.retry_errors))
        left[target.name] = run.total_per_target - kept
    return left


def _target_changes(experiment: ExperimentRecord) -> list[str]:
    """One line when the target's files or declared variables changed since the experiment
    started: its results will mix the answers of two versions (experiments started before
    fingerprints were kept say nothing)."""
    if not experiment.target_fingerprint:
        return []
    from agenteval_cli.execution.fingerprint import Fingerprint

    changed = Fingerprint.from_json(experiment.target_fingerprint).changes()
    if not changed:
        return []
    return [
        f"target {experiment.target!r}: {', '.join(changed)} since {experiment.name} started; "
        "its results will mix answers of two versions of the target (run without --resume "
        "to start a new experiment)"
    ]
