"""``agenteval dataset ...``: dataset files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import app, stdout, user_errors

dataset_app = typer.Typer(help="Check and manage datasets.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


@dataset_app.command("validate")
def dataset_validate(
    path: Annotated[Path, typer.Argument(help="A .jsonl, .json, .yaml or .csv dataset.")],
) -> None:
    """Check a dataset file offline, with the same checks a run makes."""
    from agenteval_cli.datasets import dataset_hash, load_examples

    with user_errors():
        examples = load_examples(path)
        stdout().print(
            f"{path}: {len(examples)} examples, all valid (sha256 {dataset_hash(path)[:12]})",
            highlight=False,
        )
