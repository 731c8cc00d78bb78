"""Retries with exponential backoff and jitter, and a requests-per-minute limiter.

Provider errors are recognised by their shape, not by importing the SDKs: OpenAI's and
Anthropic's ``RateLimitError`` / ``APITimeoutError`` / ``APIConnectionError``, httpx's
``HTTPStatusError`` with a 429 response, its ``TimeoutException`` and ``TransportError``, and
any exception carrying ``status_code`` (or ``response.status_code``) 429. Wrapped errors are
followed through ``__cause__`` and ``__context__``, since frameworks re-raise provider errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol, TypeVar, get_args

from agenteval_cli.core.errors import error_chain
from agenteval_cli.core.faults import injected_fault

T = TypeVar("T")

# What ``retries.on`` may name. ``server`` is a 5xx answer; ``any`` is every exception.
RetryKind = Literal["rate_limit", "timeout", "connection", "server", "any"]
RETRY_KINDS: tuple[str, ...] = get_args(RetryKind)
DEFAULT_ON = ("rate_limit", "timeout", "connection")

_RATE_LIMIT_NAMES = {"RateLimitError", "TooManyRequests", "ThrottlingException"}
_TIMEOUT_NAMES = {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout"}
_CONNECTION_NAMES = {"APIConnectionError", "TransportError", "NetworkError", "ConnectError"}
_SERVER_NAMES = {"InternalServerError", "ServiceUnavailableError", "OverloadedError"}


@dataclass(frozen=True)
class RetryPolicy:
    """``max`` extra attempts after the first; delays ``base_s * 2**n`` (capped at ``max_s``)
    with full jitter, or ``base_s`` each time for ``backoff="constant"``."""

    max: int = 0
    backoff: str = "exponential"
    on: tuple[str, ...] = DEFAULT_ON
    base_s: float = 1.0
    max_s: float = 60.0

    def retries(self, exc: BaseException) -> bool:
        """Whether ``exc`` is of a kind this policy retries. A fault the spec injected is
        the target's to recover from, never the run's: it is not retried."""
        if injected_fault(exc) is not None:
            return False
        if "any" in self.on:
            return isinstance(exc, Exception)
        kind = classify(exc)
        return kind is not None and kind in self.on

    def delay(self, attempt: int, exc: BaseException, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 1), never
        more than ``max_s``.

        A ``Retry-After`` from the server wins over the computed backoff (waiting less than it
        asks only earns another 429), up to ``max_s``: a server asking for a day
        (``Retry-After: 86400``) gets ``max_s``, and its next 429 uses up the retries.
        """
        hinted = retry_after(exc)
        if hinted is not None:
            return min(hinted, self.max_s)
        if self.backoff == "constant":
            ceiling = min(self.max_s, self.base_s)
        else:
            ceiling = min(self.max_s, self.base_s * 2 ** min(attempt - 1, 1023))
        return (rng or random).uniform(0, ceiling)  # full jitter: spreads retrying clients


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is None:
        status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def classify(exc: BaseException) -> str | None:
    """``rate_limit``, ``timeout``, ``connection``, ``server`` or None (not transient)."""
    for error in error_chain(exc):
        names = _names(error)
        status = _status(error)
        if status == 429 or names & _RATE_LIMIT_NAMES:
            return "rate_limit"
        if names & _TIMEOUT_NAMES or isinstance(error, TimeoutError):
            return "timeout"
        if names & _CONNECTION_NAMES or isinstance(error, ConnectionError):
            return "connection"
        if (status is not None and 500 <= status < 600) or names & _SERVER_NAMES:
            return "server"
    return None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after``), if any.

    Only a finite number of seconds or an HTTP date is a hint; ``inf``, ``nan``, a negative
    number or anything else is none (the backoff applies)."""
    for error in error_chain(exc):
        value = getattr(error, "retry_after", None)
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and 0 <= value < math.inf  # NaN fails both
        ):
            return float(value)
        headers = getattr(getattr(error, "response", None), "headers", None)
        if headers is None or not hasattr(headers, "get"):
            continue
        parsed = parse_retry_after(headers.get("retry-after-ms"), scale=0.001)
        if parsed is None:
            parsed = parse_retry_after(headers.get("retry-after"), scale=1.0)
        if parsed is not None:
            return parsed
    return None


def parse_retry_after(value: Any, *, scale: float) -> float | None:
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text) * scale
    except ValueError:
        try:  # an HTTP date; one in the past means: retry now
            return max(0.0, parsedate_to_datetime(text).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    return seconds if 0 <= seconds < math.inf else None  # inf, nan, -5: no hint


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    before_attempt: Callable[[], Awaitable[None]] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    max_wait_s: float | None = None,
    failed: Exception | None = None,
) -> tuple[T, int]:
    """Run ``call`` until it succeeds or the policy gives up; returns (value, attempts).

    A wait between attempts is at most the policy's ``max_s`` and at most ``max_wait_s``
    (the runner passes its ``timeout_s``: no wait outlasts the time an attempt may take).
    The final error is re-raised with ``attempts`` set on it, so the caller can record how
    many calls an error cost. ``failed``: what the first attempt, made by the caller, raised.
    """
    attempt = 0
    if failed is not None:
        attempt = 1
        await _retried_after(failed, attempt, policy, sleep, max_wait_s)
    while True:
        attempt += 1
        if before_attempt is not None:
            await before_attempt()
        try:
            return await call(), attempt
        except Exception as exc:
            await _retried_after(exc, attempt, policy, sleep, max_wait_s)


async def _retried_after(
    exc: Exception,
    attempt: int,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]],
    max_wait_s: float | None,
) -> None:
    """The wait before the attempt after ``attempt``, which raised ``exc``; raises ``exc``
    (its ``attempts`` set) when the policy gives up."""
    if attempt > policy.max or not policy.retries(exc):
        with contextlib.suppress(AttributeError):
            exc.attempts = attempt  # type: ignore[attr-defined]
        raise exc
    wait = policy.delay(attempt, exc)
    await sleep(wait if max_wait_s is None else min(wait, max_wait_s))


class Limiter(Protocol):
    """What spaces call starts: a :class:`RateLimiter` in one process, or one that the
    workers of a distributed run share."""

    async def acquire(self) -> None: ...


class RateLimiter:
    """Spaces call starts at least ``60 / requests_per_minute`` seconds apart, across tasks.

    A call waits at most one interval after the call before it started."""

    def __init__(self, requests_per_minute: float, *, clock: Callable[[], float] | None = None):
        if not 0 < requests_per_minute < math.inf:
            raise ValueError(
                f"requests_per_minute must be a positive number, not {requests_per_minute!r}"
            )
        self.interval = 60.0 / requests_per_minute
        if not math.isfinite(self.interval):
            raise ValueError(f"requests_per_minute {requests_per_minute!r} is too small")
        self._clock = clock or time.monotonic
        self._next = 0.0

    def reserve(self) -> float:
        """Take the next start: the seconds to wait before it. Callers elsewhere (the
        workers of a distributed run) are told how long to wait rather than made to wait."""
        now = self._clock()
        start = max(now, self._next)
        self._next = start + self.interval
        return start - now

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)
