"""A user of the user's own: ``fn(transcript, *, inputs, turn) -> str | dict | None``.

A sync function runs on a worker thread (as a function target does), so one that calls a
model itself does not hold up the other conversations; its model calls are traced there
all the same, the recorder following the context into the thread.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from agenteval_cli.targets.users.source import Message


class FunctionUser:
    def __init__(self, fn: Callable[..., Any], name: str = "") -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 (an object with an async __call__)
        )

    async def reply(
        self, transcript: list[Message], *, inputs: dict[str, Any], turn: int
    ) -> str | dict[str, Any] | None:
        if self._is_async:
            return await self.fn(transcript, inputs=inputs, turn=turn)  # type: ignore[no-any-return]
        answer = await asyncio.to_thread(self.fn, transcript, inputs=inputs, turn=turn)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer  # type: ignore[no-any-return]
