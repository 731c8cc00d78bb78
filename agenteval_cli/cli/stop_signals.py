"""SIGTERM and SIGHUP end every command as Ctrl-C does, and Ctrl-C is quiet from the start.

A command stopped by a signal ends with exit 130, never a traceback nor the shell's bare
143 or 129: ``run`` has its own handlers while it runs (saving what finished,
:mod:`agenteval_cli.execution.guards.watchdog`); the others write as they go, so
stopping them loses nothing already written. SIGTERM and SIGHUP raise the KeyboardInterrupt
that Ctrl-C raises, and each ends the command where every command ends
(:class:`agenteval_cli.cli.common.RootGroup`) with one line saying so, and what the
command did (:func:`set_stop_note`). Importing the commands takes a while (Typer, Rich): a
signal then exits at once with one line.

This module imports only ``os``, ``signal`` and :mod:`agenteval_cli.core.stops` (no
``typing`` even), so that it is in place before anything slow loads.
"""

from __future__ import annotations

import os
import signal

from agenteval_cli.core import stops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

INTERRUPTED = 130  # agenteval_cli.core.errors.ExitCode.INTERRUPTED, without importing it
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_SIGNAL_NAMES = ("Ctrl-C", "SIGTERM", "SIGHUP")


def _name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def _say(line: str) -> None:
    # os.write, not sys.stderr: the handler may run while the main thread is inside a write
    try:  # noqa: SIM105 (contextlib is one more import before the handler is in place)
        os.write(2, f"{line}\n".encode())
    except OSError:
        pass


def _exit_now(signum: int, _frame: FrameType | None) -> None:
    _say(f"interrupted ({_name(signum)}) while starting: nothing was done")
    raise SystemExit(INTERRUPTED)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """What Ctrl-C does: a KeyboardInterrupt, named after the signal for its line
    (:func:`interrupted_line`, printed where every command ends), and remembered, should a
    library swallow it (:mod:`agenteval_cli.core.stops`)."""
    stops.ask(_name(signum))
    raise KeyboardInterrupt(_name(signum))


# What a command stopped now has done, said after "interrupted (Ctrl-C); " (set_stop_note)
WRITTEN_STAYS = "what was written before stays written"
_note: list[str] = []


def set_stop_note(note: str | None) -> None:
    """What the line of a command being stopped says it did and how to go on (an upload:
    what was sent, and the command that sends the rest); None: the default, that what was
    written stays written."""
    _note[:] = [] if note is None else [note]


def interrupted_line(exc: BaseException) -> str:
    """The one line of a command stopped by a KeyboardInterrupt: by Ctrl-C, or by the
    signal :func:`stop_like_ctrl_c` named in it."""
    named = exc.args[0] if exc.args else None
    name = named if named in _SIGNAL_NAMES else "Ctrl-C"
    return f"interrupted ({name}); {_note[0] if _note else WRITTEN_STAYS}"


def say_interrupted(exc: BaseException) -> None:
    """:func:`interrupted_line` on stderr (nothing if stderr is gone)."""
    _say(interrupted_line(exc))


def quiet_while_importing() -> dict[int, Any]:
    """Any stop signal exits at once with one line, until :func:`restore` is given what
    this returns."""
    return install(_exit_now, STOP_SIGNALS)


def stop_like_ctrl_c() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as Ctrl-C does (and
    Ctrl-C's is remembered as theirs are)."""
    install(_interrupt, STOP_SIGNALS)


def install(handler: Any, signals: tuple[int, ...]) -> dict[int, Any]:
    """``handler`` for ``signals``; the handlers it replaced. Outside the main thread (where
    handlers cannot be set: agenteval used as a library) nothing changes."""
    previous: dict[int, Any] = {}
    for signum in signals:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):
            break
    return previous


def restore(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        try:  # noqa: SIM105
            signal.signal(signum, handler)
        except (ValueError, OSError, TypeError):
            pass
