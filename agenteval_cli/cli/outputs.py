"""What ``agenteval run`` does after the table: reports, the baseline file and the CI gate.

Kept apart from the run command so ``agenteval report`` writes the same files the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agenteval_cli.cli.common import stdout

if TYPE_CHECKING:
    from agenteval_cli.gating.verdict import GateFailure
    from agenteval_cli.report.comparison import Comparison
    from agenteval_cli.results.sources import ExperimentData
    from agenteval_cli.spec.model import Spec
    from agenteval_cli.store.db import Store

HtmlOption = Annotated[
    Path | None,
    typer.Option("--html", metavar="PATH", help="Write a self-contained HTML report here."),
]
MarkdownOption = Annotated[
    Path | None,
    typer.Option(
        "--markdown", metavar="PATH", help="Write a Markdown summary (PR comment, CI summary)."
    ),
]
JunitOption = Annotated[
    Path | None,
    typer.Option(
        "--junit", metavar="PATH", help="Write JUnit XML: one case per example × target × check."
    ),
]
BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        metavar="FILE|EXPERIMENT",
        help="Fail (exit 1) when a metric is significantly worse than this baseline.",
    ),
]
SaveBaselineOption = Annotated[
    Path | None,
    typer.Option("--save-baseline", metavar="FILE", help="Write this run as a baseline JSON."),
]


@dataclass
class RunOutputs:
    html: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    baseline: str | None = None
    save_baseline: Path | None = None


def write_reports(
    comparison: Comparison,
    *,
    html: Path | None,
    markdown: Path | None,
    junit: Path | None,
    thresholds: dict,
    gate_failures: list[GateFailure] | None = None,
    title: str = "agenteval report",
) -> None:
    """Each requested file, written whole or not at all; its path is echoed on stderr."""
    from agenteval_cli.cli.common import stderr

    err = stderr()
    if html is not None:
        from agenteval_cli.report.html import write_html

        write_html(html, comparison, thresholds=thresholds, title=title)
        err.print(f"wrote {html}", highlight=False)
    if markdown is not None:
        from agenteval_cli.report.markdown import write_markdown

        write_markdown(markdown, comparison, gate_failures=gate_failures, title=title)
        err.print(f"wrote {markdown}", highlight=False)
    if junit is not None:
        from agenteval_cli.report.junit import write_junit

        write_junit(junit, comparison.sides, thresholds=thresholds)
        err.print(f"wrote {junit}", highlight=False)


def load_baselines(
    name: str, store: Store, sides: list[ExperimentData], *, from_spec: bool
) -> dict[str, ExperimentData]:
    """Baseline experiments by the target they are a baseline for."""
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.results import sources

    if sources.looks_like_file(name):
        path = Path(name)
        if not path.is_file():
            if from_spec:
                return {}
            raise UserError(
                f"baseline file not found: {path}",
                hint="write one with 'agenteval run SPEC --save-baseline FILE'",
            )
        found = sources.from_json_file(path)
    else:
        from agenteval_cli.cli.common import resolve_experiment

        found = [sources.from_store(store, resolve_experiment(store, name))]
    by_target = {b.target: b for b in found}
    if len(found) == 1 and len(sides) == 1:
        by_target = {sides[0].target: found[0]}
    return by_target


def finish_run(store: Store, experiment_ids: list[str], spec: Spec, outputs: RunOutputs) -> bool:
    """Write what was asked for, apply the gate and print its verdict; False if it failed."""
    from agenteval_cli.gating.baselines import save_baseline
    from agenteval_cli.gating.verdict import evaluate
    from agenteval_cli.report import comparison
    from agenteval_cli.results import sources

    sides = [sources.from_store(store, store.experiment(i)) for i in experiment_ids]
    out = stdout()
    baseline_name = outputs.baseline or (str(spec.baseline) if spec.baseline else None)
    baselines: dict[str, ExperimentData] = {}
    if baseline_name is not None:
        baselines = load_baselines(baseline_name, store, sides, from_spec=outputs.baseline is None)
        if not baselines:
            out.print(
                f"  [yellow]no baseline yet at {baseline_name}[/]: write one with "
                f"--save-baseline {baseline_name}",
                highlight=False,
            )
    failures = evaluate(
        sides,
        thresholds=spec.thresholds,
        baselines=baselines,
        max_regression=spec.max_regression,
    )
    if any((outputs.html, outputs.markdown, outputs.junit)):
        result = comparison.build(sides, allow_different_data=True)
        write_reports(
            result,
            html=outputs.html,
            markdown=outputs.markdown,
            junit=outputs.junit,
            thresholds=spec.thresholds,
            gate_failures=failures,
            title=f"{spec.experiment_prefix} · {' vs '.join(s.target for s in sides)}",
        )
    if outputs.save_baseline is not None:
        save_baseline(outputs.save_baseline, sides, git_commit=sides[0].git_commit)
        out.print(f"  baseline saved: {outputs.save_baseline}", highlight=False)
    print_gate(failures, checked=bool(spec.thresholds or baselines))
    return not failures


def print_gate(failures: list[GateFailure], *, checked: bool) -> None:
    from agenteval_cli.core.redact import console_text

    out = stdout()
    if not checked:
        return
    if not failures:
        out.print("  [bold green]gate passed[/]: thresholds met, no significant regression")
        return
    out.print(f"  [bold red]gate failed[/]: {len(failures)} problem(s)")
    for failure in failures:
        line = console_text(f"    {failure.target}: {failure.message}")
        out.print(line, highlight=False, markup=False)


@dataclass
class ErrorReason:
    kind: str  # the exception's name, or the evaluator key
    count: int
    first: str  # the first full message of this kind, in the order results were stored
    same: bool  # every message of this kind is ``first``


@dataclass
class TargetErrors:
    target: str
    calls: int
    errored: int
    reasons: list[ErrorReason]
    # evaluator key -> (results it scored, results it failed on, first failure's comment)
    evaluators: dict[str, tuple[int, int, str]]

    @property
    def rate(self) -> float:
        return self.errored / self.calls if self.calls else 0.0

    def evaluators_failing_everywhere(self) -> list[str]:
        return [key for key, (n, failed, _) in self.evaluators.items() if n and failed == n]


def collect_errors(store: Store, experiment_id: str, target: str) -> TargetErrors:
    """The errored calls of an experiment grouped by exception, and its evaluators' failures,
    read with a few grouped queries (no result is loaded whole)."""
    db = store.db
    calls, errored = db.execute(
        "SELECT COUNT(*), COUNT(error) FROM results WHERE experiment_id = ?", (experiment_id,)
    ).fetchone()
    by_kind: dict[str, list[tuple[int, int, str]]] = {}
    rows = db.execute(
        "SELECT error, COUNT(*), MIN(id) FROM results WHERE experiment_id = ? AND error IS NOT"
        " NULL GROUP BY error",
        (experiment_id,),
    )
    for message, count, first_id in rows:
        head = message.split(":", 1)[0]
        kind = head if head.isidentifier() else message  # "KeyError: ..." -> KeyError
        by_kind.setdefault(kind, []).append((first_id, count, message))
    ranked = []
    for kind, messages in by_kind.items():
        messages.sort()  # by first appearance
        count = sum(c for _, c, _ in messages)
        reason = ErrorReason(kind, count, messages[0][2], len(messages) == 1)
        ranked.append((-count, messages[0][0], reason))
    reasons = [reason for *_, reason in sorted(ranked, key=lambda r: r[:2])]
    evaluators: dict[str, tuple[int, int, str]] = {}
    scored = db.execute(
        "SELECT json_extract(s.value, '$[0]'), COUNT(*),"
        " SUM(json_extract(s.value, '$[1]') IS NULL"
        "     AND json_extract(s.value, '$[2]') LIKE 'evaluator %failed: %'),"
        " MIN(CASE WHEN json_extract(s.value, '$[1]') IS NULL"
        "     AND json_extract(s.value, '$[2]') LIKE 'evaluator %failed: %' THEN r.id END)"
        " FROM results r, json_each(r.scores_json) s"
        " WHERE r.experiment_id = ? AND r.error IS NULL AND r.scores_json IS NOT NULL"
        " GROUP BY 1 ORDER BY 1",
        (experiment_id,),
    )
    for key, count, failed, first_id in scored:
        if not failed:
            continue
        (comment,) = db.execute(
            "SELECT json_extract(s.value, '$[2]') FROM results r, json_each(r.scores_json) s"
            " WHERE r.id = ? AND json_extract(s.value, '$[0]') = ?",
            (first_id, key),
        ).fetchone()
        evaluators[key] = (count, failed, comment)
    return TargetErrors(target, calls, errored, reasons, evaluators)


SHOWN_REASONS = 3


def report_run_errors(store: Store, experiment_ids: list[str], *, max_error_rate: float) -> bool:
    """Per target, the most common error reasons with counts and the first full message of
    each, and the evaluators that failed; False when a target's calls errored more often
    than ``max_error_rate`` or an evaluator failed on every example it scored."""
    from agenteval_cli.cli.common import stderr
    from agenteval_cli.cli.progress import shown  # names and messages are data, not markup
    from agenteval_cli.core.redact import console_text

    err = stderr()
    over_targets: list[str] = []
    broken: list[str] = []  # evaluator keys that failed on every result they scored
    for experiment_id in experiment_ids:
        target = store.experiment(experiment_id).target
        found = collect_errors(store, experiment_id, target)
        if found.errored:
            over = found.errored > max_error_rate * found.calls
            if over:
                over_targets.append(target)
            colour = "red" if over else "yellow"
            err.print(
                f"  [{colour}]errors[/]: {shown(target)}: {found.errored} of {found.calls} call(s) "
                f"failed ({found.rate:.1%}"
                + (f", above max_error_rate {max_error_rate:g})" if over else ")"),
                highlight=False,
            )
            for reason in found.reasons[:SHOWN_REASONS]:
                text = reason.first if reason.same else f"{reason.kind}, first: {reason.first}"
                err.print(
                    f"    {reason.count} × {console_text(text)}", highlight=False, markup=False
                )
            hidden = found.reasons[SHOWN_REASONS:]
            if hidden:
                count = sum(r.count for r in hidden)
                err.print(f"    and {count} more of {len(hidden)} other kind(s)", highlight=False)
        everywhere = set(found.evaluators_failing_everywhere())
        broken += [key for key in found.evaluators if key in everywhere and key not in broken]
        for key, (scored, failed, comment) in found.evaluators.items():
            colour = "red" if key in everywhere else "yellow"
            err.print(
                f"  [{colour}]evaluator failed[/]: {shown(target)}: {shown(key)} on {failed} "
                f"of {scored} result(s), first:",
                highlight=False,
            )
            err.print(f"    {console_text(comment)}", highlight=False, markup=False)
    if over_targets:
        err.print(
            f"  [bold red]run failed[/]: {shown(', '.join(over_targets))}: calls errored above "
            f"max_error_rate {max_error_rate:g} (allow a share with --max-error-rate RATE or "
            "'max_error_rate:' in the spec)",
            highlight=False,
        )
    if broken:
        err.print(
            f"  [bold red]run failed[/]: evaluator(s) {shown(', '.join(broken))} failed on every "
            "result (fix them, or leave them out of the spec)",
            highlight=False,
        )
    return not over_targets and not broken
