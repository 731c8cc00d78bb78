"""A Rich progress bar per target: done/total, errors, elapsed and ETA."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agenteval_cli.records import Result


class TargetProgress:
    """Tracks one bar per target; ``update`` is the runner's result hook."""

    def __init__(self, progress: Progress, totals: dict[str, int]) -> None:
        self.progress = progress
        self.errors = dict.fromkeys(totals, 0)
        self.tasks: dict[str, TaskID] = {
            name: progress.add_task(name, total=total, errors=0) for name, total in totals.items()
        }

    def update(self, target: str, result: Result) -> None:
        if result.error is not None:
            self.errors[target] += 1
        self.progress.update(self.tasks[target], advance=1, errors=self.errors[target])


@contextmanager
def target_progress(console: Console, totals: dict[str, int]) -> Iterator[TargetProgress]:
    progress = Progress(
        TextColumn("[bold]{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[red]{task.fields[errors]} errors"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )
    with progress:
        yield TargetProgress(progress, totals)
