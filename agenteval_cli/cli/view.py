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
    open_store,
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
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.core.filenames import path_in
    from agenteval_cli.report import comparison
    from agenteval_cli.report.html import write_html
    from agenteval_cli.results import sources
    from agenteval_cli.store.lookup import latest_run

    with user_errors(debug):
        prefix = source = None
        if spec_path is not None:
            from agenteval_cli.spec.model import load_spec

            set_spec_env(spec_path, env_file)
            spec = load_spec(spec_path)
            prefix, source = spec.experiment_prefix, spec.source
        with open_store(store_path) as store:
            group = latest_run(store, prefix=prefix, spec_path=source)
            if not group:
                of = f" of {spec_path}" if spec_path is not None else ""
                raise UserError(
                    f"no run{of} in {store_path}",
                    hint=f"run 'agenteval run {spec_path or 'SPEC'}' first, or pass --store",
                )
            sides = [sources.from_store(store, e) for e in group]
        result = comparison.build(sides, allow_different_data=True)
        thresholds: dict = {}
        for side in reversed(sides):
            thresholds.update(side.thresholds)
        path = output or path_in(store_path.parent / "reports", group[0].name, ".html")
        title = f"{group[0].prefix} · {' vs '.join(result.names)}"
        try:
            write_html(path, result, thresholds=thresholds, title=title)
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
