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
