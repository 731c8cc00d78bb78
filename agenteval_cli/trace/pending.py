"""Tracing that waits for LangChain: a run of plain functions never imports it.

A call's trace is recorded by a LangChain callback handler (:mod:`agenteval_cli.trace.recorder`),
and importing LangChain costs about half a second of start-up. So a call that starts before
anything has imported LangChain gets a :class:`PendingRecorder`, which imports nothing. If the
target then imports LangChain during the call (a graph built on first use), a hook on that
import registers a configure hook whose handler is made on first use, in the call's own
context: that first call is traced from its first LangChain run, and called once.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.records import Trace

if TYPE_CHECKING:
    from agenteval_cli.trace.recorder import TraceRecorder

__all__ = ["PendingRecorder", "capture_pending", "langchain_loaded", "prepare_tracing"]

FUNCTION = "function"  # the target kind that may never import LangChain (targets.adapt)

# Where LangChain keeps its configure hooks; every callback manager imports it to configure.
_HOOKS_MODULE = "langchain_core.tracers.context"

_pending: ContextVar[PendingRecorder | None] = ContextVar("agenteval_pending", default=None)
_watch_lock = threading.Lock()
_watching = False


def langchain_loaded() -> bool:
    """Whether LangChain's callback configuration is imported in this process."""
    return _HOOKS_MODULE in sys.modules


def prepare_tracing(kinds: Iterable[str]) -> None:
    """Make tracing ready before a run's first call, given the kinds of its targets.

    With LangChain already imported (a graph or Runnable target), or a target whose events
    are replayed into a recorder (a remote graph), the recorder is loaded now, outside the
    run's loop; for plain functions the import is watched instead, so a target that imports
    LangChain during a call is traced on that call.
    """
    if langchain_loaded() or any(kind != FUNCTION for kind in kinds):
        import agenteval_cli.trace.recorder  # noqa: F401
    else:
        _watch_langchain()


class PendingRecorder:
    """A call's recorder before LangChain exists: it becomes a real one on the call's first
    LangChain run, and reads as an empty, untraced trace if none comes."""

    _lock = threading.Lock()  # the recorder is made once per call, rarely: one lock for all

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._started = time.perf_counter()
        self.recorder: TraceRecorder | None = None

    def get(self) -> TraceRecorder:
        """The call's recorder, made on first use (from any thread of the call)."""
        with self._lock:
            if self.recorder is None:
                from agenteval_cli.trace.recorder import TraceRecorder

                recorder = TraceRecorder(**self._options)
                recorder.start(at=self._started)
                self.recorder = recorder
            return self.recorder

    @property
    def callbacks(self) -> list[Any]:
        """What the target is handed as callbacks: the configure hook adds the recorder."""
        return []

    def finish(self, error: BaseException | None = None) -> None:
        if self.recorder is not None:
            self.recorder.finish(error)

    def trace(self) -> Trace:
        return self.recorder.trace() if self.recorder is not None else Trace()

    @property
    def saw_runs(self) -> bool:
        return self.recorder is not None and self.recorder.saw_runs


class capture_pending:
    """As :func:`agenteval_cli.trace.recorder.capture`, for a call made before LangChain is
    imported: ``options`` are the recorder's. A class rather than a generator: it is
    entered once per call of a plain function."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options  # read, never changed: one dict may serve many calls

    def __enter__(self) -> PendingRecorder:
        _watch_langchain()
        self.pending = PendingRecorder(self.options)
        self._token = _pending.set(self.pending)
        return self.pending

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: Any
    ) -> None:
        try:
            self.pending.finish(error)
        finally:
            _pending.reset(self._token)


class _PendingHandler:
    """What LangChain's configure hook reads (it only calls ``get()``): the recorder of the
    pending call whose context is current, made on first use."""

    @staticmethod
    def get() -> TraceRecorder | None:
        pending = _pending.get()
        return None if pending is None else pending.get()


def _register(module: ModuleType) -> None:
    module.register_configure_hook(_PendingHandler(), inheritable=True)


def _watch_langchain() -> None:
    """Register the pending handler with LangChain now, or as soon as LangChain is imported."""
    global _watching
    if _watching:  # set once, never unset: read without the lock
        return
    with _watch_lock:
        if _watching:
            return
        _watching = True
        module = sys.modules.get(_HOOKS_MODULE)
        if module is None:
            sys.meta_path.insert(0, _ImportWatcher(_HOOKS_MODULE, _register))
    if module is not None:
        _register(module)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once ``name`` has been imported, by whichever finder finds it."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self._name = name
        self._then = then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenLoader(spec.loader, self._then)
                return spec
        return None


class _ThenLoader(importlib.abc.Loader):
    """A module's own loader, then a callback on the loaded module."""

    def __init__(self, loader: importlib.abc.Loader, then: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... as the real loader
        return getattr(self._loader, name)
