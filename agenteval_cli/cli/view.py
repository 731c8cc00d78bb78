"""``agenteval view``: the HTML comparison of the latest run, written and opened.

No names to type: the latest run of SPEC (or of the store, without one) is the one shown.
The report is a static file beside the store, so it can be kept, mailed or attached to a CI
job; it is opened in a browser only where one can show it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    EnvFileOption,
    StoreOption,
    app,
    set_spec_env,
    user_errors,
)


@app.command()
def view(
    spec_path: Annotated[
        Path | None,
        typer.Argument(
            metavar="[SPEC]", help="Show the latest run of this spec.", show_default=False
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Where to write the report (default: reports/ beside the store).",
            show_default=False,
        ),
    ] = None,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Write the report; do not open a browser.")
    ] = False,
    store_path: StoreOption = DEFAULT_STORE,
    env_file: EnvFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Write the HTML comparison of the latest run and open it in a browser.

    Example: agenteval view configs/routing.yaml"""
    from agenteval_cli import api
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.core.filenames import path_in

    with user_errors(debug):
        if spec_path is not None:
            set_spec_env(spec_path, env_file)
        found = api.latest_run(spec_path, store=store_path)
        if found is None:
            of = f" of {spec_path}" if spec_path is not None else ""
            raise UserError(
                f"no run{of} in {store_path}",
                hint=f"run 'agenteval run {spec_path or 'SPEC'}' first, or pass --store",
            )
        path = output or path_in(store_path.parent / "reports", found.name, ".html")
        title = f"{found.prefix} · {' vs '.join(s.target for s in found.experiments)}"
        try:
            api.write_report(found.experiments, html=path, title=title, allow_different_data=True)
        except OSError as exc:
            raise UserError(
                f"cannot write the report: {exc.strerror}",
                file=path,
                hint="give a writable path with -o",
            ) from None
    typer.echo(f"wrote {path}")
    if no_open or not _can_show_a_page():
        typer.echo(f"open it in a browser: {path.resolve().as_uri()}")
        return
    import webbrowser

    if not webbrowser.open(path.resolve().as_uri()):
        typer.echo(f"no browser could be started; open {path.resolve().as_uri()}")


def _can_show_a_page() -> bool:
    """A browser the user chose (``$BROWSER``), a desktop (macOS, Windows) or a display
    (X11, Wayland) on a terminal. Elsewhere (CI, ssh) Python's fallback would be a text-mode
    browser taking over the terminal, so the path is printed instead."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    has_display = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return has_display and sys.stdout.isatty()
