"""What a call was waiting on outside this process when its time ran out, so the time-out
names it: a served graph's server that went quiet is the server's stall, not blocking code
of the target's (:mod:`agenteval_cli.execution.guards.deadline` reads it)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import monotonic

# What the wait says of itself, given how long it has lasted (in seconds).
Says = Callable[[float], str]


class Waiting:
    """The wait a call is in (``says`` what it awaits, ``since`` when nothing came), and
    what it said when the call was cancelled in it (``said``)."""

    def __init__(self) -> None:
        self.says: Says | None = None
        self.since = 0.0
        self.said: str | None = None

    def heard(self) -> None:
        """Something came: the wait starts over."""
        self.since = monotonic()

    def text(self) -> str | None:
        """What the call awaited when it was cancelled, or awaits now; None outside a wait."""
        if self.said is not None:
            return self.said
        return None if self.says is None else self.says(monotonic() - self.since)


_CURRENT: contextvars.ContextVar[Waiting | None] = contextvars.ContextVar(
    "agenteval_waiting_on", default=None
)


class watched:
    """The waits of the call made in this block (the runner's side). A class rather than a
    generator: it is entered once per target call."""

    def __enter__(self) -> Waiting:
        waiting = Waiting()
        self._token = _CURRENT.set(waiting)
        return waiting

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


@contextmanager
def waiting_on(says: Says) -> Iterator[Waiting]:
    """The call awaits what ``says`` describes (the target's side); a cancellation inside
    (the call's time-out) keeps what it said then. Outside a run it is noted nowhere."""
    waiting = _CURRENT.get() or Waiting()
    waiting.says, waiting.said = says, None
    waiting.heard()
    try:
        yield waiting
    except asyncio.CancelledError:
        waiting.said = waiting.text()
        raise
    finally:
        waiting.says = None
