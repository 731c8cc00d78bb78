"""The response cache kept in the store, from Python: what it holds and clearing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.api.running import opened_store
from agenteval_cli.api.showing import read_store

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store


@dataclass(frozen=True)
class CachedTarget:
    """The calls cached for one target import path, and those no run will use again:
    ``(entries, why)``, the entries stale for the same reason counted together."""

    path: str
    count: int
    stale: list[tuple[int, str]] = field(default_factory=list)


def cache_info(*, store: str | Path | Store | None = None) -> list[CachedTarget]:
    """Per target import path, the calls cached and the stale ones (the target's source, a
    ``cache_env`` variable or a variable the call read changed since)."""
    with read_store(store) as opened:
        stats = opened.cache_stats()
        stale = _stale_entries(opened.cache_fingerprints())
    return [CachedTarget(path, count, stale.get(path, [])) for path, count in stats]


def clear_cache(target: str | None = None, *, store: str | Path | Store | None = None) -> int:
    """Delete the cached calls (of one target import path, if given): the next cached run
    calls the targets again. The number deleted."""
    with opened_store(store, must_exist=True) as opened:
        return opened.cache_clear(target)


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
