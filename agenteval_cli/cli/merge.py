"""``agenteval merge``: the stores of a sharded run (``run --shard i/N``) as one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DebugOption,
    app,
    is_stdout,
    json_on_stdout,
    print_comparison,
    stdout,
    user_errors,
)


@app.command()
def merge(
    shard_stores: Annotated[
        list[Path],
        typer.Argument(
            metavar="STORE...",
            help="The store of each shard, as 'agenteval run SPEC --shard i/N --store STORE' "
            "left it.",
        ),
    ],
    store_path: Annotated[
        Path,
        typer.Option(
            "--store",
            metavar="OUT",
            help="The store to merge into (made if missing); a merge of the same shards "
            "already there is replaced.",
        ),
    ],
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="PATH",
            help="Also write the merged results as 'run --json' does; '-' writes it to stdout.",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="No table: one line on stdout naming what was merged.",
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Merge the stores of a sharded run into one experiment per target in OUT.

    Every shard 1 to N must be there once, each run finished, all of one spec and one
    dataset file; otherwise nothing is merged and the exit code is 2. The merged
    experiments' metrics and dataset-level scores are computed over all the shards'
    results, as an unsharded run's are, and their errors and failed evaluators are
    reported as a run's (exit 3).

    Example: agenteval merge shard-*/agenteval.db --store merged.db --json results.json"""
    from agenteval_cli import api
    from agenteval_cli.cli.outputs import report_run_errors, write_json_output
    from agenteval_cli.core.errors import ExitCode

    with json_on_stdout(is_stdout(json_path)), user_errors(debug):
        if json_path is not None and not is_stdout(json_path):
            from agenteval_cli.report.output_paths import check_writable

            check_writable(json_path, "--json")
        report = api.merge(shard_stores, store=store_path)
        if quiet:
            line = (
                f"{report.spec.experiment_prefix}: merged {len(shard_stores)} shards · "
                f"{len(report.experiments)} target(s), {report.saved} results"
            )
            stdout().print(line, highlight=False, markup=False, soft_wrap=True)
        else:
            title = report.title
            print_comparison(report.store, report.ids, title=title)
        clean = report_run_errors(report, max_error_rate=report.spec.max_error_rate)
        if json_path is not None:
            write_json_output(json_path, report.store, report.ids)
    raise typer.Exit(ExitCode.OK if clean else ExitCode.RUN_ERRORS)
