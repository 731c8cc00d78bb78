"""Event-loop stalls: the target that blocks the loop is named, the calls it starves keep
their time.

An async target that runs blocking code (``time.sleep``, a sync HTTP client, a long
computation) holds the event loop: no other call in flight moves meanwhile, and their
time-outs would fire for time they never had, while the blocking call itself, which no
time-out can interrupt, would come back as a success. So the runner

- times each step of every call (the stretch between two of its awaits): a step of
  ``BLOCKING_S`` or more blocked the loop, and is counted against its target
  (:meth:`LoopStalls.blame`, :meth:`LoopStalls.warnings`), when the target's code runs
  here: a served graph's runs on its server, so what held the loop during its call was
  agenteval's own work or the client's, never the target's;
- keeps a heartbeat on the loop (:class:`LoopStalls`), so it knows how long the loop ran
  nothing else, whoever held it (a target, a slow disk, an overloaded machine);
- gives a call's deadline back the time the loop was held by others before it declares a
  time-out, and declares one on a call whose own blocking outlasted ``timeout_s``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

BLOCKING_S = 0.1  # a step of a call this long held the event loop
WARN_S = 0.5  # a target that held it this long at once is warned about
HEARTBEAT_S = 0.05  # how often the loop checks in
LATE_S = 0.005  # a heartbeat later than this was held up (less is scheduling noise)

FIX = (
    "await blocking work with asyncio.to_thread, or make the target a plain function "
    "(agenteval runs those on threads)"
)


@dataclass
class Blocked:
    """How one target held the event loop."""

    steps: int = 0  # steps of BLOCKING_S or more
    total_s: float = 0.0
    longest_s: float = 0.0
    example: str = ""  # the example of the longest


class LoopStalls:
    """A heartbeat on the running loop: ``stalled()`` is the time, in all, that the loop
    was held past a beat, up to now (a beat overdue right now included)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.total = 0.0
        self.blocked: dict[str, Blocked] = {}
        self._due = self.loop.time() + HEARTBEAT_S
        self._handle: asyncio.TimerHandle | None = self.loop.call_at(self._due, self._beat)

    def _beat(self) -> None:
        self.stalled()
        self._due = self.loop.time() + HEARTBEAT_S
        self._handle = self.loop.call_at(self._due, self._beat)

    def stalled(self) -> float:
        late = self.loop.time() - self._due
        if late > LATE_S:  # held since the beat was due: count it once
            self.total += late
            self._due += late
        return self.total

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def blame(self, target: str, example: str, seconds: float) -> None:
        """A step of ``target``'s call on ``example`` held the loop for ``seconds``."""
        record = self.blocked.get(target)
        if record is None:
            record = self.blocked[target] = Blocked()
        record.steps += 1
        record.total_s += seconds
        if seconds > record.longest_s:
            record.longest_s, record.example = seconds, example

    def warnings(self, timeout_s: float | None = None) -> list[str]:
        """One line per target that held the loop for ``WARN_S`` (or ``timeout_s``, when
        shorter) or more at once."""
        limit = WARN_S if timeout_s is None else min(WARN_S, timeout_s)
        return [
            f"target {target!r} blocked the event loop for {b.longest_s:.1f} s at once "
            f"(example {b.example!r}; {b.steps} step(s) of {BLOCKING_S:g} s or more, "
            f"{b.total_s:.1f} s in all): no other call could run meanwhile, and their "
            f"time-outs were extended by that time; fix: {FIX}"
            for target, b in self.blocked.items()
            if b.longest_s >= limit
        ]


def blocked_text(seconds: float) -> str:
    """What a time-out's error says of a call that held the loop itself."""
    return f"the call blocked the event loop for {seconds:.1f} s (blocking code in an async target)"
