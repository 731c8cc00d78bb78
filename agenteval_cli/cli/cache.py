"""``agenteval cache ...``: the response cache kept in the store."""

from __future__ import annotations

from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    StoreOption,
    app,
    open_store,
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
    with user_errors(), open_store(store_path, write=True) as store:
        removed = store.cache_clear(target)
        what = f" of {target}" if target else ""
        stdout().print(f"cleared {removed} cached call(s){what} from {store_path}", highlight=False)


@cache_app.command("info")
def cache_info(store_path: StoreOption = DEFAULT_STORE) -> None:
    """How many calls are cached, per target import path, and which no run will use again
    because the target's source, a ``cache_env`` variable or a variable the call read
    changed since.

    Example: agenteval cache info"""
    with user_errors(), open_store(store_path) as store:
        out = stdout()
        stats = store.cache_stats()
        if not stats:
            out.print(f"the cache in {store_path} is empty", highlight=False)
        stale = _stale_entries(store.cache_fingerprints())
        for path, count in stats:
            out.print(f"{count:>8}  {path}", highlight=False)
            for entries, why in stale.get(path, []):
                out.print(
                    f"{'':>8}  {entries} no longer match: {why}", highlight=False, soft_wrap=True
                )


def _stale_entries(groups: list[tuple[str, str | None, int]]) -> dict[str, list[tuple[int, str]]]:
    """Per target import path, ``(entries, why)`` for the entries a run would not use; the
    entries stale for the same reason counted together (each set of variables its calls
    read is a fingerprint of its own)."""
    from agenteval_cli.execution.fingerprint import Fingerprint

    counted: dict[str, dict[str, int]] = {}
    for path, fingerprint_json, count in groups:
        if fingerprint_json is None:
            why = "cached before the target's source was part of the key"
        else:
            changes = Fingerprint.from_json(fingerprint_json).changes()
            if not changes:
                continue
            why = f"{'; '.join(changes)} since they were cached"
        reasons = counted.setdefault(path, {})
        reasons[why] = reasons.get(why, 0) + count
    return {path: [(n, why) for why, n in reasons.items()] for path, reasons in counted.items()}
