"""``agenteval compare`` and ``agenteval experiments``: reading the store."""

from __future__ import annotations

from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    app,
    open_store,
    stdout,
    user_errors,
)

AllowDifferentData = Annotated[
    bool,
    typer.Option(
        "--allow-different-data",
        help="Compare experiments run on different dataset versions, on the examples they share.",
    ),
]


@app.command()
def compare(
    names: Annotated[
        list[str],
        typer.Argument(
            help="Target names (their latest experiment), experiment names, or JSON files "
            "from 'run --json' / '--save-baseline'. The first is the reference."
        ),
    ],
    allow_different_data: AllowDifferentData = False,
    top: Annotated[
        int, typer.Option("--top", min=0, help="How many disagreeing examples to show.")
    ] = 10,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed of the bootstrap and permutation test.")
    ] = None,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Compare experiments with paired statistics: Δ, 95% CI, p-value, and where they differ."""
    from agenteval_cli.report import comparison, sources
    from agenteval_cli.report.compare_console import print_comparison

    with user_errors(debug):
        sides = sources.load(names, store_path)
        result = comparison.build(
            sides, allow_different_data=allow_different_data, top=top, seed=seed
        )
    print_comparison(stdout(), result)


@app.command("experiments")
def list_experiments(
    target: Annotated[str | None, typer.Option(help="Only this target's experiments.")] = None,
    store_path: StoreOption = DEFAULT_STORE,
) -> None:
    """List stored experiments, newest first."""
    from rich import box
    from rich.table import Table

    with user_errors(), open_store(store_path) as store:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("name", "target", "status", "results", "reps", "dataset", "started (UTC)"):
            table.add_column(column, no_wrap=True)
        for exp in store.experiments(target=target):
            table.add_row(
                exp.name,
                exp.target,
                exp.status,
                str(store.result_count(exp.id)),
                str(exp.repetitions),
                (exp.dataset_hash or "–")[:8],
                exp.started_at[5:16].replace("T", " "),
            )
        stdout().print(table)
