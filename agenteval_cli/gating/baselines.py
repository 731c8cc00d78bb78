"""Baseline files: a small JSON a repository commits, written by ``--save-baseline``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.gating.thresholds import experiment_metrics
from agenteval_cli.metrics import info as metricinfo
from agenteval_cli.results.sources import BASELINE_FORMAT, ExperimentData
from agenteval_cli.store.results import strict_json

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store


def baseline_data(sides: Iterable[ExperimentData], *, git_commit: str | None = None) -> dict:
    """A small JSON a repository can commit: metrics and per-example scores per target."""
    experiments = []
    for side in sides:
        keys = metricinfo.ordered(side.score_keys())
        per_key = {k: side.per_example(k) for k in keys}
        scores = {
            eid: {k: round(per_key[k][eid], 9) for k in keys if eid in per_key[k]}
            for eid in side.example_ids()
        }
        metrics = {  # timings are the machine's, not the agents': left out
            k: v
            for k, v in experiment_metrics(side).items()
            if metricinfo.info(k).format != "duration"
        }
        experiments.append(
            {
                "name": side.name,
                "target": side.target,
                "dataset_hash": side.dataset_hash,
                "repetitions": side.repetitions,
                "metrics": metrics,
                "scores": scores,
            }
        )
    return {
        "format": BASELINE_FORMAT,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit,
        "experiments": experiments,
    }


def save_baseline(path: Path, sides: Iterable[ExperimentData], *, git_commit: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    data = baseline_data(sides, git_commit=git_commit)
    tmp.write_text(strict_json(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_baselines(
    name: str, store: Store | Path, sides: list[ExperimentData], *, from_spec: bool
) -> dict[str, ExperimentData]:
    """Baseline experiments by the target they are a baseline for: a baseline file, or a
    stored experiment (a target's latest). A spec's baseline file not written yet
    (``from_spec``) is no baseline; one named on the command line must exist."""
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.results import sources

    if sources.looks_like_file(name):
        path = Path(name)
        if not path.is_file():
            if from_spec:
                return {}
            raise UserError(
                f"baseline file not found: {path}",
                hint="write one with 'agenteval run SPEC --save-baseline FILE'",
            )
        found = sources.from_json_file(path)
    else:
        found = sources.load([name], store)
    by_target = {b.target: b for b in found}
    if len(found) == 1 and len(sides) == 1:
        by_target = {sides[0].target: found[0]}
    return by_target
