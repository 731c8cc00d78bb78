"""``agenteval compare`` and ``agenteval experiments``: reading the store (or LangSmith)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    UpdatePricesOption,
    app,
    fetch_prices,
    print_agents,
    print_comparison,
    refuse_fresh_prices,
    stderr,
    stdout,
    user_errors,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from agenteval_cli.api import RunReport
    from agenteval_cli.cli.outputs import RunOutputs
    from agenteval_cli.spec.model import Spec

AllowDifferentData = Annotated[
    bool,
    typer.Option(
        "--allow-different-data",
        help="Compare experiments run on different dataset versions, on the examples they share.",
    ),
]


def _sayer(console: Console) -> Callable[[str], None]:
    """Progress lines naming experiments from LangSmith: plain text, no control characters."""
    from agenteval_cli.core.redact import console_text

    return lambda text: console.print(console_text(text), highlight=False, markup=False)


@app.command()
def compare(
    names: Annotated[
        list[str],
        typer.Argument(
            help="Target names (their latest experiment), experiment names, or JSON files "
            "from 'run --json' / '--save-baseline'. The first is the reference."
        ),
    ],
    from_langsmith: Annotated[
        bool,
        typer.Option(
            "--from-langsmith",
            help="Read every name as a LangSmith experiment (as langsmith.evaluate() named "
            "it; a unique prefix will do) instead of the store. Needs LANGSMITH_API_KEY.",
        ),
    ] = False,
    allow_different_data: AllowDifferentData = False,
    top: Annotated[
        int, typer.Option("--top", min=0, help="How many disagreeing examples to show.")
    ] = 10,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the --bootstrap resampling.")
    ] = None,
    bootstrap: Annotated[
        bool,
        typer.Option(
            "--bootstrap",
            help="Percentile bootstrap intervals (and the p that inverts them) instead of t "
            "for scores, counts, tokens and cost; needs 30+ paired examples.",
        ),
    ] = False,
    by_agent: Annotated[
        bool,
        typer.Option(
            "--by-agent",
            help="Also print model calls, tokens, cost and model time per agent, side by "
            "side, over the examples every side ran.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the comparison table as JSON (means, Δ, 95% CI, p, q, counts, the "
            "detectable difference) instead of the tables.",
        ),
    ] = False,
    update_prices: UpdatePricesOption = False,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Compare experiments with paired statistics: Δ, 95% CI, p-value, and where they differ.

    Example: agenteval compare supervisor swarm --by-agent"""
    from agenteval_cli import api
    from agenteval_cli.report.compare_console import print_comparison

    with user_errors(debug):
        if update_prices and not from_langsmith:  # LangSmith's runs are priced as read
            refuse_fresh_prices("compare")
        if update_prices:
            fetch_prices()
        if from_langsmith:
            results = [
                api.compare(
                    *names,
                    allow_different_data=allow_different_data,
                    top=top,
                    seed=seed,
                    from_langsmith=True,
                    on_note=_sayer(stderr()),
                    bootstrap=bootstrap,
                )
            ]
        else:  # files holding several targets each: one comparison per target
            results = api.compare_each(
                *names,
                store=store_path,
                allow_different_data=allow_different_data,
                top=top,
                seed=seed,
                bootstrap=bootstrap,
            )
    if as_json:
        from agenteval_cli.api import json_text
        from agenteval_cli.report.compare_json import comparison_json

        found = [comparison_json(result) for result in results]
        document = found[0] if len(found) == 1 else {"by_target": found}
        typer.echo(json_text(document, indent=2))
        return
    for index, result in enumerate(results):
        if index:
            stdout().print()
        print_comparison(stdout(), result, by_agent=by_agent)


@app.command("experiments")
def list_experiments(
    target: Annotated[str | None, typer.Option(help="Only this target's experiments.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the list as JSON, one object per experiment.")
    ] = False,
    store_path: StoreOption = DEFAULT_STORE,
) -> None:
    """List stored experiments, newest first.

    Example: agenteval experiments --target supervisor"""
    from dataclasses import asdict

    from agenteval_cli import api

    with user_errors():
        rows = [asdict(e) for e in api.list_experiments(target=target, store=store_path)]
    if as_json:
        from agenteval_cli.api import json_text

        typer.echo(json_text({"experiments": rows}, indent=2))
        return
    _print_experiments(rows)


