"""``agenteval evaluators ...``: what a spec can name."""

from __future__ import annotations

import typer

from agenteval_cli.cli.common import app, stdout

evaluators_app = typer.Typer(help="The evaluators a spec can name.", no_args_is_help=True)
app.add_typer(evaluators_app, name="evaluators")


@evaluators_app.command("list")
def evaluators_list() -> None:
    """Every evaluator a spec can name, with what it reads."""
    from rich.table import Table

    from agenteval_cli.evaluators import REGISTRY

    table = Table("name", "family", "reads", "description")
    for info in sorted(REGISTRY.values(), key=lambda i: (i.family, i.name)):
        table.add_row(info.name, info.family, info.reads, info.description)
    stdout().print(table)
