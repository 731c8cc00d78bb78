"""What ``agenteval run`` prints after the table: reports, the baseline file, the CI gate
and the run's errors, each through the Python API (:mod:`agenteval_cli.api`).

Kept apart from the run command so ``agenteval report`` writes the same files the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval_cli.api import FORMATS
from agenteval_cli.cli.common import is_stdout, json_stdout, stderr, stdout

if TYPE_CHECKING:
    from agenteval_cli.api import Gate, RunReport
    from agenteval_cli.gating.verdict import GateFailure
    from agenteval_cli.spec.model import Spec

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


def with_report_options(
    renamed: Mapping[str, tuple[Sequence[str], str]] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command whose ``reports`` parameter becomes one ``--FORMAT PATH`` option per
    report format (:data:`agenteval_cli.api.formats.FORMATS`, in its order); the command
    gets them back as ``reports={name: path or None}``. ``renamed``: a format's option
    declarations and help on this command (``report``'s HTML is ``-o/--output``)."""
    import functools
    import inspect
    import typing

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        parameters: list[inspect.Parameter] = []
        for parameter in inspect.signature(command).parameters.values():
            if parameter.name != "reports":
                parameters.append(parameter.replace(annotation=hints[parameter.name]))
                continue
            for found in FORMATS:
                names, text = (renamed or {}).get(found.name, ((found.option,), found.help))
                option = typer.Option(*names, metavar="PATH", help=text)
                parameters.append(
                    inspect.Parameter(
                        f"{found.name}_report",
                        inspect.Parameter.POSITIONAL_OR_KEYWORD,
                        default=None,
                        annotation=Annotated[Path | None, option],
                    )
                )

        @functools.wraps(command)
        def wrapper(**given: Any) -> None:
            reports = {found.name: given.pop(f"{found.name}_report") for found in FORMATS}
            command(reports=reports, **given)

        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper

    return decorate


@dataclass
class RunOutputs:
    """What a run writes and checks after it: the reports by format name, the baseline
    to gate against and the one to save."""

    reports: dict[str, Path | None] = field(default_factory=dict)
    baseline: str | None = None
    save_baseline: Path | None = None

    def named(self) -> list[tuple[str, object]]:
        """Each output with the option that asks for it: ``("--html", path)``."""
        return [
            *((found.option, self.reports.get(found.name)) for found in FORMATS),
            ("--baseline", self.baseline),
            ("--save-baseline", self.save_baseline),
        ]

    @property
    def asked(self) -> dict[str, Path]:
        """The reports asked for, by format name."""
        return {name: path for name, path in self.reports.items() if path is not None}


def write_reports(
    experiments: Any,
    *,
    reports: Mapping[str, Path | None],
    store: Path,
    thresholds: dict | None = None,
    gate_failures: list[GateFailure] | None = None,
    title: str | None = None,
    allow_different_data: bool = False,
    gate: Gate | None = None,
) -> None:
    """``api.write_report``, each path written echoed on stderr."""
    from agenteval_cli import api

    written = api.write_report(
        experiments,
        reports=reports,
        store=store,
        thresholds=thresholds,
        gate_failures=gate_failures,
        title=title,
        allow_different_data=allow_different_data,
        gate=gate,
    )
    err = stderr()
    for path in written:
        err.print(f"wrote {path}", highlight=False)


def write_json_output(
    path: Path,
    store: Path,
    experiment_ids: list[str],
    gate: Gate | None = None,
    *,
    warnings: Sequence[str] = (),
) -> None:
    """``--json PATH``: the document written to PATH (echoed on stderr), or to stdout for
    ``-`` (then stdout carries nothing else: see ``common.json_on_stdout``); with the
    gate's verdict when the run was gated, and a run's ``warnings``."""
    from agenteval_cli import api

    if is_stdout(path):
        out = json_stdout()
        api.write_json(out, experiment_ids, store=store, gate=gate, warnings=warnings)
        out.write("\n")
        out.flush()
        return
    api.write_json(path, experiment_ids, store=store, gate=gate, warnings=warnings)
    stderr().print(f"wrote {path}", highlight=False, markup=False)


