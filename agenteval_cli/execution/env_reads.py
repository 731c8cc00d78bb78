"""Which environment variables a target call reads, so a cached answer can depend on them.

A target that picks its model from ``os.environ`` (or ``os.getenv``, which reads it) gives
other answers once the variable changes; ``cache_env:`` only helps when the spec names it.
While :func:`recording` is active, ``os.environ``'s class is swapped for one that notes each
variable read by name, with its value at the first read, in the :class:`EnvReads` of the
call running in this context (a context variable: calls run at once in one event loop and in
worker threads, each reaching its own). Only the hashes of the values are kept
(:meth:`EnvReads.hashes`).

Not counted, as they do not say which variables the answer depends on:

- reads the call makes of a variable it set itself first;
- a walk over the whole environment (``dict(os.environ)``, ``os.environ.items()``, a
  subprocess's environment, a proxy lookup): its keys are marked, and a read by a marked
  key is not noted;
- LangSmith's and LangChain's tracing settings (:data:`IGNORED_PREFIXES`), which change
  where a run is traced, not what it answers;
- secrets (``OPENAI_API_KEY``, ...: :func:`agenteval_cli.core.redact.is_secret_name`): a
  rotated key gives the same answers, and no hash of a secret is kept.

Reads made before the call (at import time, by a client built once) cannot be seen: those
variables go in ``cache_env:``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agenteval_cli.core.redact import is_secret_name
from agenteval_cli.execution.fingerprint import env_hashes

__all__ = ["IGNORED_PREFIXES", "EnvReads", "recording"]

IGNORED_PREFIXES = ("LANGSMITH_", "LANGCHAIN_")

_READS: ContextVar[EnvReads | None] = ContextVar("agenteval_env_reads", default=None)
_Environ: type = type(os.environ)
_lock = threading.Lock()
_users = 0  # recording blocks active


class EnvReads:
    """The variables one call read by name: the value at the first read (None: unset)."""

    __slots__ = ("seen", "written")

    def __init__(self) -> None:
        self.seen: dict[str, str | None] = {}
        self.written: set[str] = set()

    def saw(self, name: str, value: str | None) -> None:
        if name not in self.seen and name not in self.written and not _ignored(name):
            self.seen[name] = value

    def hashes(self) -> dict[str, str]:
        """Name -> hash of the value read (``unset``), as ``cache_env:`` keeps them."""
        return env_hashes(sorted(self.seen), self.seen)


def _ignored(name: str) -> bool:
    return name.upper().startswith(IGNORED_PREFIXES) or is_secret_name(name)


class _Listed(str):
    """A key handed out by a walk over the environment: reading by it is not noted."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))  # travels (pickled) as a plain str


class _Watched(_Environ):  # type: ignore[misc,valid-type]
    """``os.environ`` while calls are recorded: each read by name is noted in the
    :class:`EnvReads` of the call running in this context, if any."""

    def __getitem__(self, key: str) -> str:
        reads = _READS.get()
        if reads is None or type(key) is _Listed:
            return super().__getitem__(key)  # type: ignore[no-any-return]
        try:
            value: str = super().__getitem__(key)
        except KeyError:
            reads.saw(key, None)
            raise
        reads.saw(key, value)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        reads = _READS.get()
        if reads is not None:
            reads.written.add(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        reads = _READS.get()
        if reads is not None:
            reads.written.add(key)

    def __iter__(self) -> Iterator[str]:
        if _READS.get() is None:
            yield from super().__iter__()
        else:
            for key in super().__iter__():
                yield _Listed(key)


@contextmanager
def recording() -> Iterator[EnvReads]:
    """Within the block, the variables this context (and the tasks and threads it starts)
    reads from ``os.environ`` are noted in the :class:`EnvReads` it yields."""
    reads = EnvReads()
    watching = _install()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)
        if watching:
            _uninstall()


def _install() -> bool:
    """Swap ``os.environ``'s class (every reference to it sees the change); False when
    ``os.environ`` is not the standard mapping (replaced by a test), which is left alone."""
    global _users
    with _lock:
        environ = os.environ
        if type(environ) not in (_Environ, _Watched):
            return False
        _users += 1
        if _users == 1:
            environ.__class__ = _Watched
        return True


def _uninstall() -> None:
    global _users
    with _lock:
        _users -= 1
        if _users == 0 and type(os.environ) is _Watched:
            os.environ.__class__ = _Environ
