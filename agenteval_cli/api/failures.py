"""Failed examples of an experiment appended to a dataset for review, from Python:
:func:`add_failures` (``agenteval dataset add-failures``).

The failed examples (an error, or a score below its threshold; with no thresholds, routing
or coverage below 1 or a ping-pong) are appended to a .jsonl dataset with their ids, the
failure and the agent path in ``metadata``, so a reviewer can correct the expectations
before the file joins the eval set. Ids already in the file are skipped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.metrics.info import NA

if TYPE_CHECKING:
    from agenteval_cli.metrics.catalog import Catalog
    from agenteval_cli.store.db import Store


@dataclass(frozen=True)
class AddedFailures:
    """What :func:`add_failures` did: the experiment read, the rows appended (0: nothing
    was written) and the ids the file already had."""

    experiment: str
    appended: int
    existing: int


def add_failures(
    experiment: str | Path, to: str | Path, *, store: str | Path | Store | None = None
) -> AddedFailures:
    """Append the failed examples of ``experiment`` (a stored one's name, or a ``run
    --json`` file) to the .jsonl dataset ``to`` (made if missing)."""
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.core.records import OK
    from agenteval_cli.gating.examples import checks_for, example_checks, no_answer
    from agenteval_cli.results import sources
    from agenteval_cli.store import find_store
    from agenteval_cli.store.results import strict_json

    to = Path(to)
    if to.suffix.lower() != ".jsonl":
        raise UserError(
            f"cannot append to {to.suffix or to.name!r} files",
            file=to,
            hint="give a .jsonl file (one example per line); it is created if missing",
        )
    loaded = sources.load([str(experiment)], find_store(Path.cwd()) if store is None else store)
    if len(loaded) != 1:
        raise UserError(
            f"{experiment} holds {len(loaded)} experiments",
            hint="name one experiment, e.g. 'agenteval experiments' lists them",
        )
    side = loaded[0]
    if not side.has_traces:
        raise UserError(
            f"{experiment} is a baseline file without inputs",
            hint="give a stored experiment or a 'run --json' file",
        )
    existing: set[str] = set()
    if to.exists() and to.stat().st_size:
        from agenteval_cli.data.examples import load_examples

        existing = {e.id for e in load_examples(to)}
    applied = checks_for(side, side.thresholds)
    rows = []
    for example_id, runs in side.by_example().items():
        checks = example_checks(runs, applied)
        failed = [c for c in checks if not c.passed]
        # an errored or interrupted repetition fails the example: its reason is why
        errors = list(dict.fromkeys(no_answer(r) for r in runs if r.status != OK))
        if (not failed and not errors) or example_id in existing:
            continue
        reasons = errors or [
            f"{c.key} = {c.shown(value=_shown(side.catalog, c.key, c.value))}"
            f" (expected {c.threshold})" + (f": {c.comment}" if c.comment else "")
            for c in failed
        ]
        rows.append(
            {
                "id": example_id,
                "inputs": runs[0].inputs,
                "outputs": runs[0].reference,
                "metadata": {
                    "source": "agenteval dataset add-failures",
                    "experiment": side.name,
                    "target": side.target,
                    "failure": "; ".join(reasons),
                    "agent_path": runs[0].agent_path,
                    "review": "pending",
                },
            }
        )
    if not rows:  # an empty file would be a dataset that validate rejects
        return AddedFailures(side.name, 0, len(existing))
    to.parent.mkdir(parents=True, exist_ok=True)
    needs_newline = to.exists() and to.stat().st_size and not to.read_bytes().endswith(b"\n")
    with to.open("a", encoding="utf-8") as handle:
        if needs_newline:
            handle.write("\n")
        for row in rows:  # strict JSON, as --json: null for NaN, no known secret
            handle.write(strict_json(row) + "\n")
    return AddedFailures(side.name, len(rows), len(existing))


def _shown(catalog: Catalog, key: str, value: float | None) -> str:
    """A failing example's value: dollars as money (never ``9.3e-05``), others to 3 digits."""
    if value is None:
        return NA
    return catalog.fmt(key, value) if catalog.info(key).format == "money" else f"{value:.3g}"