def run_gate(store: Path, experiment_ids: list[str], spec: Spec, outputs: RunOutputs) -> Gate:
    """The gate's verdict on the run's experiments, by the spec and ``--baseline``."""
    from agenteval_cli import api

    sides = api.load_experiments(experiment_ids, store=store)
    return api.gate(sides, spec=spec, baseline=outputs.baseline, store=store)


def finish_run(
    store: Path,
    experiment_ids: list[str],
    spec: Spec,
    outputs: RunOutputs,
    *,
    quiet: bool = False,
    verdict: Gate | None = None,
) -> bool:
    """Write what was asked for, apply the gate (``verdict``, when it was decided before the
    ``--json`` document was written) and print its verdict; False if it failed. ``quiet``:
    a passed gate says nothing (the run's one-line verdict tells it)."""
    from agenteval_cli import api

    sides = api.load_experiments(experiment_ids, store=store)  # read once for all three
    out = stdout()
    if verdict is None:
        verdict = api.gate(sides, spec=spec, baseline=outputs.baseline, store=store)
    if verdict.checked and spec.min_kappa:
        api.check_judges(sides, spec.min_kappa)
    missing = verdict.missing_baseline
    saving = outputs.save_baseline
    if missing is not None and (saving is None or Path(missing).resolve() != saving.resolve()):
        out.print(
            f"  [yellow]no baseline yet at {missing}[/]: write one with --save-baseline {missing}",
            highlight=False,
        )
    if outputs.asked:
        write_reports(
            sides,
            reports=outputs.asked,
            store=store,
            thresholds=spec.thresholds,
            gate_failures=verdict.failures,
            gate=verdict if verdict.checked else None,
            title=f"{spec.experiment_prefix} · {' vs '.join(s.target for s in sides)}",
            allow_different_data=True,
        )
    if outputs.save_baseline is not None:
        api.save_baseline(outputs.save_baseline, sides)
        out.print(f"  baseline saved: {outputs.save_baseline}", highlight=False)
    print_gate(verdict, checked=verdict.checked and not (quiet and verdict.passed))
    return verdict.passed


def print_gate(verdict: Gate, *, checked: bool) -> None:
    """The gate's verdict, then a line per baseline check that did not fail it yet may
    read as if it should: cleared by Holm's adjustment, or untested and allowed."""
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.gating.wording import gate_summary, outcome_line

    out = stdout()
    if not checked:
        return
    failures = verdict.failures
    if not failures:
        summary = gate_summary(verdict.checks, allow_untested=verdict.allow_untested)
        out.print(f"  [bold green]gate passed[/]: {summary}", highlight=False)
    else:
        out.print(f"  [bold red]gate failed[/]: {len(failures)} problem(s)")
    lines = [f"{f.target}: {f.message}" for f in failures]
    lines += [
        f"{o.check.target}: {outcome_line(o)}"
        + (" (allow_untested: passed)" if o.status == "untested" else "")
        for o in verdict.checks
        if o.status == "cleared" or (o.status == "untested" and verdict.allow_untested)
    ]
    for line in lines:
        out.print(console_text(f"    {line}"), highlight=False, markup=False)


