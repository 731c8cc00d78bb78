"""Judges checked against people: the agreement of stored scores with labelled rows.

Nothing runs: the latest stored run of a spec (or the experiments named) already holds each
result's score and its row's ``outputs.human`` labels
(:mod:`agenteval_cli.results.calibration`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.core.errors import UserError
from agenteval_cli.results.calibration import (
    LABELS_FIELD,
    Calibration,
    calibrate,
    has_labels,
    unmatched_keys,
)
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.results.sources import ExperimentData
    from agenteval_cli.spec.model import Spec


def calibrate_judges(
    spec: str | Path | Spec,
    *,
    experiments: Iterable[str] = (),
    store: str | Path | None = None,
    env_file: str | Path | None = None,
) -> tuple[list[Calibration], list[str]]:
    """Per experiment and labelled score key, the judge's agreement with people; and one
    note per labelled key an experiment never scored. The experiments are the spec's latest
    run unless named; no labelled row is a UserError. The spec's ``.env`` files (or
    ``env_file``) are read for its ``${VAR}``, as a run reads them."""
    from agenteval_cli.api.running import load, spec_env
    from agenteval_cli.results.sources import from_store
    from agenteval_cli.store.lookup import latest_run, open_store, resolve_experiment

    with spec_env(spec, env_file):
        loaded = load(spec)
    path = find_store(Path.cwd()) if store is None else Path(store)
    names = list(experiments)
    with open_store(path) as opened:
        if names:
            records = [resolve_experiment(opened, n, option="--experiment") for n in names]
        else:
            records = latest_run(opened, prefix=loaded.experiment_prefix, spec_path=loaded.source)
        if not records:
            raise UserError(
                f"no run of {loaded.source} in {path}",
                hint=f"run 'agenteval run {loaded.source}' first, or pass --store",
            )
        sides = [from_store(opened, record) for record in records]
    return _calibrated(sides)


def _calibrated(sides: list[ExperimentData]) -> tuple[list[Calibration], list[str]]:
    if not any(has_labels(side.runs) for side in sides):
        names = ", ".join(side.name for side in sides)
        raise UserError(
            f"no row of {names} has outputs.{LABELS_FIELD} labels to check a judge against",
            hint=f'label rows as {{"outputs": {{"{LABELS_FIELD}": {{"<score key>": <value>}}}}}} '
            "and run the spec again",
        )
    found: list[Calibration] = []
    notes: list[str] = []
    for side in sides:
        found += calibrate(side.target, side.name, side.runs)
        notes += [
            f"{side.name}: rows label {key!r}, which no result of it scored"
            for key in unmatched_keys(side.runs)
        ]
    return found, notes
