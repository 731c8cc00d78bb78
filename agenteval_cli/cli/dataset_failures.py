"""``agenteval dataset add-failures``: every routing error becomes a new example to review.

The failed examples of an experiment (an error, or a score below its threshold; with no
thresholds, routing or coverage below 1 or a ping-pong) are appended to a .jsonl dataset
with their ids, the failure and the agent path in ``metadata``, so a reviewer can correct
the expectations before the file joins the eval set. Ids already in the file are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import DEFAULT_STORE, DebugOption, StoreOption, stdout, user_errors
from agenteval_cli.cli.dataset import dataset_app


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
    from agenteval_cli.api import add_failures as append_failures
    from agenteval_cli.core.redact import console_text

    with user_errors(debug):
        added = append_failures(experiment, to, store=store_path)
    skipped = f", {added.existing} already there" if added.existing else ""
    if not added.appended:
        skipped = f" ({added.existing} already there)" if added.existing else ""
        line = f"{to}: no failed example of {added.experiment} to add{skipped}; nothing written"
    else:
        line = f"{to}: appended {added.appended} failed example(s) of {added.experiment}{skipped}"
    stdout().print(console_text(line), highlight=False, markup=False)
