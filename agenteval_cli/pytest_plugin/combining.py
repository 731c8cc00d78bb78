"""The end of a pytest session: its runs combined into the project's store, and the lines
the terminal summary shows of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli import api
from agenteval_cli.core.errors import UserError
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.pytest_plugin.session import SessionRuns


def combine_session(runs: SessionRuns, stores: list[Path]) -> None:
    """Every process's runs into one experiment per target of each spec, in the store
    asked for (the project's by default); the reports, or the error, kept on ``runs``."""
    out = runs.store or runs.folder / find_store(runs.folder)
    try:
        runs.reports = api.combine(stores, store=out, session=runs.uid)
    except UserError as exc:
        runs.error = f"{exc.format()} (the runs are kept in {runs.parts})"
        return
    if runs.gate:
        from agenteval_cli.pytest_plugin.evals import report_problems

        for report in runs.reports:
            runs.problems += report_problems(report)


Line = tuple[str, dict[str, Any]]


def summary_lines(runs: SessionRuns) -> Iterator[Line]:
    """Each combined experiment with its result count and store, then what to know."""
    if runs.error is not None:
        yield f"not stored: {runs.error}", {"red": True}
        return
    for report in runs.reports:
        yield report.title, {"bold": True}
        for experiment in report.experiments:
            yield (
                f"  {experiment.name}: {experiment.results} result(s), {experiment.status}",
                {},
            )
        yield f"  in {_shown(report.store, runs.folder)}", {}
        for note in report.notes:
            yield f"  {note}", {"yellow": True}
        for warning in report.warnings:
            yield f"  {warning}", {"red": True}
        for errors in report.errors:
            if errors.errored:
                yield (
                    f"  {errors.target}: {errors.errored} of {errors.calls} {errors.unit} failed",
                    {"yellow": True},
                )
    if runs.gate:
        if runs.problems:
            yield f"gate failed: {len(runs.problems)} problem(s)", {"red": True, "bold": True}
            for problem in runs.problems:
                yield f"  {problem}", {"red": True}
        elif any(r.spec.thresholds or r.spec.baseline for r in runs.reports):
            yield "gate passed", {"green": True, "bold": True}
        else:  # nothing but the runs' own failures was checked: say so, not "passed"
            yield (
                "gate: no thresholds or baseline in the spec; the runs finished within "
                "max_error_rate",
                {"yellow": True},
            )


def _shown(path: Path, folder: Path) -> Path:
    """``path`` from where pytest was started, when it is below it."""
    try:
        return path.resolve().relative_to(folder.resolve())
    except ValueError:
        return path
