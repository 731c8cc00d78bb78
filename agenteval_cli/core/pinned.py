"""What a run fixes when it starts, whatever its targets do to the process meanwhile.

A target runs in this process: it may ``os.chdir()``, close or replace ``sys.stdout``, or pop
a secret from the environment before raising with it. The outputs a run writes after its
calls (``--json``, ``--html``, ``--junit``, ``--save-baseline``...) are then written where
they were asked for, the table still prints, and the secret is still redacted:
:func:`pinned_process` puts the working directory and the standard streams back when the
calls end (with a warning saying what the target changed), and the secrets' values present
at the start stay redacted (:func:`agenteval_cli.core.redact.remember_environment`). The
processes a target started and left running are ended (:mod:`agenteval_cli.core.children`),
those that detached themselves by a double fork too (for the run, orphans are
re-parented to this process on Linux, where the sweep finds them), and a target
calling ``os._exit(0)`` cannot end the process with a success.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import NoReturn, TextIO

from agenteval_cli.core.children import adopt_orphans, descendants, end_leftovers
from agenteval_cli.core.errors import ExitCode
from agenteval_cli.core.redact import remember_environment

__all__ = ["Pin", "pinned_process", "reopened"]


class Pin:
    """The working directory and standard streams at the start, to put back."""

    def __init__(self) -> None:
        remember_environment()
        self.cwd = _cwd()
        self.streams = {"stdout": sys.stdout, "stderr": sys.stderr}
        self.children = set(descendants())
        self.adopted = adopt_orphans()  # what it was; None: orphans go to init, unseen
        self.restored = False
        self.real_exit = _guard_exit()

    def restore(self, *, end_children: bool = True) -> list[str]:
        """Undo what changed since the start (once): the working directory, the standard
        streams, and (``end_children``) the processes started since that still run; a line
        for each change undone."""
        if self.restored:
            return []
        self.restored = True
        os._exit = self.real_exit  # type: ignore[assignment]
        changes: list[str] = end_leftovers(self.children) if end_children else []
        if self.adopted is not None:
            adopt_orphans(self.adopted)
        _restore_cwd(self.cwd, changes)
        for name, stream in self.streams.items():
            _restore_stream(name, stream, changes)
        return changes


@contextmanager
def pinned_process() -> Iterator[Pin]:
    """Within, targets may change the working directory and the standard streams; by the
    end (or by an earlier ``pin.restore()``, which says what it undid) both are as they
    were at the start."""
    pin = Pin()
    try:
        yield pin
    finally:
        pin.restore()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _guard_exit() -> Callable[[int], NoReturn]:
    """Replace ``os._exit`` while the run goes: a target calling it (from any thread) ends
    the process as it asked, but with a line on stderr, and never with exit 0, which would
    read as a run that finished and passed. agenteval's own forced exits and forked child
    processes exit as they ask. Returns the real one, to put back."""
    real = os._exit
    pid = os.getpid()

    def guarded(code: int) -> NoReturn:
        caller = sys._getframe(1).f_code.co_filename
        if os.getpid() != pid or caller.startswith(_PACKAGE + os.sep):
            real(code)
        with suppress(OSError):
            os.write(
                2,
                f"error: a target called os._exit({code}) during the run; the results that "
                "finished are saved in the store, and --resume continues the run\n".encode(),
            )
        real(code or ExitCode.RUN_ERRORS)

    os._exit = guarded  # type: ignore[assignment]
    return real


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # started in a folder deleted since: nothing to pin
        return None


def _restore_cwd(start: str | None, warnings: list[str]) -> None:
    now = _cwd()
    if start is None or now == start:
        return
    try:
        os.chdir(start)
    except OSError as exc:
        warnings.append(
            f"a target changed the working directory to {now} during the run, and "
            f"{start} cannot be entered again ({exc.strerror}): relative output paths "
            "are written from there"
        )
        return
    warnings.append(
        f"a target changed the working directory to {now} during the run; it is {start} "
        "again, so the outputs are written where they were asked for"
    )


def _restore_stream(name: str, start: TextIO, warnings: list[str]) -> None:
    """``sys.<name>`` back to ``start``; a fresh stream on the same file descriptor if the
    target closed it (closing ``sys.stdout`` leaves the descriptor open)."""
    now = getattr(sys, name)
    if now is start and not _closed(start):
        return
    if not _closed(start):
        setattr(sys, name, start)
        warnings.append(f"a target replaced sys.{name} during the run; it is restored")
        return
    fresh = _reopen(start)
    if fresh is None:
        return  # not a descriptor's stream (a test runner's capture): nothing to reopen
    setattr(sys, name, fresh)
    warnings.append(f"a target closed sys.{name} during the run; it is open again")


def _closed(stream: TextIO) -> bool:
    return bool(getattr(stream, "closed", False))


def reopened(stream: TextIO) -> TextIO | None:
    """A fresh stream on the descriptor of ``stream``, a standard stream a target closed
    while the run still writes to it (its progress, its warnings); None when it has none."""
    return _reopen(stream)


def _reopen(stream: TextIO) -> TextIO | None:
    name = getattr(stream, "name", "")
    descriptor = name if type(name) is int else {"<stdout>": 1, "<stderr>": 2}.get(str(name))
    if descriptor is None:
        return None
    try:
        os.fstat(descriptor)
    except OSError:  # the descriptor itself was closed: writing fails, and says so
        return None
    return open(  # the process's stream from now on
        descriptor,
        "w",
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors=getattr(stream, "errors", None) or "strict",
        closefd=False,
        buffering=1,
    )
