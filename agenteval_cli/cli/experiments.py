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
    print_comparison,
    resolve_experiment,
    stdout,
    user_errors,
)


@app.command()
def compare(
    names: Annotated[
        list[str],
        typer.Argument(help="Target names (their latest experiment) or experiment names."),
    ],
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Put stored experiments side by side in one table."""
    with user_errors(debug), open_store(store_path) as store:
        ids = [resolve_experiment(store, name).id for name in names]
        pricing = {}
        for experiment_id in ids:
            pricing.update(store.experiment(experiment_id).spec.get("pricing") or {})
        print_comparison(store, ids, pricing=pricing, title=None)


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
        for column in ("name", "target", "status", "results", "started (UTC)"):
            table.add_column(column, no_wrap=True)
        for exp in store.experiments(target=target):
            table.add_row(
                exp.name,
                exp.target,
                exp.status,
                str(store.result_count(exp.id)),
                exp.started_at[5:16].replace("T", " "),
            )
        stdout().print(table)
