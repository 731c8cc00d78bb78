"""``agenteval dataset ...``: dataset files, and pushing and pulling them to/from LangSmith."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    EnvFileOption,
    StoreOption,
    app,
    set_spec_env,
    stderr,
    stdout,
    user_errors,
)

dataset_app = typer.Typer(help="Check and manage datasets.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


@dataset_app.command("validate")
def dataset_validate(
    path: Annotated[
        Path | None,
        typer.Argument(help="A .jsonl, .json, .yaml or .csv dataset (default: the spec's)."),
    ] = None,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="Also check the reference fields this spec's evaluators read: a warning "
            "names a field no evaluator reads when one an evaluator needs is in no row.",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="With --spec: exit 2 when a row names an agent, tool or skill no target "
            "has (the spec's strict_names: true does the same).",
        ),
    ] = False,
    env_file: EnvFileOption = None,
) -> None:
    """Check a dataset file offline, with the same checks a run makes; every bad row is
    reported (the first 20 in full), exit 2 if there is one.

    Example: agenteval dataset validate datasets/routing.jsonl
    Example: agenteval dataset validate --spec configs/routing.yaml"""
    from agenteval_cli.core.errors import ExitCode
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.data.examples import check_file, dataset_hash

    with user_errors():
        set_spec_env(spec, env_file)
        loaded, path = _validated_source(path, spec)
    check = check_file(path, shown=SHOWN_PROBLEMS)
    problems = [*check.problems, *([check.fatal] if check.fatal else [])]
    if not problems:
        with user_errors():
            digest = dataset_hash(path)[:12]
            warnings = _reference_warnings(loaded, path) if loaded is not None else []
            names = _name_check(loaded, path) if loaded is not None else None
            strict = strict or (loaded is not None and loaded.strict_names)
            refusal = names.refusal() if names is not None and strict else None
            if refusal is not None:
                raise refusal
        typer.echo(f"{path}: {_examples(check.valid)}, all valid (sha256 {digest})")
        for line in warnings + (names.lines() if names is not None else []):
            stderr().print(f"warning: {console_text(line)}", highlight=False, markup=False)
        return
    err = stderr()
    for problem in problems:
        err.print(f"error: {console_text(str(problem))}", highlight=False, markup=False)
    hidden = check.bad - len(check.problems)
    if hidden:
        err.print(f"and {hidden:,} more bad row(s)", highlight=False)
    if len(problems) > 1:  # one problem is one line, which says it all
        summary = f"{path}: {_examples(check.valid)} valid, {check.bad:,} bad row(s)"
        if check.fatal is not None:
            summary += ", then the file could not be read further"
        err.print(summary, highlight=False, markup=False)
    raise typer.Exit(ExitCode.BAD_INPUT)


SHOWN_PROBLEMS = 20


def _validated_source(path: Path | None, spec: Path | None) -> tuple[Any, Path]:
    """The spec (None without ``--spec``) and the dataset file to check: PATH, else the
    spec's dataset file."""
    from agenteval_cli.core.errors import UserError

    if spec is None:
        if path is None:
            raise UserError("no dataset to check", hint="give PATH or --spec SPEC")
        return None, path
    from agenteval_cli.spec.model import load_spec

    loaded = load_spec(spec)
    if path is None:
        if loaded.dataset.path is None:
            raise UserError(
                "the spec's dataset has no 'path' to check",
                file=loaded.source,
                line=loaded.line_of("dataset"),
                hint="give the dataset file as PATH",
            )
        path = Path(loaded.dataset.path)
    return loaded, path


def _reference_warnings(spec: Any, path: Path) -> list[str]:
    """The run's warnings about the reference fields the spec's evaluators read."""
    from agenteval_cli.api import reference_warnings

    return reference_warnings(spec, path)


def _name_check(spec: Any, path: Path) -> Any:
    """The names the rows give that a target's graph lacks, as a run says them before
    any call (the targets are imported, none is called)."""
    from agenteval_cli.api import name_check

    return name_check(spec, path)


def _examples(count: int) -> str:
    return f"{count:,} example" + ("" if count == 1 else "s")


