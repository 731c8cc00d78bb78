"""Finding stored experiments by the names users type: one rule for every command."""

from __future__ import annotations

from collections.abc import Container, Iterator
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


SHOWN_MATCHES = 5


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
        matches = [e.name for e in experiments if e.name.startswith(name) or e.id.startswith(name)]
        if len(matches) > 1:
            shown = ", ".join(matches[:SHOWN_MATCHES])
            more = (
                f" and {len(matches) - SHOWN_MATCHES} more" if len(matches) > SHOWN_MATCHES else ""
            )
            where = f"{option} {name!r}" if option else repr(name)
            raise UserError(
                f"{where} is ambiguous: it begins {len(matches)} experiment names: {shown}{more}",
                hint="give more of the name, or the target's name for its latest experiment",
            ) from None
        known = [e.target for e in experiments] + [e.name for e in experiments]
        text = (
            f"{option} {name!r}: no target or experiment of that name in {store.path}"
            if option
            else f"no target or experiment named {name!r} in {store.path}"
        )
        raise UserError(
            text,
            hint=did_you_mean(name, known) or "see 'agenteval experiments'",
        ) from None


def run_of(store: Store, experiment: ExperimentRecord) -> list[ExperimentRecord]:
    """The experiments of the run ``experiment`` belongs to (those one ``agenteval run``
    started together), in the order they were started."""
    return store.run_experiments(experiment.run_id) if experiment.run_id else [experiment]


def latest_run(
    store: Store,
    *,
    prefix: str | None = None,
    spec_path: Path | None = None,
    statuses: Container[str] | None = None,
) -> list[ExperimentRecord]:
    """The newest run with this experiment prefix (and, among those, of this spec file when
    one is), whose experiments have one of ``statuses``; [] when there is none."""
    candidates = [
        e
        for e in store.experiments()
        if (prefix is None or e.prefix == prefix) and (statuses is None or e.status in statuses)
    ]
    same_file = [e for e in candidates if spec_path and _same_file(e.spec_path, spec_path)]
    chosen = same_file or candidates
    return run_of(store, chosen[0]) if chosen else []


def _same_file(stored: str | None, source: Path) -> bool:
    if stored is None:
        return False
    try:
        return Path(stored).resolve() == source.resolve()
    except OSError:
        return False
