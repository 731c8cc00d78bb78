"""``agenteval run``: every target of a spec on every example, then the comparison."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval_cli.api import FORMATS, RunOptions, resumes
from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    ByAgentOption,
    DebugOption,
    EnvFileOption,
    OutputFailures,
    StoreOption,
    UpdatePricesOption,
    app,
    fetch_prices,
    is_stdout,
    json_on_stdout,
    print_agents,
    print_comparison,
    set_spec_env,
    stderr,
    stdout,
    user_errors,
)
from agenteval_cli.cli.outputs import (
    BaselineOption,
    RunOutputs,
    SaveBaselineOption,
    finish_run,
    report_run_errors,
    run_gate,
    with_report_options,
    write_json_output,
)
from agenteval_cli.core.errors import ExitCode, UserError

if TYPE_CHECKING:
    from agenteval_cli.api import Gate


@app.command()
@with_report_options()
def run(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="The experiment YAML file.")],
    experiment_name: Annotated[
        str | None,
        typer.Argument(
            metavar="[EXPERIMENT]",
            help="With --resume: the run to continue (an experiment or target name).",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option("--target", "-t", help="Run only this target (repeatable)."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Run only the first N examples.")
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="PATH",
            help="Also write every result as JSON here; '-' writes it to stdout, and then "
            "the table and every other line go to stderr.",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue the latest unfinished run of SPEC (or EXPERIMENT's run): only the "
            "examples without a result run.",
        ),
    ] = False,
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="With --resume: also run again what ended in error."),
    ] = False,
    cache: Annotated[
        bool | None,
        typer.Option(
            "--cache/--no-cache",
            help="Reuse cached target outputs, or call every target afresh; overrides the "
            "spec's 'cache:' either way (default: the spec's).",
            show_default=False,
        ),
    ] = None,
    rescore: Annotated[
        list[str] | None,
        typer.Option(
            "--rescore",
            metavar="EXPERIMENT",
            help="Score a stored experiment again with SPEC's evaluators, calling no target "
            "(repeatable).",
        ),
    ] = None,
    upload: Annotated[
        bool,
        typer.Option(
            "--upload",
            help="Also upload each experiment to LangSmith (as 'upload: true' does); "
            "needs LANGSMITH_API_KEY.",
        ),
    ] = False,
    from_langsmith: Annotated[
        list[str] | None,
        typer.Option(
            "--from-langsmith",
            metavar="EXPERIMENT",
            help="Call no target: import this LangSmith experiment into the store and "
            "report and gate on it with SPEC's pricing and thresholds (repeatable).",
        ),
    ] = None,
    max_error_rate: Annotated[
        float | None,
        typer.Option(
            "--max-error-rate",
            min=0.0,
            max=1.0,
            metavar="RATE",
            help="The share of a target's calls that may end in error (0 to 1) before the "
            "run fails with exit 3; overrides the spec's 'max_error_rate' (default 0).",
            show_default=False,
        ),
    ] = None,
    by_agent: ByAgentOption = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="No start lines, progress bars or tables: only warnings, errors, the files "
            "written and a one-line verdict at the end.",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="i/N",
            help="Run only shard i of N (a split by example id, the same on every machine); "
            "combine the shards' stores with 'agenteval merge'.",
            show_default=False,
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            metavar="local|ray",
            help="Where the calls run: this process (local), or Ray workers (ray; needs "
            "the ray extra); overrides the spec's 'executor'. The store stays here.",
            show_default=False,
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            metavar="ADDR",
            help="Run on the Ray cluster at ADDR (HOST:6379, as 'ray start --head' prints "
            "it); implies --executor ray. Without it (and without RAY_ADDRESS) a local Ray "
            "instance is started with this machine's cores.",
            show_default=False,
        ),
    ] = None,
    otel: Annotated[
        str | None,
        typer.Option(
            "--otel",
            metavar="URL|env|FILE",
            help="Also export each request's trace as OpenTelemetry GenAI spans, its scores "
            "as evaluation events: to an OTLP/HTTP endpoint (http://localhost:4318, or 'env' "
            "for OTEL_EXPORTER_OTLP_ENDPOINT's; headers, timeout and TLS from "
            "OTEL_EXPORTER_OTLP_*) or an OTLP JSON file (traces.jsonl). Needs the otel extra.",
            show_default=False,
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Refuse to run (exit 2, before any call) when the dataset names an agent, "
            "tool or skill no target has (the spec's strict_names: true does the same).",
        ),
    ] = False,
    reports: dict[str, Path | None] | None = None,
    baseline: BaselineOption = None,
    save_baseline: SaveBaselineOption = None,
    update_prices: UpdatePricesOption = False,
    env_file: EnvFileOption = None,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Run every target of SPEC on every example, score the results, print the comparison.

    Exit codes: 0 success; 1 quality gate failed (a threshold of the spec, a metric whose
    interval lies beyond its allowed drop against the baseline, or a baseline check that
    could not be tested, unless allow_untested); 2 bad input (spec, dataset, option), nothing run;
    3 run errors (a target's calls errored above max_error_rate, its requests stopped at
    interrupt() above max_interrupt_rate, or an evaluator failed on every example); 4
    LangSmith failure (fetch or upload), a Ray cluster lost, a price fetch (--update-prices)
    that failed, an OpenTelemetry export (--otel) that failed, a store's disk failure
    (read-only, full, locked), or an output that cannot be written after the run; 130
    interrupted (the run stopped by Ctrl-C). When several apply: 3, then 1, then 4.

    With -q/--quiet the run prints no start lines, progress bars or tables; warnings,
    errors (the run's, the gate's failures), the files written and, last, one line on
    stdout: "PREFIX: passed · 2 target(s), 6 results, 0 errored" (or "run failed", "gate
    failed", "upload failed"). The exit codes are the same.

    Example: agenteval run configs/routing.yaml --json results.json"""
    with json_on_stdout(is_stdout(json_path)):
        _run_command(
            spec_path,
            experiment_name,
            json_path,
            RunOutputs(reports or {}, baseline, save_baseline),
            RunOptions(
                targets=target,
                limit=limit,
                resume=(experiment_name or True) if resume or retry_errors else False,
                retry_errors=retry_errors,
                cache=cache,
                upload=upload or None,
                executor=executor,  # type: ignore[typeddict-item]  # checked before use
                ray_address=ray_address,
                env_file=env_file,
                otel=otel,
                strict=strict or None,
            ),
            shard=shard,
            rescore=rescore,
            from_langsmith=from_langsmith,
            max_error_rate=max_error_rate,
            by_agent=by_agent,
            quiet=quiet,
            store_path=store_path,
            debug=debug,
            update_prices=update_prices,
        )