@dataset_app.command("push")
def dataset_push(
    path: Annotated[
        Path | None, typer.Argument(help="The dataset file (or give --config).", show_default=False)
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Push the dataset of this experiment spec.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="LangSmith dataset name (default: the spec's).")
    ] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="Description of a new dataset.")
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete LangSmith examples that are not in the file.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would change; change nothing.")
    ] = False,
    store_path: StoreOption = DEFAULT_STORE,
    env_file: EnvFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Make a LangSmith dataset's examples equal to the file's (matched by example id).

    Example: agenteval dataset push --config configs/routing.yaml --dry-run"""
    from agenteval_cli.api import plan_push, push_dataset

    out = stdout()

    def say(line: str) -> None:  # names and ids are data: as written, no control characters
        from agenteval_cli.core.redact import console_text

        out.print(console_text(line), highlight=False, markup=False)

    with user_errors(debug):
        set_spec_env(config, env_file)  # LANGSMITH_API_KEY may be in the spec's .env
        path, name = _push_source(path, config, name)
        if dry_run:
            plan = plan_push(path, name)
            action = "would create dataset" if plan.dataset_id is None else "dataset"
            say(f"{action} {name!r}: {plan.summary(prune=prune, dry_run=True)}")
            for verb, items in (("add", plan.add), ("update", plan.update)):
                for example, _ in items:
                    say(f"  {verb} {example.id}")
            if prune:
                for remote in plan.stale:
                    say(f"  delete {remote.key}")
            return
        report = push_dataset(path, name, description=description, prune=prune, store=store_path)
        verb = "created" if report.created else "pushed"
        tag = f"; version tagged {report.tag}" if report.tag else ""
        say(f"{verb} {name!r}: {report.plan.summary(prune=prune)}{tag}")


def _push_source(path: Path | None, config: Path | None, name: str | None) -> tuple[Path, str]:
    """The file to push and the dataset name, from PATH or from a spec's dataset."""
    from agenteval_cli.core.errors import UserError

    if (path is None) == (config is None):
        raise UserError("give a dataset file or --config SPEC (one of them)")
    if config is not None:
        from agenteval_cli.spec.model import load_spec

        spec = load_spec(config)
        if spec.dataset.path is None:
            raise UserError(
                "the spec's dataset has no 'path' to push",
                file=config,
                line=spec.line_of("dataset"),
            )
        return spec.dataset.path, name or spec.dataset.name or spec.experiment_prefix
    assert path is not None
    return path, name or path.stem


@dataset_app.command("pull")
def dataset_pull(
    name: Annotated[str, typer.Argument(help="The LangSmith dataset name.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Write here (.jsonl .json .yaml .csv); default NAME.jsonl."
        ),
    ] = None,
    split: Annotated[
        list[str] | None, typer.Option("--split", help="Only examples in this split (repeatable).")
    ] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="A version tag or ISO timestamp.")
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Write a LangSmith dataset's examples to a file agenteval can run.

    Example: agenteval dataset pull multi-agent-routing-evals -o datasets/routing.jsonl"""
    from agenteval_cli.api import pull_dataset
    from agenteval_cli.core.filenames import file_name

    with user_errors(debug):
        output = output or Path(file_name(name, ".jsonl"))
        count = pull_dataset(name, output, version=version, splits=split)
        stdout().print(f"wrote {count} examples of {name!r} to {output}", highlight=False)


@dataset_app.command("list")
def dataset_list(debug: DebugOption = False) -> None:
    """List the LangSmith datasets the key can see.

    Example: agenteval dataset list"""
    from rich import box
    from rich.table import Table

    from agenteval_cli.api import list_datasets

    with user_errors(debug):
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("name", "examples", "modified (UTC)", "id"):
            table.add_column(column, no_wrap=True)
        for dataset in list_datasets():
            modified = dataset.modified_at or dataset.created_at
            table.add_row(
                dataset.name,
                str(dataset.example_count if dataset.example_count is not None else "?"),
                modified.isoformat()[:16].replace("T", " ") if modified else "",
                str(dataset.id),
            )
        stdout().print(table)
