"""The response cache: a target's outputs and trace, reused for the same call.

A call is the same when the target's identity (its import path and the options that change
what it is sent), the example's inputs and the repetition index are the same. The repetition
index is part of the key so that ``repetitions: 5`` still measures five answers, not one
answer five times. A conversation is cached whole, its turns with it (its inputs hold every
turn, so the key does). Only successful calls are cached; errors, and a conversation that
ended in an error or at an interrupt, are always called again. The entries
live in the store's ``cache`` table, written in the same transaction as the result.

Each entry keeps the hashes of the environment variables its call read
(:mod:`agenteval_cli.execution.env_reads`, in its fingerprint): an entry one of them has
changed for since is not served, and the call made again replaces it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agenteval_cli.core.interrupts import returned_interrupt
from agenteval_cli.core.records import Trace, Turn
from agenteval_cli.execution.fingerprint import Fingerprint

if TYPE_CHECKING:
    from agenteval_cli.spec.model import TargetSpec
    from agenteval_cli.store.db import Store


def target_identity(
    import_path: str,
    input_key: str = "question",
    initial_state: dict[str, Any] | None = None,
    **options: Any,
) -> str:
    """What makes two targets the same for the cache; the name in the spec is only a label.

    ``options`` are the target's ``input``, ``output`` and ``config`` (see
    :func:`target_options`); those left out leave the identity as it was without them.
    """
    identity = {"target": import_path, "input_key": input_key, "initial_state": initial_state or {}}
    identity.update((key, value) for key, value in sorted(options.items()) if value is not None)
    return _canonical(identity)


def target_options(target: TargetSpec, base_dir: Path) -> dict[str, Any]:
    """A spec target's ``input``, ``output``, ``config`` and ``faults``, as they change what
    it is sent, what it does and what counts as its answer (a faulted target never shares
    an answer with its fault-free twin); an input function's file is made absolute."""
    prepare = target.input
    if isinstance(prepare, str):
        prepare = absolute_import_path(prepare, base_dir)
    config = target.config.runnable_config() if target.config is not None else None
    faults = [fault.model_dump(mode="json") for fault in target.faults] or None
    return {"input": prepare, "output": target.output, "config": config or None, "faults": faults}


def absolute_import_path(import_path: str, base_dir: Path) -> str:
    """``file.py:attr`` with the file made absolute: two specs' ``targets.py`` differ."""
    source, _, attr = import_path.rpartition(":")
    if source.endswith(".py"):
        return f"{(base_dir / source).resolve()}:{attr}"
    return import_path


def cache_key(identity: str, inputs: dict[str, Any], repetition: int) -> str:
    """SHA-256 of the identity, the canonical inputs and the repetition index."""
    text = _canonical({"identity": identity, "inputs": inputs, "repetition": repetition})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    from agenteval_cli.store.results import dumps

    # Through the store's encoder first, so values JSON cannot hold still give a stable key.
    return json.dumps(json.loads(dumps(value)), sort_keys=True, separators=(",", ":"))


@dataclass
class CachedCall:
    outputs: dict[str, Any]
    trace: Trace
    latency_s: float
    turns: list[Turn] | None = None  # a conversation's, cached whole (unscored)


class Answers(Protocol):
    """Where the runner looks up a cached answer: the store, or the answers a distributed
    run's driver looked up and sent with the work."""

    def get(self, key: str) -> CachedCall | None: ...


class ResponseCache:
    """Lookups for the runner; writes go through ``Store.add_result(cache_key=...)``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.hits = 0
        # entries not served, by the variables their call read that have changed since
        self.changed: dict[tuple[str, ...], int] = {}

    def get(self, key: str) -> CachedCall | None:
        found = self.store.cache_get(key)
        if found is None or returned_interrupt(found.outputs) is not None:
            return None  # an interrupted answer (cached before they were told apart): call again
        changed = () if found.fingerprint is None else _parsed(found.fingerprint).changed_reads()
        if changed:
            self.changed[tuple(changed)] = self.changed.get(tuple(changed), 0) + 1
            return None
        self.hits += 1
        cached = Trace.from_dict(found.trace)
        cached.latency_s = found.latency_s  # the trace's JSON may leave it to the column
        return CachedCall(
            outputs=found.outputs, trace=cached, latency_s=found.latency_s, turns=found.turns
        )


def entry_fingerprint(target_fingerprint: str | None, reads: dict[str, str] | None) -> str | None:
    """The fingerprint JSON kept with one cache entry: its target's, with the hashes of the
    variables the call read."""
    if target_fingerprint is None or not reads:
        return target_fingerprint
    return dataclasses.replace(_parsed(target_fingerprint), reads=reads).to_json()


def changed_note(answers: Answers | None) -> str | None:
    """The run's note when cached answers were not served, a variable their call read having
    changed since (they are called again): said, not only found by ``cache info``."""
    changed = getattr(answers, "changed", None)
    if not changed:
        return None
    count = sum(changed.values())
    names = sorted({name for names in changed for name in names})
    return (
        f"{count} cached answer(s) called again: "
        f"{', '.join('$' + name for name in names)} changed since they were cached"
    )


@functools.lru_cache(maxsize=64)
def _parsed(fingerprint_json: str) -> Fingerprint:
    """Entries share a few fingerprints (a target's, with each set of variables read):
    each is decoded once. Treated as read-only."""
    return Fingerprint.from_json(fingerprint_json)