def _print_experiments(rows: list[dict[str, Any]]) -> None:
    """A table on a terminal; where the output is piped, every column whole (a pipe has no
    width to fit, so nothing is cut short)."""
    import sys

    from rich import box
    from rich.console import Console
    from rich.table import Table

    from agenteval_cli.report.table import plain  # names from data, shown as plain text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("name", "target", "status", "results", "reps", "dataset", "started (UTC)"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            plain(row["name"]),
            plain(row["target"]),
            plain(row["status"]),
            str(row["results"]),
            str(row["repetitions"]),
            (row["dataset_hash"] or "–")[:8],
            row["started_at"][5:16].replace("T", " "),
        )
    if sys.stdout.isatty():
        stdout().print(table)
        return
    # as wide as the widest row, so nothing is cut short
    Console(emoji=False, width=100_000).print(table, crop=False)


def run_from_langsmith(
    spec: Spec,
    names: list[str],
    store_path: Path,
    json_path: Path | None,
    outputs: RunOutputs,
    *,
    by_agent: bool = False,
    env_file: str | Path | None = None,
) -> bool:
    """``agenteval import SPEC NAME...``: no target is called. Each LangSmith experiment is
    imported into the store (under its own name; again refreshes it), then the run's table,
    ``--json``, reports, baseline and gate follow as after a local run, with the spec's
    pricing and thresholds. False when the gate failed."""
    from agenteval_cli import api
    from agenteval_cli.report.compare_console import print_langsmith_urls

    err = stderr()
    report = api.import_langsmith(
        spec, names, store=store_path, on_note=_sayer(err), env_file=env_file
    )
    ids, store = report.ids, report.store
    print_comparison(store, ids, title=report.title, warnings=report.name_warnings)
    if by_agent:
        print_agents(store, ids)
    print_langsmith_urls(stdout(), api.load_experiments(ids, store=store))
    return _gate_and_finish(report, spec, outputs, json_path)


def run_from_traces(
    spec: Spec,
    files: list[Path],
    target: str | None,
    store_path: Path,
    json_path: Path | None,
    outputs: RunOutputs,
    *,
    by_agent: bool = False,
    env_file: str | Path | None = None,
) -> None:
    """``agenteval import SPEC --otlp FILE...``: the traces scored as one new experiment,
    then the run's table, errors, ``--json``, reports, baseline and gate as after a run
    (exit 3 when rows errored or went untraced above ``max_error_rate``, 1 when the gate
    failed)."""
    from agenteval_cli import api
    from agenteval_cli.cli.outputs import report_run_errors
    from agenteval_cli.core.errors import ExitCode

    err = stderr()
    report = api.import_traces(
        spec, files, target=target, store=store_path, on_note=_sayer(err), env_file=env_file
    )
    ids, store = report.ids, report.store
    print_comparison(store, ids, title=report.title, warnings=report.name_warnings)
    clean = report_run_errors(report, max_error_rate=spec.max_error_rate)
    if by_agent:
        print_agents(store, ids)
    passed = _gate_and_finish(report, spec, outputs, json_path)
    if not clean:
        raise typer.Exit(ExitCode.RUN_ERRORS)
    if not passed:
        raise typer.Exit(ExitCode.GATE_FAILED)


def _gate_and_finish(
    report: RunReport, spec: Spec, outputs: RunOutputs, json_path: Path | None
) -> bool:
    """After an import's table: the gate's verdict in ``--json`` when asked, then the
    reports, baseline and gate as after a run. False when the gate failed."""
    from agenteval_cli.cli.outputs import finish_run, run_gate, write_json_output

    store, ids = report.store, report.ids
    verdict = None
    if json_path is not None:
        verdict = run_gate(store, ids, spec, outputs)
        write_json_output(json_path, store, ids, verdict, warnings=report.warnings)
    return finish_run(store, ids, spec, outputs, verdict=verdict)
