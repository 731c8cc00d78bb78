"""``agenteval --help`` drawn with a handful of Rich classes, in Typer's own layout.

Typer renders help through ``typer.rich_utils``, whose module-level imports (Markdown with
markdown-it, Traceback with Pygments) cost about as much as the rest of start-up together.
The top-level help needs none of them, so it is drawn here; subcommand help stays Typer's.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from rich.console import Console
from rich.highlighter import RegexHighlighter
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.theme import Theme

# Typer's defaults (typer/rich_utils.py), so both help screens look alike.
_THEME = Theme({"option": "bold cyan", "switch": "bold green", "usage": "yellow"})


class _OptionHighlighter(RegexHighlighter):
    highlights = [  # noqa: RUF012 (the RegexHighlighter protocol)
        r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
        r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
        r"(?P<usage>Usage: )",
    ]


_highlight = _OptionHighlighter()


def _console() -> Console:
    """Typer's help console, honouring the same environment variables."""
    width = os.getenv("TERMINAL_WIDTH")
    force = True if os.getenv("GITHUB_ACTIONS") or os.getenv("FORCE_COLOR") else None
    if os.getenv("PY_COLORS"):
        force = True
    if os.getenv("_TYPER_FORCE_DISABLE_TERMINAL"):
        force = False
    return Console(
        theme=_THEME,
        highlighter=_highlight,
        force_terminal=force,
        width=int(width) if width else None,
    )


def _first_paragraph(text: str) -> str:
    return inspect.cleandoc(text).partition("\f")[0].split("\n\n")[0].replace("\n", " ").strip()


def _grid() -> Table:
    return Table(show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))


def print_help(group: Any, ctx: Any) -> None:
    """Usage, the group's help, its options and every command with its one-line help."""
    console = _console()
    console.print(Padding(_highlight(group.get_usage(ctx)), 1), style="bold")
    if group.help:
        help_text = inspect.cleandoc(group.help).partition("\f")[0]
        first, *rest = help_text.split("\n\n")
        body = [Text.from_markup(first.replace("\n", " ").strip())]
        if rest:
            body += [Text(""), Text.from_markup("\n\n".join(rest), style="dim")]
        for index, part in enumerate(body):
            bottom = 1 if index == len(body) - 1 else 0
            console.print(Padding(part, (0, 1, bottom, 1)))

    options = _grid()
    options.add_column(no_wrap=True)
    options.add_column(no_wrap=True)
    options.add_column(ratio=1)  # the help text takes the spare width, as in Typer's panels
    for param in group.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        long = ",".join(o for o in param.opts if o.startswith("--"))
        short = ",".join(o for o in param.opts if not o.startswith("--"))
        options.add_row(_highlight(long), _highlight(short), Text.from_markup(param.help or ""))
    if options.row_count:
        console.print(Panel(options, border_style="dim", title="Options", title_align="left"))

    commands = [group.get_command(ctx, name) for name in group.list_commands(ctx)]
    commands = [c for c in commands if c is not None and not c.hidden]
    table = _grid()
    table.add_column(
        style="bold cyan", no_wrap=True, width=max((len(c.name) for c in commands), default=0)
    )
    table.add_column("Description", justify="left", no_wrap=False, ratio=10)
    for command in commands:
        text = _first_paragraph(command.short_help or command.help or "")
        table.add_row(Text(command.name), Text.from_markup(text))
    if table.row_count:
        console.print(Panel(table, border_style="dim", title="Commands", title_align="left"))
