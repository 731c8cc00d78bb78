"""Carry the caller's context into the threads a target starts, for the length of a run.

A target call is traced through a context variable (:mod:`agenteval_cli.trace.recorder`). Asyncio
tasks and ``asyncio.to_thread`` copy the context; a bare ``threading.Thread``, a
``ThreadPoolExecutor`` and ``loop.run_in_executor`` do not, so a graph a target runs there
would go unrecorded. While :func:`follow_threads` is active:

- work submitted to any ``ThreadPoolExecutor`` (every subclass with a ``submit`` of its own
  included: the runner's :class:`~agenteval_cli.execution.guards.daemon_pool.DaemonThreadPool`,
  which asyncio uses as its default executor, and pools a target makes) runs in a copy of
  the submitter's context, as ``asyncio.to_thread`` does;
- a ``threading.Thread`` runs in a copy of the context of the thread that started it
  (executors' own worker threads excepted: each of their jobs gets its submitter's).

Each submission copies the context it is made in, so calls running at once each reach
their own recorder. A pool that already copies the context (LangChain's) copies once more,
which changes nothing. The original methods are put back when the last user leaves.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from concurrent.futures import thread as _futures_thread
from contextlib import contextmanager
from functools import partial
from typing import Any

__all__ = ["follow_threads"]

_lock = threading.Lock()
_users = 0  # follow_threads blocks active (runs may overlap, in threads of their own)
_patched: list[tuple[type, str, Any]] = []  # (class, attribute, original), to restore
_POOL_WORKER = getattr(_futures_thread, "_worker", None)  # ThreadPoolExecutor's thread loop


@contextmanager
def follow_threads() -> Iterator[None]:
    """Within the block, threads and executor jobs run in a copy of their starter's context."""
    _install()
    try:
        yield
    finally:
        _uninstall()


def _install() -> None:
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        for cls in _thread_pools():
            original = cls.__dict__["submit"]
            _patched.append((cls, "submit", original))
            cls.submit = _copying_submit(original)  # type: ignore[method-assign]
        original_start = threading.Thread.__dict__["start"]
        _patched.append((threading.Thread, "start", original_start))
        threading.Thread.start = _copying_start(original_start)  # type: ignore[method-assign]


def _uninstall() -> None:
    global _users
    with _lock:
        _users -= 1
        if _users > 0:
            return
        while _patched:
            cls, name, original = _patched.pop()
            setattr(cls, name, original)


def _thread_pools() -> list[type[ThreadPoolExecutor]]:
    """ThreadPoolExecutor and every subclass now defined that has a ``submit`` of its own."""
    found: list[type[ThreadPoolExecutor]] = []
    pending: list[type[ThreadPoolExecutor]] = [ThreadPoolExecutor]
    seen: set[type[ThreadPoolExecutor]] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        if "submit" in cls.__dict__:
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def _copying_submit(original: Callable[..., Any]) -> Callable[..., Any]:
    def submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return original(self, contextvars.copy_context().run, fn, *args, **kwargs)

    submit.__wrapped__ = original  # type: ignore[attr-defined]
    return submit


def _copying_start(original: Callable[[threading.Thread], None]) -> Callable[..., None]:
    def start(self: threading.Thread) -> None:
        if not _is_pool_worker(self):
            # Thread._bootstrap_inner calls self.run(): an instance attribute wins over the
            # class's (or a subclass's) method.
            self.run = partial(contextvars.copy_context().run, self.run)  # type: ignore[method-assign]
        original(self)

    start.__wrapped__ = original  # type: ignore[attr-defined]
    return start


def _is_pool_worker(thread: threading.Thread) -> bool:
    """An executor's worker thread: it outlives the job that started it, and each job it
    runs brings its own context."""
    target = getattr(thread, "_target", None)
    if target is None:
        return False
    return target is _POOL_WORKER or isinstance(getattr(target, "__self__", None), Executor)
