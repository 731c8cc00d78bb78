"""``agenteval evaluators ...``: what a spec can name, and how to configure it."""

from __future__ import annotations

from typing import Annotated

import typer

from agenteval_cli.cli.common import app, stdout, user_errors

evaluators_app = typer.Typer(help="The evaluators a spec can name.", no_args_is_help=True)
app.add_typer(evaluators_app, name="evaluators")


@evaluators_app.command("list")
def evaluators_list(
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown", help="Print the full reference as Markdown (docs/evaluator-reference.md)."
        ),
    ] = False,
) -> None:
    """Every evaluator a spec can name, with what it reads.

    Example: agenteval evaluators list"""
    from rich.table import Table

    from agenteval_cli.evaluators import REGISTRY

    if markdown:
        from agenteval_cli.evaluators.reference import markdown as reference

        typer.echo(reference(REGISTRY.values()), nl=False)
        return
    table = Table("name", "family", "reads", "description")
    for info in sorted(REGISTRY.values(), key=lambda i: (i.family, i.name)):
        label = f"{info.name} (dataset)" if info.summary else info.name
        table.add_row(label, info.family, info.reads, info.description)
    stdout().print(table)


@evaluators_app.command("show")
def evaluators_show(
    name: Annotated[str, typer.Argument(help="An evaluator name from 'evaluators list'.")],
) -> None:
    """One evaluator: what it scores, its options with defaults, and a YAML example.

    Example: agenteval evaluators show trajectory_match"""
    from rich.markup import escape

    import agenteval_cli.evaluators  # noqa: F401 (registers every family)
    from agenteval_cli.evaluators.reference import COMMON_OPTIONS, describe, option_text
    from agenteval_cli.evaluators.registry import lookup

    with user_errors():
        info = describe(lookup(name))
    out = stdout()
    out.print(f"[bold]{info.name}[/] ({info.family}): {escape(info.description)}", highlight=False)
    out.print(f"reads: {escape(info.reads)}", highlight=False)
    out.print(f"scores: {escape(info.scores)}", highlight=False)
    out.print(f"without an answer: {escape(info.without_answer)}", highlight=False)
    if info.details:
        out.print(escape(info.details), highlight=False)
    out.print("[bold]options[/]:")
    if not info.options:
        out.print("  (none)")
    for option in info.options:
        out.print(f"  {option.name}: {escape(option_text(option))}", highlight=False)
    for option_name, text in COMMON_OPTIONS:
        out.print(f"  {option_name}: {escape(text)}", highlight=False)
    out.print("[bold]example[/]:")
    out.print("evaluators:", highlight=False)
    for line in info.example.splitlines():
        out.print(f"  {escape(line)}", highlight=False)