def _run_command(
    spec_path: Path,
    experiment_name: str | None,
    json_path: Path | None,
    outputs: RunOutputs,
    options: RunOptions,
    *,
    shard: str | None,
    rescore: list[str] | None,
    from_langsmith: list[str] | None,
    max_error_rate: float | None,
    by_agent: bool,
    quiet: bool,
    store_path: Path,
    debug: bool,
    update_prices: bool = False,
) -> None:
    from agenteval_cli import api

    err = stderr()
    target, limit = options.get("targets"), options.get("limit")
    resume, upload, cache = resumes(options), bool(options.get("upload")), options.get("cache")
    executor, ray_address = options.get("executor"), options.get("ray_address")
    with user_errors(debug):
        set_spec_env(spec_path, options.get("env_file"))  # before the spec's ${VAR} are read
        if rescore or from_langsmith:
            given = {
                "--resume/--retry-errors": resume,
                "--target": target,
                "--limit": limit is not None,
                "--cache/--no-cache": cache is not None,
                "--upload": upload,
                "--shard": shard is not None,
                "--executor": executor is not None,
                "--ray-address": ray_address is not None,
                "--otel": options.get("otel") is not None,
                "--max-error-rate": max_error_rate is not None,
                "--rescore": bool(rescore and from_langsmith),
            }
            if rescore:  # the reports and the gate follow an import, not a rescore
                given |= {"--quiet": False} | {name: bool(path) for name, path in outputs.named()}
            else:
                given["--quiet"] = quiet
            _stored_experiments(
                spec_path, rescore, from_langsmith, [name for name, on in given.items() if on]
            )
        _check_resume_options(experiment_name, resume, target, limit)
        options["shard"] = _shard_option(shard, resume=resume)
        check_quiet(quiet, by_agent)
        if executor not in (None, "local", "ray"):
            raise UserError(f"--executor {executor!r} is not local or ray", hint="--executor ray")
        spec = api.load(spec_path)
        if update_prices:
            fetch_prices(quiet)
        if from_langsmith:
            from agenteval_cli.cli.experiments import run_from_langsmith

            if not run_from_langsmith(
                spec,
                from_langsmith,
                store_path,
                json_path,
                outputs,
                by_agent=by_agent,
                env_file=options.get("env_file"),
            ):
                raise typer.Exit(ExitCode.GATE_FAILED)
            return
        if rescore:
            rescore_stored(
                spec,
                rescore,
                store_path,
                json_path,
                by_agent,
                quiet=quiet,
                env_file=options.get("env_file"),
            )
            return
    failures = OutputFailures(debug)
    with user_errors(debug):
        outputs = _preflight(outputs, json_path, store_path, spec_baseline=spec.baseline)
        report = _run(spec_path, spec, store_path, err, options, quiet=quiet)
        store = report.store
        failures.saved = f"{report.saved} results are saved in {report.store}"
        with failures:
            if report.status == "interrupted":
                _interrupted(err, spec_path, report)
                _print_export(err, report)
                raise typer.Exit(ExitCode.INTERRUPTED)
            # names the dataset gives and no target has are read with the table: under it
            shown_below = [] if quiet else report.name_warnings
            _warn(err, [w for w in report.warnings if w not in shown_below])
            allowed = spec.max_error_rate if max_error_rate is None else max_error_rate
            gated = _has_gate_or_reports(spec, outputs)
            verdict = None
            if json_path is not None and gated:  # --json carries the gate's verdict
                with user_errors(debug):
                    verdict = run_gate(store, report.ids, spec, outputs)
            clean = _print_run(
                store,
                report,
                json_path,
                by_agent,
                max_error_rate=allowed,
                quiet=quiet,
                failures=failures,
                gate=verdict,
            )
            uploaded = True
            if report.spec.upload or upload:
                from agenteval_cli.cli.upload import upload_after_run

                uploaded = upload_after_run(store, report, debug)
            exported = _print_export(err, report)
            passed = True
            if gated:  # else there is nothing to read back
                with user_errors(debug):
                    passed = finish_run(
                        store, report.ids, spec, outputs, quiet=quiet, verdict=verdict
                    )
            if quiet:
                _print_verdict(
                    report, clean=clean, passed=passed, uploaded=uploaded, exported=exported
                )
    if not clean:
        raise typer.Exit(ExitCode.RUN_ERRORS)
    if not passed:
        raise typer.Exit(ExitCode.GATE_FAILED)
    if not uploaded or not exported:
        raise typer.Exit(ExitCode.SERVICE_FAILED)


