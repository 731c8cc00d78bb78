"""``agenteval schema``: the spec's JSON Schema, for an editor to complete and check specs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import app, user_errors


def schema_text() -> str:
    """The schema as the file ``agenteval schema`` and ``agenteval init`` write."""
    from agenteval_cli import api

    return json.dumps(api.spec_schema(), indent=2, ensure_ascii=False) + "\n"


@app.command()
def schema(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the schema to FILE instead of stdout.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print the JSON Schema of a spec: its keys and every built-in evaluator's options.

    An editor reads it from a spec's first line: # yaml-language-server: $schema=FILE

    Example: agenteval schema -o agenteval.schema.json"""
    from agenteval_cli.core.errors import UserError

    text = schema_text()
    if output is None or str(output) == "-":
        typer.echo(text, nl=False)
        return
    with user_errors():
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(
                f"cannot write {output}: {exc.strerror}", hint="choose a path you can write to"
            ) from None
    typer.echo(f"wrote {output}")
