"""Baseline files: a small JSON a repository commits, written by ``--save-baseline``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.gating.thresholds import experiment_metrics
from agenteval_cli.results.sources import BASELINE_FORMAT, ExperimentData, from_json_file
from agenteval_cli.store.results import strict_json

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store


def baseline_data(sides: Iterable[ExperimentData], *, git_commit: str | None = None) -> dict:
    """A small JSON a repository can commit: metrics and per-example scores per target."""
    experiments = []
    for side in sides:
        catalog = side.catalog
        keys = catalog.ordered(side.score_keys())
        per_key = {k: side.per_example(k) for k in keys}
        scores = {
            # exact: a mean rounded here could show a digit apart from the run's
            eid: {k: per_key[k][eid] for k in keys if eid in per_key[k]}
            for eid in side.example_ids()
        }
        metrics = {  # timings are the machine's, not the agents': left out
            k: v
            for k, v in experiment_metrics(side).items()
            if catalog.info(k).format != "duration"
        }
        errors = side.per_example_figure("errors")
        kept = (
            {} if errors is None else {"errors": {e: round(v, 9) for e, v in errors.items() if v}}
        )
        experiments.append(
            {
                "name": side.name,
                "target": side.target,
                "dataset_hash": side.dataset_hash,
                "repetitions": side.repetitions,
                "metrics": metrics,
                "catalog": catalog.to_json(),
                "scores": scores,
                # per example with an errored repetition, the share that errored: the gate
                # compares a run's errors with the baseline's example by example
                **kept,
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
        found = read_baseline_file(path)
    else:
        found = sources.load([name], store)
    by_target = {b.target: b for b in found}
    if len(found) == 1 and len(sides) == 1:
        by_target = {sides[0].target: found[0]}
    return by_target


# The largest score a baseline may hold: the gate's means and paired differences of values
# this size (over any realistic number of examples) stay far from float overflow.
LARGEST_SCORE = 1e300


def read_baseline_file(path: Path) -> list[ExperimentData]:
    """The experiments of a baseline file (``--save-baseline`` or ``--json``), each one the
    gate can compare: a UserError naming the file and what is wrong for an experiment with
    no scores (it would pass having compared nothing), or a score that is not a finite
    number of a size the comparison can represent (NaN would pass every test)."""

    found = from_json_file(path)
    for experiment in found:
        problem = _uncomparable(experiment)
        if problem is not None:
            raise _bad_baseline(path, f"experiment {experiment.name!r}: {problem}")
    return found


def _uncomparable(experiment: ExperimentData) -> str | None:
    """Why the gate cannot compare against ``experiment``, or None."""
    scored = False
    for run in experiment.runs:
        for key, value in run.scores.items():
            if value is None:
                continue
            where = f"example {run.example_id!r}: {key}"
            if not isinstance(value, int | float):  # true/false reads as 1/0, as run's do
                return f"{where} is {value!r}, not a number"
            try:
                number = float(value)
            except OverflowError:  # an integer of hundreds of digits
                number = math.inf if value > 0 else -math.inf
            else:
                if not math.isfinite(number):
                    return f"{where} is {value!r}, not a finite number"
            if abs(number) > LARGEST_SCORE:
                return f"{where} is {number:g}, too large to compare (at most {LARGEST_SCORE:g})"
            scored = True
    return None if scored else "no scores: the gate would compare nothing"


def _bad_baseline(path: Path, problem: str) -> Exception:
    from agenteval_cli.core.errors import UserError

    return UserError(
        f"baseline cannot be compared: {problem}",
        file=path,
        hint="write it again with 'agenteval run SPEC --save-baseline FILE'",
    )