def _print_export(err, report) -> bool:
    """What ``--otel`` sent, or why it stopped (one line each); False when it failed."""
    from rich.markup import escape

    from agenteval_cli.core.redact import console_text

    done = report.otel
    if done is None:
        return True
    if done.error is not None:
        err.print(f"[bold red]error:[/] {escape(console_text(done.error))}", highlight=False)
        err.print("  the results are kept in the store", highlight=False)
        return False
    err.print(
        console_text(
            f"exported {done.requests} request(s) as {done.spans} OpenTelemetry spans "
            f"to {done.destination}"
        ),
        highlight=False,
        markup=False,
    )
    return True


def _shard_option(text: str | None, *, resume: bool) -> tuple[int, int] | None:
    """``--shard i/N`` as ``(i, N)``; a bad value, or one with --resume (which keeps its
    run's shard), is a usage error."""
    from agenteval_cli.api import parse_shard

    if text is None:
        return None
    try:
        shard = parse_shard(text)
    except ValueError as exc:
        raise UserError(str(exc), hint="i from 1 to N, such as --shard 1/4") from None
    if resume:
        raise UserError(
            "--shard and --resume cannot be combined", hint="a resumed run keeps its own shard"
        )
    return shard


def _stored_experiments(
    spec_path: Path, rescore: list[str] | None, imported: list[str] | None, given: list[str]
) -> None:
    """``run --rescore`` and ``run --from-langsmith``, kept for this release: the commands
    ``agenteval rescore`` and ``agenteval import`` do it now, and take no option of a run that
    calls targets (one given is refused, naming it). Says so on stderr."""
    flag, command = ("--rescore", "rescore") if rescore else ("--from-langsmith", "import")
    names = " ".join(rescore or imported or [])
    if given:
        raise UserError(
            f"{flag} calls no target; it cannot be combined with {', '.join(given)}",
            hint=f"leave them out: agenteval {command} {spec_path} {names}",
        )
    stderr().print(
        f"note: 'run {flag}' is now 'agenteval {command} {spec_path} {names}'; the option "
        "goes in the next release",
        highlight=False,
        markup=False,
    )


