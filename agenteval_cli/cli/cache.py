"""``agenteval cache ...``: the response cache kept in the store."""

from __future__ import annotations

from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    StoreOption,
    app,
    stdout,
    user_errors,
)

cache_app = typer.Typer(help="Inspect and clear the response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("clear")
def cache_clear(
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            "-t",
            metavar="IMPORT_PATH",
            help="Clear only the calls of this target import path (e.g. pkg.graphs:swarm).",
        ),
    ] = None,
    store_path: StoreOption = DEFAULT_STORE,
) -> None:
    """Delete cached target outputs, so the next cached run calls the targets again.

    Example: agenteval cache clear"""
    from agenteval_cli.api import clear_cache

    with user_errors():
        removed = clear_cache(target, store=store_path)
        what = f" of {target}" if target else ""
        stdout().print(f"cleared {removed} cached call(s){what} from {store_path}", highlight=False)


@cache_app.command("info")
def cache_info(store_path: StoreOption = DEFAULT_STORE) -> None:
    """How many calls are cached, per target import path, and which no run will use again
    because the target's source, a ``cache_env`` variable or a variable the call read
    changed since.

    Example: agenteval cache info"""
    from agenteval_cli.api import cache_info

    with user_errors():
        cached = cache_info(store=store_path)
    out = stdout()
    if not cached:
        out.print(f"the cache in {store_path} is empty", highlight=False)
    for found in cached:
        out.print(f"{found.count:>8}  {found.path}", highlight=False)
        for entries, why in found.stale:
            out.print(f"{'':>8}  {entries} no longer match: {why}", highlight=False, soft_wrap=True)
