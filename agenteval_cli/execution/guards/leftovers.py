"""Tasks a run's calls leave behind: cancelled when the run is over, and those that will
not end (one that catches its ``CancelledError`` and goes on) abandoned with the loop and
named, rather than waited for forever."""

from __future__ import annotations

import asyncio
from typing import Any

# How long the tasks a run's calls left behind get to end once cancelled, when the run is
# over; those still running then (one that swallows its cancellation) are abandoned.
SETTLE_S = 1.0


async def settle(
    before: set[asyncio.Task[Any]], timeout: float = SETTLE_S
) -> list[asyncio.Task[Any]]:
    """Cancel the tasks the calls left behind (started since ``before``) and give them
    ``timeout`` seconds to end; those still running then (one that catches its
    ``CancelledError`` and goes on) are returned, to be abandoned with the loop
    (see :func:`agenteval_cli.execution.experiment.run_loop`) rather than waited for forever."""
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current and task not in before]
    for task in left:
        task.cancel()
    if not left:
        return []
    _, pending = await asyncio.wait(left, timeout=timeout)
    return [task for task in left if task in pending]


def coroutine_name(task: asyncio.Task[Any]) -> str:
    """The name of the coroutine a task runs (``stubborn``), else the task's own name."""
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or getattr(coro, "__name__", None)
    return str(name or task.get_name())


def abandoned_warnings(abandoned: list[asyncio.Task[Any]]) -> list[str]:
    """One line when tasks the calls left behind would not end when cancelled."""
    left = [task for task in abandoned if not task.done()]
    if not left:
        return []
    names = sorted({coroutine_name(task) for task in left})
    return [
        f"{len(left)} background task(s) started by the targets ignored cancellation "
        f"and were abandoned {SETTLE_S:g} s after the run ended ({', '.join(names[:5])}"
        + (", ..." if len(names) > 5 else "")
        + "); every result was saved, but a target should not leave tasks running"
    ]
