"""Every command's ``--help`` as text: the source of docs/commands.md's reference.

The reference is generated from the CLI itself (``make docs`` runs cog over the page and a
test checks it), so an option added to a command is in the docs the moment it exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer.main
import typer.rich_utils
from typer.testing import CliRunner

from agenteval_cli.cli.common import app

WIDTH = 100


def command_paths() -> Iterator[tuple[str, ...]]:
    """Every visible command, groups before their subcommands, in ``--help``'s order."""
    root = typer.main.get_command(app)

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if not hasattr(command, "list_commands"):
            return
        ctx = command.make_context("agenteval", ["--help"], resilient_parsing=True)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, (*path, name))

    yield from walk(root, ())


def help_text(path: tuple[str, ...]) -> str:
    """``agenteval PATH --help`` as a terminal ``WIDTH`` columns wide without colour prints it."""
    env: dict[str, str | None] = {"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": str(WIDTH)}
    env |= {name: None for name in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS")}
    # Typer reads its width and colour switches once, when rich_utils is imported.
    saved = typer.rich_utils.MAX_WIDTH, typer.rich_utils.FORCE_TERMINAL
    typer.rich_utils.MAX_WIDTH, typer.rich_utils.FORCE_TERMINAL = WIDTH, False
    try:
        result = CliRunner().invoke(app, [*path, "--help"], prog_name="agenteval", env=env)
    finally:
        typer.rich_utils.MAX_WIDTH, typer.rich_utils.FORCE_TERMINAL = saved
    if result.exit_code != 0:
        raise RuntimeError(f"agenteval {' '.join(path)} --help exited {result.exit_code}")
    lines = [line.rstrip() for line in result.output.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def markdown_reference() -> str:
    """One section per command, its help in a code block: docs/commands.md's reference."""
    sections = []
    for path in command_paths():
        title = " ".join(("agenteval", *path))
        sections.append(f"### `{title}`\n\n```\n{help_text(path)}```\n")
    return "\n".join(sections)