def report_run_errors(
    report: RunReport, *, max_error_rate: float, max_interrupt_rate: float | None = None
) -> bool:
    """Per target, the most common error reasons with counts and the first full message of
    each, the requests that stopped at interrupt(), and the evaluators that failed; False
    when a target's calls errored more often than ``max_error_rate``, stopped at
    interrupt() more often than ``max_interrupt_rate`` (None: the spec's), or an evaluator
    failed on every example it scored."""
    allowed = report.spec.max_interrupt_rate if max_interrupt_rate is None else max_interrupt_rate
    from agenteval_cli.api import SHOWN_REASONS
    from agenteval_cli.cli.progress import shown  # names and messages are data, not markup
    from agenteval_cli.core.redact import console_text

    err = stderr()
    for found in report.errors:
        target = found.target
        if found.errored:
            over = found.over(max_error_rate)
            colour = "red" if over else "yellow"
            err.print(
                f"  [{colour}]errors[/]: {shown(target)}: {found.errored} of {found.calls} "
                f"{found.unit} failed ({found.rate:.1%}"
                + (f", above max_error_rate {max_error_rate:g})" if over else ")"),
                highlight=False,
            )
            for reason in found.reasons[:SHOWN_REASONS]:
                err.print(
                    f"    {reason.count} × {console_text(reason.text)}",
                    highlight=False,
                    markup=False,
                )
            hidden = found.reasons[SHOWN_REASONS:]
            if hidden:
                count = sum(r.count for r in hidden)
                err.print(f"    and {count} more of {len(hidden)} other kind(s)", highlight=False)
        if found.interrupted:
            over = found.over_interrupts(allowed)
            err.print(
                f"  [{'red' if over else 'yellow'}]stopped at interrupt()[/]: {shown(target)}: "
                f"{found.interrupted} of {found.calls} {found.waiting_unit} waiting for input "
                f"({found.interrupt_rate:.1%}"
                + (f", above max_interrupt_rate {allowed:g})" if over else ")"),
                highlight=False,
            )
        everywhere = set(found.evaluators_failing_everywhere())
        for key, (scored, failed, comment) in found.evaluators.items():
            colour = "red" if key in everywhere else "yellow"
            err.print(
                f"  [{colour}]evaluator failed[/]: {shown(target)}: {shown(key)} on {failed} "
                f"of {scored} result(s), first:",
                highlight=False,
            )
            err.print(f"    {console_text(comment)}", highlight=False, markup=False)
        for key, comment in found.summaries.items():  # called once: failed everywhere
            err.print(
                f"  [red]evaluator failed[/]: {shown(target)}: {shown(key)} (dataset-level): "
                f"{shown(comment)}",
                highlight=False,
            )
    _numbers_for_booleans(report)
    over_targets = report.over_error_rate(max_error_rate)
    broken = report.broken_evaluators()
    if over_targets:
        err.print(
            f"  [bold red]run failed[/]: {shown(', '.join(over_targets))}: calls errored above "
            f"max_error_rate {max_error_rate:g} (allow a share with --max-error-rate RATE or "
            "'max_error_rate:' in the spec)",
            highlight=False,
        )
    interrupted = report.over_interrupt_rate(allowed)
    if interrupted:
        err.print(
            f"  [bold red]run failed[/]: {shown(', '.join(interrupted))}: requests stopped at "
            f"interrupt() above max_interrupt_rate {allowed:g} (status "
            "interrupted; allow a share with 'max_interrupt_rate:' in the spec)",
            highlight=False,
        )
    if broken:
        err.print(
            f"  [bold red]run failed[/]: evaluator(s) {shown(', '.join(broken))} failed on every "
            "result (fix them, or leave them out of the spec)",
            highlight=False,
        )
    return not over_targets and not broken and not interrupted


def _numbers_for_booleans(report: RunReport) -> None:
    """One line per true/false judge that got numbers back, over every target, with the fix."""
    from agenteval_cli.cli.progress import shown

    found: dict[str, list[int]] = {}
    for errors in report.errors:
        for key, (scored, numbers) in errors.numbers_for_booleans.items():
            total = found.setdefault(key, [0, 0])
            total[0] += scored
            total[1] += numbers
    for key, (scored, numbers) in found.items():
        stderr().print(
            f"  [yellow]judge misconfigured[/]: {shown(key)}: {numbers} of {scored} repl(ies) "
            "were numbers, but the judge is true/false: set continuous: true on it to score "
            "numbers from 0 to 1 (or choices: [...] for a scale)",
            highlight=False,
        )
