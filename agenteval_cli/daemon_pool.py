"""A thread pool whose threads never hold the process open.

Sync targets run in worker threads (``asyncio.to_thread``). A thread cannot be cancelled, so
a target that hangs past its timeout keeps its thread busy forever; with the standard
``ThreadPoolExecutor`` the interpreter then waits for it at exit and ``agenteval run`` never
returns. Here the threads are daemons, the pool grows when all of them are busy (so a stuck
call does not starve the rest), and shutting down never joins a busy thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class DaemonThreadPool(ThreadPoolExecutor):
    """``loop.set_default_executor`` insists on a ThreadPoolExecutor; only its type is reused."""

    def __init__(self, name: str = "agenteval-worker") -> None:
        super().__init__(max_workers=1, thread_name_prefix=name)
        self._name = name
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if self._idle:
                self._idle -= 1  # an idle thread will take it
            else:
                self._started += 1
                threading.Thread(
                    target=self._loop, name=f"{self._name}-{self._started}", daemon=True
                ).start()
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
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            with self._lock:
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
