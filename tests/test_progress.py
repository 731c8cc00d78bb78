"""Progress where there is no terminal: lines in the log instead of bars."""

from __future__ import annotations

import io

from rich.console import Console

from agenteval_cli.cli import progress
from agenteval_cli.core.records import Result, Trace


def result(error: str | None = None) -> Result:
    return Result("e", 0, {}, Trace(), error=error)


def test_a_log_gets_a_line_per_finished_target_and_periodic_totals(monkeypatch):
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)  # every result is "due"
    with progress.target_progress(console, {"a": 2, "b": 1}) as tracker:
        tracker.update("a", result())
        tracker.update("b", result("boom"))
        tracker.update("a", result())
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("a 1/2 (0 errors) · b 0/1 (0 errors) · ")
    assert lines[1:] == ["b 1/1 (1 errors) · finished", "a 2/2 (0 errors) · finished"]


def test_no_periodic_line_before_the_interval(monkeypatch):
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with progress.target_progress(console, {"a": 3}) as tracker:
        tracker.update("a", result())
        tracker.update("a", result())
        tracker.update("a", result())
    assert out.getvalue().splitlines() == ["a 3/3 (0 errors) · finished"]


def test_calls_done_before_a_resume_count_from_the_start():
    """3 calls in all, 2 made before the resume: the log reads 3/3 after the one left."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with progress.target_progress(console, {"a": 3}, {"a": 2}) as tracker:
        tracker.update("a", result())
    assert out.getvalue().splitlines() == ["a 3/3 (0 errors) · finished"]


def test_a_resumed_bar_starts_at_the_calls_done():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with progress.target_progress(console, {"a": 150}, {"a": 36}) as tracker:
        [task] = tracker.progress.tasks
        assert (task.completed, task.total) == (36, 150)
        tracker.update("a", result())
        tracker.show()
        assert tracker.progress.tasks[0].completed == 37
