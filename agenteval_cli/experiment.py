"""Running a spec: load the dataset, targets and evaluators, create one experiment per
target in the store, run them side by side and persist every result as it finishes."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agenteval_cli.errors import UserError
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.records import Example, Result
from agenteval_cli.runner import Runner, RunSettings, WorkItem
from agenteval_cli.spec import Spec
from agenteval_cli.store import ExperimentRecord, Store
from agenteval_cli.targets import Target, adapt, import_object

ProgressHook = Callable[[str, Result], None]


@dataclass
class PreparedRun:
    spec: Spec
    examples: list[Example]
    targets: list[Target]
    evaluators: list[BoundEvaluator]
    experiments: dict[str, ExperimentRecord] = field(default_factory=dict)

    @property
    def total_per_target(self) -> int:
        return len(self.examples) * self.spec.repetitions


def prepare(
    spec: Spec, *, only_targets: list[str] | None = None, limit: int | None = None
) -> PreparedRun:
    """Everything that can fail on bad input fails here, before any target is called."""
    from agenteval_cli.datasets import load_examples

    if spec.dataset.path is None:
        raise UserError("the dataset has no 'path'", file=spec.source, line=spec.line_of("dataset"))
    examples = load_examples(spec.dataset.path)
    if limit is not None:
        examples = examples[:limit]
    return PreparedRun(
        spec=spec,
        examples=examples,
        targets=load_targets(spec, only_targets),
        evaluators=load_evaluators(spec),
    )


def load_targets(spec: Spec, only: list[str] | None = None) -> list[Target]:
    names = [t.name for t in spec.targets]
    for name in only or []:
        if name not in names:
            from agenteval_cli.errors import did_you_mean

            raise UserError(
                f"--target {name!r} is not a target of this spec",
                file=spec.source,
                line=spec.line_of("targets"),
                hint=did_you_mean(name, names) or f"targets: {', '.join(names)}",
            )
    loaded = []
    for target in spec.targets:
        if only and target.name not in only:
            continue
        line = spec.line_of("targets", target.name)
        obj = import_object(target.target, base_dir=spec.base_dir, file=str(spec.source), line=line)
        try:
            loaded.append(
                adapt(
                    obj,
                    name=target.name,
                    import_path=target.target,
                    input_key=target.input_key,
                    initial_state=target.initial_state,
                )
            )
        except TypeError as exc:
            raise UserError(str(exc), file=spec.source, line=line) from None
    return loaded


def load_evaluators(spec: Spec) -> list[BoundEvaluator]:
    from agenteval_cli.evaluators import REGISTRY, build_evaluator

    context = {"pricing": spec.pricing}
    bound = []
    for index, item in enumerate(spec.evaluators):
        fn = build_evaluator(
            item.name,
            item.options,
            context=context,
            file=str(spec.source),
            line=spec.line_of("evaluators", index),
        )
        bound.append(BoundEvaluator(item.name, fn, REGISTRY[item.name].keys))
    return bound


def git_commit(directory: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def start_experiments(run: PreparedRun, store: Store) -> None:
    from agenteval_cli.datasets import dataset_hash

    spec = run.spec
    data_hash = dataset_hash(spec.dataset.path) if spec.dataset.path else None
    commit = git_commit(spec.base_dir)
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
        )


def execute(run: PreparedRun, store: Store, on_result: ProgressHook | None = None) -> None:
    """Run every target; mark each experiment finished, or interrupted if stopped early."""
    if not run.experiments:
        start_experiments(run, store)
    spec = run.spec
    runner = Runner(
        targets=run.targets,
        evaluators=run.evaluators,
        settings=RunSettings(
            concurrency=spec.concurrency, timeout_s=spec.timeout_s, repetitions=spec.repetitions
        ),
    )

    def persist(item: WorkItem, result: Result) -> None:
        store.add_result(run.experiments[item.target.name].id, item.example, result)
        if on_result is not None:
            on_result(item.target.name, result)

    status = "interrupted"
    try:
        asyncio.run(runner.run(runner.work(run.examples), persist))
        status = "finished"
    finally:
        for experiment in run.experiments.values():
            store.finish_experiment(experiment.id, status)
