"""How many evaluator calls may be in flight: a fixed number, or one sized from the run.

A run's evaluators are mostly I/O-bound judges: a pool too small for them makes a run
scoring-bound (results wait for slots while the targets' slots stand idle), one sized by hand
needs figures the user does not have. :class:`AdaptiveSlots` sizes itself by Little's law from
what the run observes: calls asked for per second (results per second × their evaluators)
times the mean time one call takes is how many are busy at once. The limit follows that
figure with headroom, never below where it starts and never above its cap, nor above what
the evaluators' rate limit lets through.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from types import TracebackType

# Headroom over the Little's-law figure: bursts (a target's calls ending together) and the
# latency estimate lagging a slowdown.
HEADROOM = 1.25
WINDOW = 64  # requests the arrival rate is measured over
SMOOTHING = 0.2  # weight of the latest call in the mean call time


class AdaptiveSlots:
    """At most ``limit`` holders at once; ``limit`` moves between ``start`` and ``cap`` with
    the observed demand (:func:`needed`). ``per_second``: the evaluators' rate limit, if any
    (more calls in flight than it lets through only wait)."""

    def __init__(self, start: int, cap: int, *, per_second: float | None = None) -> None:
        self.start = max(1, start)
        self.cap = max(self.start, cap)
        self.per_second = per_second
        self.limit = self.start
        self.busy = 0
        self.peak = self.start  # the largest limit the run reached (reported by benchmarks)
        self._arrivals: deque[float] = deque(maxlen=WINDOW)
        self._call_s: float | None = None  # mean time of one call, smoothed
        self._waiters: deque[asyncio.Future[None]] = deque()

    def observe(self, seconds: float) -> None:
        """One evaluator call took ``seconds`` (its own time, not the wait for a slot)."""
        mean = self._call_s
        self._call_s = seconds if mean is None else mean + SMOOTHING * (seconds - mean)

    def needed(self) -> int:
        """The calls in flight that keep up with the demand seen so far, within bounds."""
        if self._call_s is None or len(self._arrivals) < 2:
            return self.limit
        span = self._arrivals[-1] - self._arrivals[0]
        rate = (len(self._arrivals) - 1) / span if span > 0 else math.inf
        if self.per_second is not None:
            rate = min(rate, self.per_second)
        busy = rate * self._call_s * HEADROOM
        wanted = self.cap if math.isinf(busy) else math.ceil(busy) + 1
        return min(self.cap, max(self.start, wanted))

    async def __aenter__(self) -> None:
        self._arrivals.append(time.monotonic())
        self._resize(self.needed())
        if self.busy < self.limit and not self._waiters:
            self.busy += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # the slot is handed over by whoever frees it
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed over just as it was cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._release()

    def _resize(self, limit: int) -> None:
        self.limit = limit
        self.peak = max(self.peak, limit)
        while self._waiters and self.busy < self.limit:
            self.busy += 1
            self._waiters.popleft().set_result(None)

    def _release(self) -> None:
        self.busy -= 1
        self._resize(self.limit)
