"""``agenteval report``: stored experiments as an HTML report, Markdown and JUnit XML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    KeptPricesOption,
    StoreOption,
    app,
    refuse_fresh_prices,
    user_errors,
)
from agenteval_cli.cli.experiments import AllowDifferentData
from agenteval_cli.cli.outputs import with_report_options, write_reports


@app.command()
@with_report_options(renamed={"html": (("--output", "-o"), "The HTML report to write.")})
def report(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="EXPERIMENT...",
            help="Target names (their latest experiment), experiment names, or JSON files "
            "from 'run --json'. The first is the reference.",
        ),
    ],
    reports: dict[str, Path | None] | None = None,
    allow_different_data: AllowDifferentData = False,
    update_prices: KeptPricesOption = False,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Write a self-contained HTML report (and Markdown / JUnit) of stored experiments.

    Example: agenteval report supervisor swarm -o report.html"""
    with user_errors(debug):
        if update_prices:
            refuse_fresh_prices("report")
        write_reports(
            names,
            reports=reports or {},
            store=store_path,
            allow_different_data=allow_different_data,
        )
