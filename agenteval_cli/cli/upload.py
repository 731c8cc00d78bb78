"""``agenteval upload EXPERIMENT``: send a stored experiment to LangSmith (again)."""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    app,
    stderr,
    stdout,
    user_errors,
)

if TYPE_CHECKING:
    from pathlib import Path


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
    with user_errors(debug):
        if not upload_after_run(store_path, names, debug):
            raise typer.Exit(4)  # ExitCode.SERVICE_FAILED


def upload_after_run(store: Path, experiments: Any, debug: bool) -> bool:
    """``api.upload``, each experiment's URL (or failure, with how to retry) printed as it
    ends, then a comparison URL; False if any failed. The local results always stay."""
    from agenteval_cli import api
    from agenteval_cli.core.redact import console_text

    err, out = stderr(), stdout()

    def say(text: str) -> None:
        err.print(console_text(text), highlight=False, markup=False)

    def done(one: api.Upload) -> None:
        if one.error is not None:
            _failed(err, store, one)
            return
        assert one.sent is not None
        sent = one.sent
        note = f"{sent.runs} run(s), {sent.child_runs} child run(s), {sent.feedback} feedback"
        if sent.already_sent:
            note += f"; {sent.already_sent} already there"
        out.print(
            console_text(f"  langsmith: {one.target}: {sent.url}  ({note})"),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )

    try:
        with user_errors(debug):
            uploads = api.upload(
                experiments, store=store, on_note=say, on_upload=done, raise_errors=debug
            )
    except KeyboardInterrupt:  # the stop's line says what was sent (the store closes next)
        from agenteval_cli.cli.stop_signals import set_stop_note

        with suppress(Exception):
            set_stop_note(_sent_so_far(store, experiments))
        raise
    if uploads.compare_url is not None:
        out.print(f"  langsmith: compare: {uploads.compare_url}", highlight=False, soft_wrap=True)
    return uploads.ok


def _sent_so_far(store: Path, experiments: Any) -> str:
    """What an upload stopped midway has sent (each result is marked as it is sent), and
    the command that sends the rest."""
    from agenteval_cli.api import sent_so_far

    found = sent_so_far(experiments, store=store)
    names = " ".join(found.rest)  # all sent: the closing steps left
    where = f" --store {store}" if store != DEFAULT_STORE else ""
    return (
        f"{found.sent} of {found.total} result(s) were sent to LangSmith and are marked so; "
        f"'agenteval upload {names}{where}' sends the rest"
    )


def _failed(err, store: Path, one) -> None:
    from rich.markup import escape

    from agenteval_cli.core.redact import console_text

    name = escape(console_text(one.name))
    message = escape(console_text(str(one.error)))
    err.print(f"[bold red]error:[/] upload of {name} failed: {message}", highlight=False)
    err.print(
        console_text(
            f"  the local results are kept; retry with: agenteval upload {one.name}"
            + (f" --store {store}" if store != DEFAULT_STORE else "")
        ),
        highlight=False,
        markup=False,
    )
