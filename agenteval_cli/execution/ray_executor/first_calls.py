"""Each judge's first call, once for every worker of a distributed run: an actor that lets
one worker make it while the others wait, then tells them how it went. A key the provider
refuses (401, 403) then costs one request for the run, not one per worker, and a key that
works lets every worker go on at once (see :class:`~agenteval_cli.evaluators.judge.JudgeCalls`).
This module does not import Ray; the driver makes the class an actor."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Judge:
    outcome: str | None = None  # "answered" or "refused", once the first call ended
    reason: str | None = None  # the refusal, said on every result
    taken: bool = False  # a worker is making the first call
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class SharedFirstCalls:
    """The Ray actor (async: its methods wait on its event loop) keeping, per judge name,
    whether its first call was made and how it went. A worker that took the first call and
    neither settled it within ``wait_s`` (it died, or its call hung past every limit) is
    taken over by the next one waiting."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.judges: dict[str, _Judge] = {}

    async def first(self, name: str) -> tuple[str, str | None]:
        judge = self.judges.setdefault(name, _Judge())
        while judge.outcome is None:
            if not judge.taken:
                judge.taken = True
                return "go", None
            ended = judge.ended
            try:
                await asyncio.wait_for(ended.wait(), self.wait_s)
            except TimeoutError:
                judge.taken = False
        return judge.outcome, judge.reason

    def settle(self, name: str, outcome: str | None, reason: str | None) -> None:
        judge = self.judges.setdefault(name, _Judge())
        if outcome is None:  # the call did not end (cancelled): the next one waiting goes
            judge.taken = False
        else:
            judge.outcome, judge.reason = outcome, reason
        judge.ended.set()
        judge.ended = asyncio.Event()  # for those who wait on the next call


class RemoteFirstCalls:
    """A worker's side of a :class:`SharedFirstCalls`: the judges' ``FirstCalls``."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def first(self, name: str) -> tuple[str, str | None]:
        verdict, reason = await self.actor.first.remote(name)
        return str(verdict), reason

    async def settle(self, name: str, outcome: str | None, reason: str | None) -> None:
        await self.actor.settle.remote(name, outcome, reason)
