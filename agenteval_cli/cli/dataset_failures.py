"""``agenteval dataset add-failures``: every routing error becomes a new example to review.

The failed examples of an experiment (an error, or a score below its threshold; with no
thresholds, routing or coverage below 1 or a ping-pong) are appended to a .jsonl dataset
with their ids, the failure and the agent path in ``metadata``, so a reviewer can correct
the expectations before the file joins the eval set. Ids already in the file are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agenteval_cli.cli.common import DEFAULT_STORE, DebugOption, StoreOption, stdout, user_errors
from agenteval_cli.cli.dataset import dataset_app
from agenteval_cli.metrics.info import NA

if TYPE_CHECKING:
    from agenteval_cli.metrics.catalog import Catalog


@dataset_app.command("add-failures")
def add_failures(
    experiment: Annotated[
        str,
        typer.Argument(
            metavar="EXPERIMENT",
            help="A target name (its latest experiment), an experiment name, "
            "or a 'run --json' file.",
        ),
    ],
    to: Annotated[
        Path, typer.Option("--to", metavar="PATH", help="The .jsonl dataset to append to.")
    ],
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Append the failed examples of EXPERIMENT to a .jsonl dataset, for review.

    Example: agenteval dataset add-failures swarm --to datasets/review.jsonl"""
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.core.records import OK
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.gating.examples import checks_for, example_checks, no_answer
    from agenteval_cli.results import sources
    from agenteval_cli.store.results import strict_json

    with user_errors(debug):
        if to.suffix.lower() != ".jsonl":
            raise UserError(
                f"cannot append to {to.suffix or to.name!r} files",
                file=to,
                hint="give a .jsonl file (one example per line); it is created if missing",
            )
        loaded = sources.load([experiment], store_path)
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
            skipped = f" ({len(existing)} already there)" if existing else ""
            line = f"{to}: no failed example of {side.name} to add{skipped}; nothing written"
            stdout().print(console_text(line), highlight=False, markup=False)
            return
        to.parent.mkdir(parents=True, exist_ok=True)
        needs_newline = to.exists() and to.stat().st_size and not to.read_bytes().endswith(b"\n")
        with to.open("a", encoding="utf-8") as handle:
            if needs_newline:
                handle.write("\n")
            for row in rows:  # strict JSON, as --json: null for NaN, no known secret
                handle.write(strict_json(row) + "\n")
    skipped = f", {len(existing)} already there" if existing else ""
    line = f"{to}: appended {len(rows)} failed example(s) of {side.name}{skipped}"
    stdout().print(console_text(line), highlight=False, markup=False)


def _shown(catalog: Catalog, key: str, value: float | None) -> str:
    """A failing example's value: dollars as money (never ``9.3e-05``), others to 3 digits."""
    if value is None:
        return NA
    return catalog.fmt(key, value) if catalog.info(key).format == "money" else f"{value:.3g}"
