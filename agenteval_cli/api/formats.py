"""The report formats: each one entry of :data:`FORMATS`, its name (the keyword of
:func:`agenteval_cli.api.write_report` and of ``reports=``), file suffix, command-line
option and the renderer that writes it. The commands' report options and ``write_report``
read this list, so a new format is one entry here and its renderer in ``report/``.

Light to import (every command's options are made from it at start-up): a renderer is
imported only when its format is written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenteval_cli.gating.family import CheckOutcome
    from agenteval_cli.gating.verdict import GateFailure
    from agenteval_cli.report.comparison import Comparison


@dataclass(frozen=True)
class ReportInput:
    """What every renderer is given: the comparison of the experiments, the thresholds
    shown, the title and the gate's verdict (its failures and baseline checks)."""

    comparison: Comparison
    thresholds: dict[str, Any]
    title: str
    gate_failures: list[GateFailure] | None = None
    gate_checks: Sequence[CheckOutcome] = field(default_factory=tuple)
    allow_untested: bool = False


@dataclass(frozen=True)
class ReportFormat:
    """One report format: ``write(path, given)`` writes it whole or not at all."""

    name: str  # "html": write_report(html=...), reports={"html": ...}
    suffix: str  # ".html"
    option: str  # "--html", on the commands that write reports after a run
    help: str  # that option's help
    write: Callable[[Path, ReportInput], None]


def _html(path: Path, given: ReportInput) -> None:
    from agenteval_cli.report.html import write_html

    write_html(path, given.comparison, thresholds=given.thresholds, title=given.title)


def _markdown(path: Path, given: ReportInput) -> None:
    from agenteval_cli.report.markdown import write_markdown

    write_markdown(
        path,
        given.comparison,
        gate_failures=given.gate_failures,
        title=given.title,
        gate_checks=given.gate_checks,
        allow_untested=given.allow_untested,
    )


def _junit(path: Path, given: ReportInput) -> None:
    from agenteval_cli.report.junit import write_junit

    write_junit(
        path,
        given.comparison.sides,
        thresholds=given.thresholds,
        gate_checks=given.gate_checks,
        allow_untested=given.allow_untested,
    )


# In the order the commands list their options and write their files.
FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat("html", ".html", "--html", "Write a self-contained HTML report here.", _html),
    ReportFormat(
        "markdown",
        ".md",
        "--markdown",
        "Write a Markdown summary (PR comment, CI summary).",
        _markdown,
    ),
    ReportFormat(
        "junit",
        ".xml",
        "--junit",
        "Write JUnit XML: one case per example × target × check.",
        _junit,
    ),
)


def format_named(name: str) -> ReportFormat:
    """The format of that name; a UserError naming the known ones otherwise."""
    for found in FORMATS:
        if found.name == name:
            return found
    from agenteval_cli.core.errors import UserError

    raise UserError(
        f"no report format {name!r}", hint=f"one of {', '.join(f.name for f in FORMATS)}"
    )
