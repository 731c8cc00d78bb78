"""``agenteval evaluators ...``: what a spec can name, and how to configure it."""

from __future__ import annotations

from typing import Annotated

import typer

from agenteval_cli.cli.common import app, stdout, user_errors

evaluators_app = typer.Typer(help="The evaluators a spec can name.", no_args_is_help=True)
app.add_typer(evaluators_app, name="evaluators")

COMMON_OPTIONS = (
    ("type", "registry entry, when name is your own (e.g. type: llm_judge)"),
    ("sample", "score only this seeded share of the examples, e.g. 0.25"),
    ("seed", "seed of the sample (default 0)"),
)


@evaluators_app.command("list")
def evaluators_list() -> None:
    """Every evaluator a spec can name, with what it reads.

    Example: agenteval evaluators list"""
    from rich.table import Table

    from agenteval_cli.evaluators import REGISTRY

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
    import inspect

    from rich.markup import escape

    import agenteval_cli.evaluators  # noqa: F401 (registers every family)
    from agenteval_cli.evaluators.registry import lookup

    with user_errors():
        info = lookup(name)
    out = stdout()
    out.print(f"[bold]{info.name}[/] ({info.family}): {escape(info.description)}", highlight=False)
    out.print(f"reads: {escape(info.reads)}", highlight=False)
    keys = ", ".join(f"{m.key} ({m.format}, {m.direction} is better)" for m in info.metrics)
    if info.name == "retrieval":
        keys = f"one key per metric and k, and {keys}"
    if info.name in ("llm_judge", "custom", "trajectory_judge"):
        keys = "the evaluator's name (label, direction, format: see docs/evaluators.md)"
    out.print(f"scores: {escape(keys)}", highlight=False)
    doc = inspect.getdoc(info.factory)
    if doc:
        out.print(escape(doc), highlight=False)
    out.print("[bold]options[/]:")
    options = info.options()
    if not options:
        out.print("  (none)")
    for option, default in options:
        shown = "required" if default is inspect.Parameter.empty else f"default {default!r}"
        out.print(f"  {option}: {escape(shown)}", highlight=False)
    for option, text in COMMON_OPTIONS:
        out.print(f"  {option}: {escape(text)}", highlight=False)
    out.print("[bold]example[/]:")
    out.print("evaluators:", highlight=False)
    for line in info.example.splitlines():
        out.print(f"  {escape(line)}", highlight=False)
