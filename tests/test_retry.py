"""Retries: provider errors recognised by shape, backoff with jitter, Retry-After, rate limit."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai
import pytest
from serving import serve

from agenteval_cli.core.records import Example
from agenteval_cli.core.retry import (
    RateLimiter,
    RetryPolicy,
    call_with_retries,
    classify,
    retry_after,
)
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.runner import Runner, RunSettings
from agenteval_cli.targets import adapt


def http_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.com/v1/chat")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return httpx.HTTPStatusError(f"{status}", request=request, response=response)


def openai_error(cls: type, status: int = 429, headers: dict[str, str] | None = None):
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return cls("slow down", response=response, body=None)


class RateLimitError(Exception):
    """Shaped like anthropic.RateLimitError (not installed here): a name and a status."""

    status_code = 429


class APITimeoutError(Exception):
    pass


def test_provider_errors_are_classified_without_importing_the_sdks():
    request = httpx.Request("GET", "https://x")
    assert classify(openai_error(openai.RateLimitError)) == "rate_limit"
    assert classify(openai.APITimeoutError(request=request)) == "timeout"
    assert classify(openai.APIConnectionError(request=request)) == "connection"
    assert classify(openai_error(openai.InternalServerError, 503)) == "server"
    assert classify(openai_error(openai.BadRequestError, 400)) is None
    assert classify(RateLimitError("anthropic-shaped")) == "rate_limit"
    assert classify(APITimeoutError()) == "timeout"
    assert classify(http_error(429)) == "rate_limit"
    assert classify(http_error(502)) == "server"
    assert classify(http_error(404)) is None
    assert classify(httpx.ReadTimeout("slow", request=request)) == "timeout"
    assert classify(httpx.ConnectError("refused", request=request)) == "connection"
    assert classify(TimeoutError()) == "timeout"
    assert classify(ConnectionResetError()) == "connection"
    assert classify(ValueError("bad input")) is None


def test_a_wrapped_rate_limit_is_found_through_the_cause():
    try:
        try:
            raise http_error(429)
        except httpx.HTTPStatusError as inner:
            raise RuntimeError("the graph failed") from inner
    except RuntimeError as outer:
        assert classify(outer) == "rate_limit"


def test_retry_after_headers_in_seconds_milliseconds_and_dates():
    assert retry_after(http_error(429, {"Retry-After": "7"})) == 7.0
    assert retry_after(http_error(429, {"retry-after-ms": "250"})) == 0.25
    assert retry_after(openai_error(openai.RateLimitError, headers={"retry-after": "3"})) == 3.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: no wait
    assert retry_after(http_error(429, {"Retry-After": date})) == 0.0
    assert retry_after(http_error(429, {"Retry-After": "soon"})) is None
    assert retry_after(http_error(429)) is None


def test_retry_after_that_is_no_finite_wait_is_no_hint():
    assert retry_after(http_error(429, {"Retry-After": "86400"})) == 86400.0  # capped later
    for garbage in ("inf", "-inf", "nan", "1e999", "-5", "", "0x10", "Mon, 99 Foo 2015"):
        assert retry_after(http_error(429, {"Retry-After": garbage})) is None, garbage
    assert retry_after(http_error(429, {"retry-after-ms": "inf", "Retry-After": "2"})) == 2.0

    class Hinted(Exception):
        retry_after = float("inf")

    assert retry_after(Hinted()) is None


def test_no_wait_is_longer_than_max_delay_s():
    policy = RetryPolicy(max=5, base_s=100.0, max_s=2.5)
    assert policy.delay(1, http_error(429, {"Retry-After": "86400"})) == 2.5
    future = "Wed, 21 Oct 2999 07:28:00 GMT"
    assert policy.delay(1, http_error(429, {"Retry-After": future})) == 2.5
    rng = random.Random(3)
    assert all(0 <= policy.delay(9, ValueError(), rng) <= 2.5 for _ in range(100))
    assert policy.delay(2000, ValueError(), rng) <= 2.5  # 2**1999 overflows no float
    constant = RetryPolicy(max=5, backoff="constant", base_s=100.0, max_s=2.5)
    assert all(0 <= constant.delay(1, ValueError(), rng) <= 2.5 for _ in range(100))
    # garbage is no hint: the backoff applies (with jitter, up to 2.5 s here)
    assert 0 <= policy.delay(1, http_error(429, {"Retry-After": "inf"}), rng) <= 2.5


def test_no_wait_is_longer_than_the_call_may_take():
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    async def always_429():
        raise http_error(429, {"Retry-After": "86400"})

    policy = RetryPolicy(max=2, max_s=60.0)
    with pytest.raises(httpx.HTTPStatusError) as info:
        asyncio.run(call_with_retries(always_429, policy, sleep=record, max_wait_s=0.25))
    assert (waits, info.value.attempts) == ([0.25, 0.25], 3)


def test_rate_limiter_refuses_a_rate_that_never_lets_a_call_start():
    for rate in (0.0, -1.0, float("nan"), float("inf"), 1e-320):
        with pytest.raises(ValueError, match="requests_per_minute"):
            RateLimiter(rate)


def test_backoff_is_exponential_with_full_jitter_and_capped():
    policy = RetryPolicy(max=10, base_s=1.0, max_s=8.0)
    rng = random.Random(7)
    error = ValueError()
    for attempt, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (9, 8)]:
        delays = [policy.delay(attempt, error, rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.9  # jitter spans the whole range
    constant = RetryPolicy(max=3, backoff="constant", base_s=0.5)
    assert all(0 <= constant.delay(5, error, rng) <= 0.5 for _ in range(50))
    assert policy.delay(1, http_error(429, {"Retry-After": "5"})) == 5.0  # the server wins
    assert policy.delay(1, http_error(429, {"Retry-After": "30"})) == 8.0  # up to max_s


def test_three_429s_then_success_is_retried_with_the_servers_delays():
    calls = 0
    waits: list[float] = []

    async def flaky():
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise http_error(429, {"retry-after": str(calls)})
        return "ok"

    async def record(seconds: float) -> None:
        waits.append(seconds)

    value, attempts = asyncio.run(call_with_retries(flaky, RetryPolicy(max=5), sleep=record))
    assert (value, attempts, waits) == ("ok", 4, [1.0, 2.0, 3.0])


def test_giving_up_reraises_with_the_attempt_count():
    async def always_429():
        raise http_error(429)

    async def no_wait(_: float) -> None:
        return None

    with pytest.raises(httpx.HTTPStatusError) as info:
        asyncio.run(call_with_retries(always_429, RetryPolicy(max=2), sleep=no_wait))
    assert info.value.attempts == 3


def test_errors_not_named_in_on_are_not_retried():
    calls = 0

    async def bad():
        nonlocal calls
        calls += 1
        raise ValueError("a bug, not a blip")

    with pytest.raises(ValueError):
        asyncio.run(call_with_retries(bad, RetryPolicy(max=5)))
    assert calls == 1
    assert RetryPolicy(on=("any",)).retries(ValueError())
    assert not RetryPolicy(on=("rate_limit",)).retries(TimeoutError())
    assert RetryPolicy(on=("timeout",)).retries(TimeoutError())


def test_rate_limiter_spaces_call_starts():
    starts: list[float] = []
    began: list[float] = []

    async def main():
        limiter = RateLimiter(requests_per_minute=1200)  # one every 50 ms

        async def call():
            await limiter.acquire()
            starts.append(time.monotonic())

        began.append(time.monotonic())
        await asyncio.gather(*(call() for _ in range(5)))

    asyncio.run(main())
    # The i-th start is no earlier than i intervals after the first could start; a start
    # woken late on a busy machine may leave the next gap short, never the schedule.
    assert len(starts) == 5
    assert all(start - began[0] >= i * 0.05 - 0.001 for i, start in enumerate(starts)), starts


def test_runner_retries_a_429_target_and_records_the_attempts():
    calls: dict[str, int] = {}

    async def target(inputs):
        n = calls[inputs["question"]] = calls.get(inputs["question"], 0) + 1
        if n <= 3:
            raise http_error(429, {"retry-after-ms": "1"})
        return {"final_response": inputs["question"]}

    def coverage(outputs):
        return {"key": "ok", "score": 1.0}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[BoundEvaluator("ok", coverage)],
        settings=RunSettings(retry=RetryPolicy(max=5), concurrency=2),
    )
    results = []
    data = [Example(f"e{i}", {"question": f"q{i}"}) for i in range(4)]
    asyncio.run(runner.run(runner.work(data), lambda item, r: results.append(r)))
    assert [r.error for r in results] == [None] * 4
    assert [r.attempts for r in results] == [4] * 4
    assert all(r.score_map() == {"ok": 1.0} for r in results)


def test_runner_gives_up_and_records_the_error_and_attempts():
    async def target(inputs):
        raise http_error(429, {"retry-after": "0"})

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[],
        settings=RunSettings(retry=RetryPolicy(max=2)),
    )
    results = []
    asyncio.run(
        runner.run(runner.work([Example("e", {"question": "q"})]), lambda i, r: results.append(r))
    )
    [result] = results
    assert result.error.startswith("HTTPStatusError: 429")
    assert result.attempts == 3


@contextmanager
def throttling_server(retry_after: str) -> Iterator[tuple[str, list[float]]]:
    """127.0.0.1 answering every POST with 429 and ``Retry-After: <retry_after>``; yields
    its URL and the time of each request."""
    seen: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            seen.append(time.monotonic())
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"error": {"message": "slow down"}}'
            self.send_response(429)
            self.send_header("Retry-After", retry_after)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve(httpd)
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/chat", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_against(url: str, settings: RunSettings) -> tuple[list, float]:
    async def target(inputs):
        async with httpx.AsyncClient() as client:
            response = await client.post(url, json={"q": inputs["question"]})
            response.raise_for_status()
            return {"final_response": response.text}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")], evaluators=[], settings=settings
    )
    results: list = []
    started = time.monotonic()
    asyncio.run(
        runner.run(runner.work([Example("e", {"question": "q"})]), lambda i, r: results.append(r))
    )
    return results, time.monotonic() - started


@pytest.mark.parametrize("header", ["86400", "inf", "nan", "soon", "Wed, 21 Oct 2999 07:28:00 GMT"])
def test_a_server_asking_for_a_day_gets_max_delay_s(header):
    settings = RunSettings(timeout_s=30, retry=RetryPolicy(max=2, base_s=0.05, max_s=0.3))
    with throttling_server(header) as (url, seen):
        [result], took = run_against(url, settings)
    assert result.error.startswith("HTTPStatusError: Client error '429 Too Many Requests'")
    assert result.attempts == 3 and len(seen) == 3
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert all(gap < 5 for gap in gaps), gaps  # 0.3 s at most, and a loaded machine
    if header in ("86400", "Wed, 21 Oct 2999 07:28:00 GMT"):  # a hint, capped: exactly 0.3 s
        assert all(gap >= 0.29 for gap in gaps), gaps
    assert took < 20


def test_a_server_asking_for_a_day_gets_no_more_than_timeout_s():
    settings = RunSettings(timeout_s=0.4, retry=RetryPolicy(max=2, base_s=1.0, max_s=60.0))
    with throttling_server("86400") as (url, seen):
        [result], took = run_against(url, settings)
    assert result.attempts == 3 and len(seen) == 3
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert all(0.39 <= gap < 5 for gap in gaps), gaps  # the wait is timeout_s, not 60 s
    assert took < 20


def test_langsmith_requests_wait_at_most_the_cap(monkeypatch):
    from langsmith_stub import serving
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    monkeypatch.setenv("AGENTEVAL_LANGSMITH_MAX_WAIT_S", "0.2")
    with serving(monkeypatch) as stand_in:
        for header in ("86400", "inf", "garbage"):
            stand_in.inject("GET /datasets", 429, times=3, retry_after=header)
            started = time.monotonic()
            result = CliRunner().invoke(app, ["dataset", "list"])
            took = time.monotonic() - started
            assert result.exit_code == 0, (header, result.output)
            assert took < 20, (header, took)  # three waits of 0.2 s at most, not a day
            assert all(f.times == 0 for f in stand_in.faults)  # three 429s, then the list


def test_langsmith_client_caps_every_wait(monkeypatch):
    import requests

    from agenteval_cli.langsmith.client import Credentials, connect

    monkeypatch.setenv("AGENTEVAL_LANGSMITH_MAX_WAIT_S", "2")
    conn = connect(Credentials("http://127.0.0.1:9", "lsv2_test_key"))
    retry = conn.client.session.get_adapter("http://127.0.0.1:9/runs").max_retries
    assert retry.parse_retry_after("86400") == 2.0
    assert retry.parse_retry_after("1") == 1.0
    assert retry.parse_retry_after("inf") == 0.0  # no hint: urllib3 falls back to its backoff
    assert retry.parse_retry_after("garbage") == 0.0  # urllib3 alone raises InvalidHeader
    assert retry.new(total=1).parse_retry_after("86400") == 2.0  # its copies keep the cap
    assert retry.backoff_max == 2.0
    # after the adapter's retries, the client's own loop would sleep Retry-After × 2**n
    response = requests.Response()
    response.status_code = 429
    response.headers["Retry-After"] = "86400"
    for hook in conn.client.session.hooks["response"]:
        hook(response)
    assert response.headers["Retry-After"] == "0"


def test_a_run_against_a_server_asking_for_a_day_completes_with_the_error(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    (tmp_path / "targets.py").write_text(
        "import os, httpx\n"
        "async def client(inputs):\n"
        "    async with httpx.AsyncClient() as http:\n"
        "        answer = await http.post(os.environ['THROTTLED_URL'], json=inputs)\n"
        "        answer.raise_for_status()\n"
        "        return {'final_response': answer.text}\n"
    )
    (tmp_path / "data.jsonl").write_text('{"id": "a", "inputs": {"question": "q"}}\n')
    (tmp_path / "spec.yaml").write_text(
        "dataset: data.jsonl\ntargets:\n  client: targets.py:client\ntimeout_s: 0.3\n"
        "retries: {max: 2, on: [rate_limit]}\n"  # max_delay_s stays 60: timeout_s caps
    )
    with throttling_server("86400") as (url, seen):
        monkeypatch.setenv("THROTTLED_URL", url)
        started = time.monotonic()
        result = CliRunner().invoke(
            app,
            ["run", str(tmp_path / "spec.yaml"), "--store", str(tmp_path / "db")],
            env={"COLUMNS": "300", "NO_COLOR": "1"},
        )
        took = time.monotonic() - started
    assert result.exit_code == 3, result.output  # the call errored: run errors
    assert "429 Too Many Requests" in result.output
    assert len(seen) == 3  # the first attempt and two retries, 0.3 s apart
    assert took < 20, took