def check_quiet(quiet: bool, by_agent: bool) -> None:

    if quiet and by_agent:
        raise UserError(
            "-q/--quiet prints no tables, --by-agent is one", hint="leave out one of them"
        )


def verdict_line(
    report, *, clean: bool, passed: bool, uploaded: bool, exported: bool = True
) -> str:
    """The one line a quiet run ends with: its outcome and what it stored."""
    word = (
        "run failed"
        if not clean
        else "gate failed"
        if not passed
        else "upload failed"
        if not uploaded
        else "export failed"
        if not exported
        else "passed"
    )
    errored = sum(found.errored for found in report.errors)
    interrupted = sum(found.interrupted for found in report.errors)
    return (
        f"{report.spec.experiment_prefix}: {word} · {len(report.experiments)} target(s), "
        f"{report.saved} results, {errored} errored"
        + (f", {interrupted} stopped at interrupt()" if interrupted else "")
    )


def _print_verdict(
    report, *, clean: bool, passed: bool, uploaded: bool, exported: bool = True
) -> None:
    from agenteval_cli.core.redact import console_text

    line = verdict_line(report, clean=clean, passed=passed, uploaded=uploaded, exported=exported)
    stdout().print(console_text(line), highlight=False, markup=False, soft_wrap=True)


def _preflight(
    outputs: RunOutputs, json_path: Path | None, store: Path, *, spec_baseline: Path | None = None
) -> RunOutputs:
    """What would fail after the run fails before it: a report path that cannot be written,
    a ``--baseline`` that does not exist, a baseline file (``--baseline`` or the spec's, once
    written) the gate cannot compare. A stored baseline is pinned to the experiment its
    name means now, before this run's own experiments would take the name."""
    from dataclasses import replace

    from agenteval_cli import api

    named = (
        ("--json", json_path),
        *((found.option, outputs.reports.get(found.name)) for found in FORMATS),
        ("--save-baseline", outputs.save_baseline),
    )
    pinned = api.preflight(
        store=store, outputs=named, baseline=outputs.baseline, spec_baseline=spec_baseline
    )
    return replace(outputs, baseline=pinned)


def _run(spec_path: Path, spec, store: Path, err, options: RunOptions, *, quiet: bool = False):
    """``api.run`` with the progress bars, the start lines and the notes on stderr (none of
    them when ``quiet``); a run that is ended by force says so before the process exits."""
    from contextlib import ExitStack

    from agenteval_cli import api
    from agenteval_cli.cli.progress import target_progress

    with ExitStack() as stack:
        progress: list[Any] = []

        def started(plan: api.RunStart) -> None:
            if quiet:
                return
            if plan.resumed:
                err.print(
                    f"resuming {', '.join(plan.experiments)}: "
                    f"{sum(plan.left.values())} call(s) left",
                    highlight=False,
                )
            err.print(
                f"[bold]{plan.prefix}[/]: {plan.examples} examples × "
                f"{plan.repetitions} repetition(s) × {len(plan.totals)} target(s), "
                f"concurrency {plan.concurrency}",
                highlight=False,
            )
            progress.append(stack.enter_context(target_progress(err, plan.totals, plan.done)))

        def forced(report: api.RunReport, reason: str) -> None:
            _interrupted(err, spec_path, report, reason)

        return api.run(
            spec,
            store=store,
            on_start=started,
            on_result=None if quiet else lambda target, result: progress[0].update(target, result),
            on_note=None if quiet else lambda text: _note(err, text),
            on_forced_exit=forced,
            **options,
        )


