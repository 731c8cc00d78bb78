"""``agenteval run``: every target of a spec on every example, then the comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    app,
    print_comparison,
    stderr,
    user_errors,
)


@app.command()
def run(
    spec_path: Annotated[Path, typer.Argument(metavar="SPEC", help="The experiment YAML file.")],
    target: Annotated[
        list[str] | None,
        typer.Option("--target", "-t", help="Run only this target (repeatable)."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Run only the first N examples.")
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Also write every result as JSON here.")
    ] = None,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Run every target of SPEC on every example, score the results, print the comparison."""
    from agenteval_cli import experiment
    from agenteval_cli.progress import target_progress
    from agenteval_cli.spec import load_spec
    from agenteval_cli.store import Store

    err = stderr()
    with user_errors(debug):
        spec = load_spec(spec_path)
        prepared = experiment.prepare(spec, only_targets=target or None, limit=limit)
    with Store(store_path) as store:
        experiment.start_experiments(prepared, store)
        totals = {t.name: prepared.total_per_target for t in prepared.targets}
        err.print(
            f"[bold]{spec.experiment_prefix}[/]: {len(prepared.examples)} examples × "
            f"{spec.repetitions} repetition(s) × {len(prepared.targets)} target(s), "
            f"concurrency {spec.concurrency}",
            highlight=False,
        )
        try:
            with target_progress(err, totals) as progress:
                experiment.execute(prepared, store, on_result=progress.update)
        except KeyboardInterrupt:
            saved = sum(store.result_count(e.id) for e in prepared.experiments.values())
            err.print(f"[yellow]interrupted[/]: {saved} results were saved in {store_path}")
            raise typer.Exit(130) from None
        ids = [e.id for e in prepared.experiments.values()]
        print_comparison(store, ids, pricing=spec.pricing, title=_title(prepared))
        if json_path is not None:
            from agenteval_cli.report.json_report import write_json

            write_json(json_path, store, ids)
            err.print(f"wrote {json_path}")


def _title(prepared) -> str:
    spec = prepared.spec
    return (
        f"{spec.experiment_prefix} · {len(prepared.examples)} examples × "
        f"{spec.repetitions} repetition(s)"
    )
