"""One rate limit for every worker of a distributed run: an actor that hands out start
times, each worker sleeping for its own share (a call waits in its worker, not in the actor)."""

from __future__ import annotations

import asyncio
from typing import Any

from agenteval_cli.core.retry import RateLimiter


class SharedRateLimit:
    """The Ray actor (made one by the driver) that keeps the run's :class:`RateLimiter`."""

    def __init__(self, requests_per_minute: float) -> None:
        self.limiter = RateLimiter(requests_per_minute)

    def reserve(self) -> float:
        return self.limiter.reserve()


class RemoteLimiter:
    """A worker's side of a :class:`SharedRateLimit`: the runner's limiter."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def acquire(self) -> None:
        wait = await self.actor.reserve.remote()
        if wait > 0:
            await asyncio.sleep(wait)
