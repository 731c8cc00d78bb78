"""A stop the user asked for (Ctrl-C, SIGTERM, SIGHUP), remembered as well as raised.

The stop reaches the code as a KeyboardInterrupt, which a library may swallow: langsmith's
log filters catch ``BaseException`` in a ``finally``, so a stop landing there was lost and
an upload ran on to its end, exit 0. Work that talks to such a library asks
:func:`raise_if_asked` between its steps, so the stop ends it all the same.

Imports nothing, so the signal handlers can note a stop before anything slow loads.
"""

from __future__ import annotations

_asked: list[str] = []


def ask(name: str) -> None:
    """Note that a stop was asked for, by ``name`` (``Ctrl-C``, ``SIGTERM``, ...)."""
    _asked[:] = [name]


def raise_if_asked() -> None:
    """The KeyboardInterrupt of a stop asked for, should it have been swallowed."""
    if _asked:
        raise KeyboardInterrupt(_asked[0])


def forget() -> None:
    """A new command starts: no stop asked for yet (commands run one after another in one
    process when agenteval is driven from Python)."""
    _asked.clear()
