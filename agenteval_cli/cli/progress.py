"""A Rich progress bar per target: done/total, errors, elapsed and ETA.

Where the output is not a terminal (a CI log), a line every ``LOG_EVERY_S`` seconds and one
per target when it finishes stand in for the bars, so a long run still shows that it moves."""

from __future__ import annotations

import time
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

from agenteval_cli.core.records import Result

LOG_EVERY_S = 10.0


def shown(name: str) -> str:
    """A target name as Rich markup that shows it as written, without control characters."""
    from rich.markup import escape

    from agenteval_cli.core.redact import console_text

    return escape(console_text(name))


class TargetProgress:
    """Tracks one bar per target; ``update`` is the runner's result hook.

    Results are counted at once and shown at most every ``interval_s`` (the bar redraws
    ten times a second anyway), so a fast run does not pay Rich's bookkeeping per result.
    ``done``: calls a resumed run made before, counted as done from the start."""

    def __init__(
        self,
        progress: Progress,
        totals: dict[str, int],
        interval_s: float = 0.05,
        log: Console | None = None,
        done: dict[str, int] | None = None,
    ) -> None:
        self.progress = progress
        self.log = log  # where to write progress lines instead of drawing bars
        self.totals = totals
        self.done = {name: (done or {}).get(name, 0) for name in totals}
        self.started = time.monotonic()
        self._next_log = self.started + LOG_EVERY_S
        self.errors = dict.fromkeys(totals, 0)
        self.tasks: dict[str, TaskID] = {
            name: progress.add_task(shown(name), total=total, completed=self.done[name], errors=0)
            for name, total in totals.items()
        }
        self.interval_s = interval_s
        self._unshown = dict.fromkeys(totals, 0)
        self._next = 0.0

    def update(self, target: str, result: Result) -> None:
        if result.error is not None:
            self.errors[target] += 1
        if self.log is not None:
            self._log_line(target)
            return
        self._unshown[target] += 1
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.interval_s
            self.show()

    def _log_line(self, target: str) -> None:
        self.done[target] += 1
        now = time.monotonic()
        if self.done[target] == self.totals[target]:
            self.log.print(f"{self._status(target)} · finished", highlight=False)  # type: ignore[union-attr]
        elif now >= self._next_log:
            line = " · ".join(self._status(t) for t in self.totals)
            self.log.print(f"{line} · {now - self.started:.0f} s", highlight=False)  # type: ignore[union-attr]
        else:
            return
        self._next_log = now + LOG_EVERY_S

    def _status(self, target: str) -> str:
        done, total, errors = self.done[target], self.totals[target], self.errors[target]
        return f"{shown(target)} {done}/{total} ({errors} errors)"

    def show(self) -> None:
        """Bring every bar up to date."""
        for target, count in self._unshown.items():
            if count:
                self._unshown[target] = 0
                self.progress.update(self.tasks[target], advance=count, errors=self.errors[target])


@contextmanager
def target_progress(
    console: Console, totals: dict[str, int], done: dict[str, int] | None = None
) -> Iterator[TargetProgress]:
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
        log = None if console.is_terminal else console
        tracker = TargetProgress(progress, totals, log=log, done=done)
        try:
            yield tracker
        finally:
            tracker.show()
