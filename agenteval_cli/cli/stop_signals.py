"""SIGTERM and SIGHUP end every command as Ctrl-C does, and Ctrl-C is quiet from the start.

A command stopped by a signal ends with exit 130, never a traceback nor the shell's bare
143 or 129: ``run`` has its own handlers while it runs (saving what finished,
:mod:`agenteval_cli.execution.guards.watchdog`); the others write as they go, so stopping them
loses nothing already written, and SIGTERM or SIGHUP say so in one line. Importing the
commands takes a while (Typer, Rich): a signal then exits at once with one line.

This module imports only ``os`` and ``signal`` (no ``typing`` even), so that it is in place
before anything slow loads.
"""

from __future__ import annotations

import os
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

INTERRUPTED = 130  # agenteval_cli.core.errors.ExitCode.INTERRUPTED, without importing it
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


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
    """What Ctrl-C does (Typer turns the KeyboardInterrupt into exit 130), with its line."""
    _say(f"interrupted ({_name(signum)}); what was written before stays written")
    raise KeyboardInterrupt(_name(signum))


def quiet_while_importing() -> dict[int, Any]:
    """Any stop signal exits at once with one line, until :func:`restore` is given what
    this returns."""
    return install(_exit_now, STOP_SIGNALS)


def stop_like_ctrl_c() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as Ctrl-C does."""
    install(_interrupt, tuple(s for s in STOP_SIGNALS if s != signal.SIGINT))


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