def _interrupted(err, spec_path: Path, report, reason: str | None = None) -> None:
    """The lines of an interrupted run: its warnings, what was saved, how to resume."""
    _warn(err, report.warnings)
    if reason:  # the run would not stop: the process ends by force
        err.print(f"[yellow]interrupted[/] by force: {_plain(reason)}", highlight=False)
    err.print(f"[yellow]interrupted[/]: {report.saved} results were saved in {report.store}")
    err.print(f"resume with: {_resume_command(spec_path, report)}")


def _note(err, text: str) -> None:
    """A note of the run, as plain text (it names files and datasets)."""
    from agenteval_cli.core.redact import console_text

    err.print(f"note: {console_text(text)}", highlight=False, markup=False)


def _print_run(
    store: Path,
    report,
    json_path: Path | None,
    by_agent: bool,
    *,
    max_error_rate,
    quiet: bool = False,
    max_interrupt_rate: float | None = None,
    failures: OutputFailures | None = None,
    gate: Gate | None = None,
) -> bool:
    """The comparison table (not when ``quiet``), the run's errors, the per-agent table and
    the --json document; False when the run failed on its errors (told to ``failures``
    first, so an output that then cannot be written keeps that exit code)."""
    if not quiet:
        print_comparison(
            store,
            report.ids,
            title=report.title,
            warnings=report.name_warnings,
        )
    clean = report_run_errors(
        report, max_error_rate=max_error_rate, max_interrupt_rate=max_interrupt_rate
    )
    if failures is not None:
        failures.run_clean = clean
    if by_agent:
        print_agents(store, report.ids)
    if json_path is not None:
        write_json_output(json_path, store, report.ids, gate, warnings=report.warnings)
    return clean


def _has_gate_or_reports(spec, outputs: RunOutputs) -> bool:
    """Whether ``finish_run`` has anything to do: a report or baseline to write, or a
    threshold or baseline to check."""
    return bool(
        spec.thresholds
        or spec.baseline is not None
        or any(path is not None for _, path in outputs.named())
    )


def _check_resume_options(
    name: str | None,
    resume: bool,
    target: Sequence[str] | None,
    limit: int | None,
) -> None:

    if name is not None and not resume:
        if name.lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            raise UserError(
                f"unexpected argument {name!r}",
                hint="--cache and --no-cache take no value: 'agenteval run SPEC --no-cache'",
            )
        raise UserError(
            f"unexpected argument {name!r}", hint="an EXPERIMENT is read only after --resume"
        )
    if resume and (target or limit is not None):
        raise UserError(
            "--resume continues a run with its own targets and examples",
            hint="leave out --target and --limit",
        )


def _plain(text: str) -> str:
    """``text`` (which may hold names from the spec) safe to print as Rich markup."""
    from rich.markup import escape

    from agenteval_cli.core.redact import console_text

    return escape(console_text(text))


def _warn(err, lines: list[str]) -> None:
    for line in lines:
        err.print(f"[bold yellow]warning:[/] {_plain(line)}", highlight=False)


def _resume_command(spec_path: Path, report) -> str:
    import shlex

    command = f"agenteval run {shlex.quote(str(spec_path))} --resume {report.experiments[0].name}"
    if report.store != DEFAULT_STORE:
        command += f" --store {shlex.quote(str(report.store))}"
    return command


def rescore_stored(
    spec,
    names: list[str],
    store_path: Path,
    json_path: Path | None,
    by_agent: bool,
    *,
    quiet: bool = False,
    env_file: str | Path | None = None,
    reprice: bool = False,
    prices: Path | None = None,
):
    from agenteval_cli import api

    report = api.rescore(
        spec, names, store=store_path, env_file=env_file, reprice=reprice, prices=prices
    )
    _warn(stderr(), report.warnings)
    # the calls' errors and interrupts were judged when they ran: only an evaluator
    # failing everywhere
    clean = _print_run(
        report.store,
        report,
        json_path,
        by_agent,
        max_error_rate=1.0,
        max_interrupt_rate=1.0,
        quiet=quiet,
    )
    if quiet:
        _print_verdict(report, clean=clean, passed=True, uploaded=True)
    if not clean:
        raise typer.Exit(ExitCode.RUN_ERRORS)
