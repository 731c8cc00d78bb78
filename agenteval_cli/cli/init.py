"""``agenteval init``: a spec, a three-row dataset and an example target that run as they are.

The files are templates shipped with the package (``cli/scaffold/``). Nothing is ever
overwritten: when any of the files exists, none is written."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import app, user_errors

SCAFFOLD = Path(__file__).with_name("scaffold")
SCHEMA = "agenteval.schema.json"  # beside the spec, so an editor checks it offline
TEMPLATES = ("agenteval.yaml", "dataset.jsonl", "target.py")  # scaffold/NAME.tmpl
FILES = (*TEMPLATES, SCHEMA)
# The spec's first line: the YAML language server (VS Code, Neovim, ...) reads its schema
# from the file beside it.
SCHEMA_LINE = f"# yaml-language-server: $schema={SCHEMA}\n"


@app.command()
def init(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="[DIR]",
            help="Where to write the files (created if missing).",
            show_default=False,
        ),
    ] = Path("."),
) -> None:
    """Start an experiment: write agenteval.yaml, dataset.jsonl and target.py into DIR.

    Beside them, agenteval.schema.json: the spec's first line points editors at it.

    Example: agenteval init evals && agenteval run evals/agenteval.yaml"""
    from agenteval_cli.core.errors import UserError

    with user_errors():
        existing = [directory / name for name in FILES if (directory / name).exists()]
        if existing:
            raise UserError(
                f"{existing[0]} already exists; nothing was written",
                hint="choose another directory, or move the file away",
            )
        if directory.exists() and not directory.is_dir():
            raise UserError(f"{directory} is not a directory", hint="give a directory")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for name in FILES:
                text = _contents(name)
                with (directory / name).open("x", encoding="utf-8") as handle:
                    handle.write(text)
        except OSError as exc:
            raise UserError(
                f"cannot write {exc.filename or directory}: {exc.strerror}",
                hint="choose a directory you can write to",
            ) from None
    for name in FILES:  # plain lines: a path is never wrapped or read as markup
        typer.echo(f"wrote {directory / name}")
    spec = directory / "agenteval.yaml"
    typer.echo(f"next: agenteval run {spec}")
    typer.echo(f"then point its targets at your graph (see {directory / 'target.py'})")


def _contents(name: str) -> str:
    if name == SCHEMA:
        from agenteval_cli.cli.schema import schema_text

        return schema_text()
    text = (SCAFFOLD / f"{name}.tmpl").read_text(encoding="utf-8")
    return SCHEMA_LINE + text if name == "agenteval.yaml" else text
