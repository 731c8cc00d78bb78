"""Tasks a run's calls leave behind: cancelled when the run is over, and those that will
not end (one that catches its ``CancelledError`` and goes on) abandoned with the loop and
named, rather than waited for forever."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

# How long the tasks a run's calls left behind get to end once cancelled, when the run is
# over; those still running then (one that swallows its cancellation) are abandoned.
SETTLE_S = 1.0


async def settle(
    before: set[asyncio.Task[Any]], timeout: float = SETTLE_S
) -> list[asyncio.Task[Any]]:
    """Cancel the tasks the calls left behind (started since ``before``) and give them
    ``timeout`` seconds to end; those still running then (one that catches its
    ``CancelledError`` and goes on) are returned, to be abandoned with the loop
    (see :func:`run_loop`) rather than waited for forever."""
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


def run_loop(
    main: Coroutine[Any, Any, T],
    abandoned: Callable[[], Sequence[asyncio.Task[Any]]] = lambda: (),
) -> T:
    """``asyncio.run(main)``, except that the loop outlives the run and closing it never
    waits forever.

    The loop is this thread's and the next run gets it again: clients a target keeps between
    calls (LangChain's chat models cache their ``httpx`` connection pools) are bound to the
    loop they first ran on, and fail with "Event loop is closed" on a new one, so a second
    run in one process (a notebook, a test session) would error on every call. A run that
    raised, or left a task that would not end, gets its loop closed instead, as ``asyncio.run``
    would: ``asyncio.run`` cancels the tasks still pending and waits for every one of them,
    and a task that swallows its ``CancelledError`` would keep the process alive after the
    run. Here the tasks ``abandoned()`` names once ``main`` ended (the runner already
    cancelled them and gave them their time) are left as they are, and any other task left
    gets ``SETTLE_S`` to end once cancelled; what still runs is dropped with the loop."""
    loop = _LOOPS.loop
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    keep = False
    try:
        value = loop.run_until_complete(main)
        keep = True
        return value
    finally:
        try:
            given_up = set(abandoned())
            left = [t for t in asyncio.all_tasks(loop) if not t.done() and t not in given_up]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.wait(left, timeout=SETTLE_S))
            keep = keep and not any(not t.done() for t in asyncio.all_tasks(loop))
            if keep:
                _release_executor(loop)
            else:
                for task in asyncio.all_tasks(loop):  # never ending: no "destroyed but pending"
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            if not keep:
                _LOOPS.loop = None
                loop.close()


class _ThreadLoop(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_LOOPS = _ThreadLoop()  # the event loop each thread's runs share


def _release_executor(loop: asyncio.AbstractEventLoop) -> None:
    """The run's default executor (its targets' threads) lets its threads end once idle; the
    loop kept for the next run gets a fresh one when it needs one."""
    executor = getattr(loop, "_default_executor", None)
    loop._default_executor = None  # type: ignore[attr-defined]
    if executor is not None:
        executor.shutdown(wait=False)
