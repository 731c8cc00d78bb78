"""The ``agenteval`` command: a thin Typer layer over the library.

Heavy libraries (langchain, langgraph, langsmith) are imported inside commands so that
``agenteval --help`` starts fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.errors import UserError

app = typer.Typer(
    help="Evaluate multi-agent LangGraph systems side by side from one YAML spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
dataset_app = typer.Typer(help="Check datasets.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
evaluators_app = typer.Typer(help="The evaluators a spec can name.", no_args_is_help=True)
app.add_typer(evaluators_app, name="evaluators")

StoreOption = Annotated[
    Path,
    typer.Option(
        "--store",
        envvar="AGENTEVAL_STORE",
        help="SQLite file holding experiments and results.",
        show_default=True,
    ),
]
DEFAULT_STORE = Path(".agenteval/agenteval.db")
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]


def _stderr():
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


def _stdout():
    from rich.console import Console

    return Console()


@contextmanager
def user_errors(debug: bool = False) -> Iterator[None]:
    """Bad input becomes one line on stderr and exit code 2, never a traceback."""
    try:
        yield
    except UserError as exc:
        if debug:
            raise
        _stderr().print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        raise typer.Exit(exc.exit_code) from None


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

    err = _stderr()
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
        _print_comparison(store, ids, pricing=spec.pricing, title=_title(prepared))
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


def _print_comparison(store, experiment_ids: list[str], *, pricing, title: str | None) -> None:
    from agenteval_cli.metrics import summarize
    from agenteval_cli.report.table import comparison_table, unpriced_models

    out = _stdout()
    columns = []
    experiments = [store.experiment(i) for i in experiment_ids]
    for exp in experiments:
        columns.append((exp.target, summarize(s.result for s in store.results(exp.id))))
    out.print(comparison_table(columns, title=title))
    for exp, (_, summary) in zip(experiments, columns, strict=True):
        out.print(f"  {exp.target}: [bold]{exp.name}[/] ({exp.status})", highlight=False)
        missing = unpriced_models(summary, pricing or {})
        if missing:
            out.print(
                f"  [yellow]no price for model(s) {', '.join(missing)}[/]: cost excludes them; "
                "add them under 'pricing:' in the spec",
                highlight=False,
            )
    out.print(f"  store: {store.path}", highlight=False)


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
    with user_errors(debug), _open_store(store_path) as store:
        ids = [_resolve_experiment(store, name, store_path).id for name in names]
        pricing = {}
        for experiment_id in ids:
            pricing.update(store.experiment(experiment_id).spec.get("pricing") or {})
        _print_comparison(store, ids, pricing=pricing, title=None)


@app.command("experiments")
def list_experiments(
    target: Annotated[str | None, typer.Option(help="Only this target's experiments.")] = None,
    store_path: StoreOption = DEFAULT_STORE,
) -> None:
    """List stored experiments, newest first."""
    from rich import box
    from rich.table import Table

    with user_errors(), _open_store(store_path) as store:
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
        _stdout().print(table)


@contextmanager
def _open_store(path: Path):
    from agenteval_cli.store import Store

    if not path.exists():
        raise UserError(
            f"no experiment store at {path}",
            hint="run 'agenteval run SPEC' first, or pass --store",
        )
    with Store(path) as store:
        yield store


def _resolve_experiment(store, name: str, store_path: Path):
    latest = store.latest_experiment(name)
    if latest is not None:
        return latest
    try:
        return store.experiment(name)
    except KeyError:
        from agenteval_cli.errors import did_you_mean

        known = [e.target for e in store.experiments()] + [e.name for e in store.experiments()]
        raise UserError(
            f"no target or experiment named {name!r} in {store_path}",
            hint=did_you_mean(name, known) or "see 'agenteval experiments'",
        ) from None


@dataset_app.command("validate")
def dataset_validate(
    path: Annotated[Path, typer.Argument(help="A .jsonl, .json, .yaml or .csv dataset.")],
) -> None:
    """Check a dataset file offline, with the same checks a run makes."""
    from agenteval_cli.datasets import dataset_hash, load_examples

    with user_errors():
        examples = load_examples(path)
        _stdout().print(
            f"{path}: {len(examples)} examples, all valid (sha256 {dataset_hash(path)[:12]})",
            highlight=False,
        )


@evaluators_app.command("list")
def evaluators_list() -> None:
    """Every evaluator a spec can name, with what it reads."""
    from rich.table import Table

    from agenteval_cli.evaluators import REGISTRY

    table = Table("name", "family", "reads", "description")
    for info in sorted(REGISTRY.values(), key=lambda i: (i.family, i.name)):
        table.add_row(info.name, info.family, info.reads, info.description)
    _stdout().print(table)


def main() -> None:
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
