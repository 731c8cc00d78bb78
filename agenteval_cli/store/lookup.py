"""Finding stored experiments by the names users type: one rule for every command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.store.db import ExperimentRecord, Store


@contextmanager
def open_store(path: Path, *, write: bool = False) -> Iterator[Store]:
    """An existing store; a missing one is a UserError rather than an empty new file.

    Opened read-only, so the caller never alters it, unless ``write``."""
    if not path.exists():
        raise UserError(
            f"no experiment store at {path}",
            hint="run 'agenteval run SPEC' first, or pass --store",
        )
    with Store(path, readonly=not write) as store:
        yield store


def resolve_experiment(store: Store, name: str, *, option: str | None = None) -> ExperimentRecord:
    """A target name (its latest experiment), an experiment name, id or unique prefix.

    ``option`` names the command-line option the name came from, for the error."""
    latest = store.latest_experiment(name)
    if latest is not None:
        return latest
    try:
        return store.experiment(name)
    except KeyError:
        experiments = store.experiments()
        known = [e.target for e in experiments] + [e.name for e in experiments]
        where = f"{option} {name!r}: no" if option else "no"
        raise UserError(
            f"{where} target or experiment named {name!r} in {store.path}"
            if not option
            else f"{where} target or experiment of that name in {store.path}",
            hint=did_you_mean(name, known) or "see 'agenteval experiments'",
        ) from None
