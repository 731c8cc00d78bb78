"""Ctrl-C, SIGTERM and SIGHUP during a run, and the guarantee that the process then ends.

The first Ctrl-C (or SIGTERM, or SIGHUP) stops the run: nothing new is dispatched, the calls in
flight get ``grace_s`` seconds to finish and be saved, then they are cancelled. A second
one cancels them at once. That is all done on the event loop, so it needs the calls to let
the loop run: a target in a busy loop never does, and one that swallows ``CancelledError``
never ends. So the process also gets a deadline: ``grace_s`` plus ``CANCEL_S`` after the
first signal, and ``CANCEL_S`` after any further one. A run still going at the deadline is
ended by force, in the main thread, from the signal handler (Python runs it between two
bytecodes even of a busy loop): what finished is saved and the experiments are marked
interrupted (``on_force``), the reason is given, and the process exits with 130.

The handlers are Python-level ones (``signal.signal``), not the event loop's, since those
only run when the loop gets control. A thread keeps the deadline and pokes the main thread
with a signal when it falls due; should the main thread not answer within
``LAST_RESORT_S`` (stuck in C code), the thread ends the process itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from agenteval_cli.core.errors import ExitCode

CANCEL_S = 1.0  # how long cancelled calls get to end before the process is ended by force
LAST_RESORT_S = 3.0  # how long the main thread gets to start saving before the thread exits
SAVE_S = 35.0  # how long saving may take once started (SQLite waits up to 30 s for a lock)
INTERRUPTED = ExitCode.INTERRUPTED
# SIGHUP too: a closed terminal or a dropped ssh session stops the run as Ctrl-C does
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
# The store's code: a forced exit waits while the main thread is in it (mid-commit).
_STORE_FILES = tuple(os.path.join("store", name) for name in ("results.py", "db.py", "tx.py"))


class Interrupts:
    """Route Ctrl-C and SIGTERM to ``stop`` (called on ``loop``) while the run is going,
    and end the process if the run does not end by the deadline (see the module).

    ``on_force(reason)`` saves what can be saved before the forced exit; ``describe(frame)``
    says which calls kept the run going (``frame``: where the main thread was)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stop: Callable[[], None],
        grace_s: float,
        on_force: Callable[[str], None] | None = None,
        describe: Callable[[FrameType | None], str] | None = None,
    ) -> None:
        self.loop, self.stop, self.grace_s = loop, stop, grace_s
        self.on_force, self.describe = on_force, describe
        self.signals = 0
        self.deadline: float | None = None
        self.expired = False
        self.saving = False
        self.closed = False
        self._lock = threading.Lock()
        self._previous: dict[int, Any] = {}
        self._wake_r = self._wake_w = -1
        self._thread: threading.Thread | None = None
        self._main = threading.main_thread().ident

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "pthread_kill"
        ):  # signal handlers can only be set in the main thread (and need POSIX here)
            self.closed = True
            return self
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        for sig in STOP_SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                self._previous[sig] = signal.signal(sig, self._handle)
        self._keep_handlers()
        self._thread = threading.Thread(target=self._watch, name="agenteval-watchdog", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        with self._lock:  # the watchdog pokes the main thread only while this is open
            self.closed = True
            signal.signal = self._real_signal  # type: ignore[assignment]
            for sig, previous in self._previous.items():
                with contextlib.suppress(ValueError, OSError, TypeError):
                    signal.signal(sig, previous)
        self._wake()
        self._thread.join(timeout=1.0)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _keep_handlers(self) -> None:
        """While the run goes, a target setting a handler for a stop signal (an async target
        runs in the main thread, where it may) does not replace the run's: SIG_DFL would kill
        the run unsaved, SIG_IGN make it unstoppable. It is told so, once per signal."""
        real = self._real_signal = signal.signal
        told: set[int] = set()

        def kept(signalnum: int, handler: Any) -> Any:
            if signalnum not in self._previous or self.closed:
                return real(signalnum, handler)
            if signalnum not in told:
                told.add(signalnum)
                name = signal.Signals(signalnum).name
                with contextlib.suppress(OSError):
                    os.write(
                        2,
                        f"warning: a target set a handler for {name} during the run; the run "
                        "keeps its own until it ends, so Ctrl-C, SIGTERM and SIGHUP still stop "
                        "it and save what finished\n".encode(),
                    )
            return signal.getsignal(signalnum)

        signal.signal = kept  # type: ignore[assignment]

    # -- in the main thread, between two bytecodes of whatever it runs ----------------------

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.closed:
            return
        if self.expired:  # the watchdog's poke: the deadline has passed
            self._force(frame)
            return
        now = time.monotonic()
        self.signals += 1
        if self.deadline is None:
            self.deadline = now + self.grace_s + CANCEL_S
        else:
            self.deadline = min(self.deadline, now + CANCEL_S)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
            self.loop.call_soon_threadsafe(self.stop)
        self._wake()

    def _force(self, frame: FrameType | None) -> None:
        if _inside(frame, _STORE_FILES):
            return  # mid-commit: let it finish; the watchdog pokes again
        self.closed = True
        self.saving = True
        reason = "the run did not stop within the grace period"
        if self.describe is not None:
            with contextlib.suppress(Exception):
                reason = self.describe(frame) or reason
        try:
            if self.on_force is not None:
                self.on_force(reason)
            else:
                sys.stderr.write(f"interrupted: {reason}\n")
        except BaseException as exc:  # saving failed: say so, and end all the same
            with contextlib.suppress(Exception):
                sys.stderr.write(f"error: could not save the last results: {exc}\n")
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    if stream.isatty():  # a progress display hid the cursor: show it again
                        stream.write("\x1b[?25h")
                    stream.flush()
            os._exit(INTERRUPTED)

    # -- in the watchdog thread ------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # BlockingIOError: already awake
            os.write(self._wake_w, b"!")

    def _sleep(self, seconds: float | None) -> None:
        ready, _, _ = select.select([self._wake_r], [], [], seconds)
        if ready:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 512)

    def _watch(self) -> None:
        while not self.closed:
            deadline = self.deadline
            if deadline is None or time.monotonic() < deadline:
                self._sleep(None if deadline is None else deadline - time.monotonic())
                continue
            self.expired = True
            give_up = time.monotonic() + LAST_RESORT_S
            while time.monotonic() < give_up:
                with self._lock:
                    if self.closed:
                        break
                    assert self._main is not None
                    signal.pthread_kill(self._main, signal.SIGINT)
                self._sleep(0.2)
            if self.saving:  # the main thread is saving, then exits: give it time
                time.sleep(SAVE_S)
            elif self.closed:  # the run ended by itself meanwhile
                return
            with contextlib.suppress(OSError):
                os.write(
                    2,
                    b"interrupted: the run did not stop and could not be saved in time "
                    b"(the main thread is stuck outside Python); results committed so far "
                    b"are kept\n",
                )
            os._exit(INTERRUPTED)


def _inside(frame: FrameType | None, files: tuple[str, ...]) -> bool:
    """Whether ``frame`` or a frame that called it runs code from one of ``files``."""
    while frame is not None:
        if frame.f_code.co_filename.endswith(files):
            return True
        frame = frame.f_back
    return False


def where(frame: FrameType | None, skip: tuple[str, ...]) -> str | None:
    """``file:line (in function)`` of the innermost frame not in one of ``skip``."""
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.endswith(skip):
            name = os.path.basename(code.co_filename)
            return f"{name}:{frame.f_lineno} (in {code.co_name})"
        frame = frame.f_back
    return None
