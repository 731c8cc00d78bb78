"""A thread pool whose threads never hold the process open, and never grow without bound.

Sync targets run in worker threads (``asyncio.to_thread``). A thread cannot be cancelled, so
a target that hangs past its timeout keeps its thread busy forever; with the standard
``ThreadPoolExecutor`` the interpreter then waits for it at exit and ``agenteval run`` never
returns. Here the threads are daemons, the pool grows when all of them are busy (so a stuck
call does not starve the rest) up to ``max_threads``, and shutting down never joins a busy
thread. Past ``max_threads`` a call waits for a thread to free up; a call whose waiter gave
up (its time-out) before a thread took it is never run.
"""

from __future__ import annotations

import functools
import queue
import threading
import types
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any


class DaemonThreadPool(ThreadPoolExecutor):
    """``loop.set_default_executor`` insists on a ThreadPoolExecutor; only its type is reused."""

    def __init__(
        self,
        name: str = "agenteval-worker",
        *,
        max_threads: int | None = None,
        waiting: ContextVar[list[Any] | None] | None = None,
    ) -> None:
        super().__init__(max_workers=1, thread_name_prefix=name)
        self._name = name
        self._max_threads = max_threads
        self._waiting_var = waiting  # the submitter's list of requests that had to wait
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0
        self._waiting = 0  # calls queued while every thread was busy and no more could start
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if self._idle:
                self._idle -= 1  # an idle thread will take it
            elif self._max_threads is None or self._started < self._max_threads:
                self._started += 1
                threading.Thread(
                    target=self._loop, name=f"{self._name}-{self._started}", daemon=True
                ).start()
            else:
                self._waiting += 1  # the next thread to finish its call takes it
                waited = None if self._waiting_var is None else self._waiting_var.get()
                if waited is not None:
                    waited.append(future)
            self._work.put((future, fn, args, kwargs))
        return future

    def _loop(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except (StopIteration, GeneratorExit) as exc:
                    # asyncio refuses StopIteration in a future (the call would never end),
                    # and a GeneratorExit thrown into the awaiting task closes every
                    # coroutine on the way up, the run included. As a coroutine does with
                    # StopIteration, turn them into a RuntimeError.
                    error = RuntimeError(f"{_name(fn, args)} raised {type(exc).__name__}")
                    error.__cause__ = exc
                    future.set_exception(error)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            with self._lock:
                if self._waiting:
                    self._waiting -= 1  # this thread takes a waiting call next
                else:
                    self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Idle threads exit; busy ones are left to finish (or hang) on their own."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in range(self._started):
                self._work.put(None)
        super().shutdown(wait=False)


def _name(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The function a worker thread runs, seen through ``Context.run(f, ...)``, which
    ``asyncio.to_thread`` (in a ``partial``) and :mod:`agenteval_cli.trace.threads` submit."""
    while True:
        if isinstance(fn, functools.partial):
            args = fn.args
            fn = fn.func
        elif isinstance(fn, types.BuiltinMethodType) and fn.__name__ == "run" and args:
            fn, args = args[0], args[1:]  # Context.run(f, *args)
        else:
            return getattr(fn, "__name__", None) or type(fn).__name__
