"""``agenteval upload EXPERIMENT``: send a stored experiment to LangSmith (again)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    app,
    open_store,
    resolve_experiment,
    stderr,
    stdout,
    user_errors,
)

if TYPE_CHECKING:
    from agenteval_cli.store.db import ExperimentRecord, Store


@app.command()
def upload(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="EXPERIMENT...", help="Experiment names (or targets: their latest experiment)."
        ),
    ],
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """Upload stored experiments to LangSmith; a retry sends only what is missing.

    Example: agenteval upload supervisor swarm"""
    from agenteval_cli.langsmith.client import credentials

    with user_errors(debug), open_store(store_path, write=True) as store:
        credentials()
        experiments = [resolve_experiment(store, name) for name in names]
        if not upload_after_run(store, experiments, debug):
            raise typer.Exit(4)  # ExitCode.SERVICE_FAILED


def upload_after_run(store: Store, experiments: list[ExperimentRecord], debug: bool) -> bool:
    """Upload each experiment, print its URL and a comparison URL; False if any failed.

    A failure is one line; the local results stay, and the line says how to retry."""
    from rich.markup import escape

    from agenteval_cli.core.errors import UserError
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.langsmith.client import connect
    from agenteval_cli.langsmith.upload import compare_url, unexpected_answer, upload_experiment

    err, out = stderr(), stdout()
    with user_errors(debug):
        conn = connect()
    ok, projects, dataset_url = True, [], None
    for exp in experiments:
        try:
            report = upload_experiment(
                conn,
                store,
                exp,
                say=lambda text: err.print(console_text(text), highlight=False, markup=False),
            )
        except Exception as exc:  # a UserError, or what a broken server made the client raise
            if debug:
                raise
            if not isinstance(exc, UserError):
                exc = unexpected_answer(conn.endpoint, "uploading", exc)
            name = escape(console_text(exp.name))
            message = escape(console_text(str(exc)))
            err.print(f"[bold red]error:[/] upload of {name} failed: {message}", highlight=False)
            err.print(
                console_text(
                    f"  the local results are kept; retry with: agenteval upload {exp.name}"
                    + (f" --store {store.path}" if store.path != DEFAULT_STORE else "")
                ),
                highlight=False,
                markup=False,
            )
            ok = False
            continue
        note = f"{report.runs} run(s), {report.child_runs} child run(s), {report.feedback} feedback"
        if report.already_sent:
            note += f"; {report.already_sent} already there"
        out.print(
            console_text(f"  langsmith: {exp.target}: {report.url}  ({note})"),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        from agenteval_cli.langsmith.state import LangSmithState

        row = LangSmithState(store.db).upload(exp.id) or {}
        if row.get("project_id"):
            projects.append(row["project_id"])
            dataset_url = (report.url or "").split("/compare?")[0] or dataset_url
    if len(projects) > 1:
        out.print(
            f"  langsmith: compare: {compare_url(dataset_url, projects)}",
            highlight=False,
            soft_wrap=True,
        )
    return ok
