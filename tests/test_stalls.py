"""An async target that blocks the event loop is timed out and named; the calls it starved
keep their time (agenteval_cli.execution.guards.stalls)."""

from __future__ import annotations

import asyncio
import re
import time

from projects import project
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.core.records import Example
from agenteval_cli.execution.guards.stalls import LoopStalls
from agenteval_cli.execution.runner import Runner, RunSettings
from agenteval_cli.targets import adapt


def run(targets: dict, settings: RunSettings, examples: int = 1) -> tuple[Runner, dict]:
    runner = Runner(
        targets=[adapt(fn, name=name, import_path=f"x:{name}") for name, fn in targets.items()],
        evaluators=[],
        settings=settings,
    )
    results: dict = {}
    data = [Example(f"e{i}", {"question": f"q{i}"}) for i in range(examples)]

    def keep(item, result) -> None:
        results[(item.target.name, item.example.id)] = result

    asyncio.run(runner.run(runner.work(data), keep))
    return runner, results


async def blocker(inputs):
    time.sleep(1.5)  # blocking code in an async target: nothing else runs meanwhile
    return {"final_response": "late"}


async def innocent(inputs):
    await asyncio.sleep(0.2)
    return {"final_response": "on time"}


def test_the_target_that_blocks_is_timed_out_and_its_neighbour_is_not():
    runner, results = run(
        {"innocent": innocent, "blocker": blocker}, RunSettings(timeout_s=0.5, concurrency=2)
    )
    late, on_time = results[("blocker", "e0")], results[("innocent", "e0")]
    # the innocent call waited 0.2 s of its own, and the 1.5 s it was starved do not count
    assert on_time.error is None
    assert on_time.outputs == {"final_response": "on time"}
    assert on_time.latency_s >= 1.5  # its wall time includes the starvation
    # the blocking call held the loop for 1.5 s, three times its timeout_s
    assert late.outputs is None
    assert late.error.startswith("TimeoutError: no answer within 0.5 s: the call blocked ")
    # 1.5 s, or a little more on a loaded machine
    assert re.search(r"blocked the event loop for 1\.[5-9] s \(blocking code", late.error)
    [warning] = runner.stall_warnings()
    assert re.match(r"target 'blocker' blocked the event loop for (1\.[5-9]) s at once", warning)
    assert re.search(r"\(example 'e0'; 1 step\(s\) of 0\.1 s or more, 1\.[5-9] s in all\)", warning)
    assert "asyncio.to_thread" in warning


async def blocks_after_awaiting(inputs):
    await asyncio.sleep(0.01)
    time.sleep(1.0)
    await asyncio.sleep(0.01)
    return {"final_response": "late"}


def test_blocking_after_a_wait_is_timed_out_by_the_deadline_too():
    _, results = run(
        {"innocent": innocent, "blocker": blocks_after_awaiting},
        RunSettings(timeout_s=0.4, concurrency=2),
    )
    assert results[("innocent", "e0")].error is None
    error = results[("blocker", "e0")].error
    assert error.startswith("TimeoutError: no answer within 0.4 s: the call blocked the event")
    assert re.search(r"for 1\.[0-4] s", error)


async def brief_block(inputs):
    time.sleep(0.15)
    return {"final_response": "fine"}


def test_a_block_shorter_than_the_timeout_stands_and_is_warned_only_past_half_a_second():
    runner, results = run({"brief": brief_block}, RunSettings(timeout_s=5, concurrency=2), 3)
    assert [r.error for r in results.values()] == [None, None, None]
    assert runner._stalls.blocked["brief"].steps == 3  # counted, ...
    assert runner.stall_warnings() == []  # ... but 0.15 s at once is not worth a warning


async def slow(inputs):
    await asyncio.sleep(1.5)
    return {"final_response": "slow"}


def test_a_slow_neighbour_of_a_blocker_still_times_out_on_its_own_time():
    async def short_block(inputs):
        time.sleep(0.3)
        return {"final_response": "ok"}

    _, results = run({"slow": slow, "block": short_block}, RunSettings(timeout_s=0.6))
    # 0.3 s starved are given back, but 1.5 s of its own is past 0.6 s all the same
    assert results[("slow", "e0")].error == "TimeoutError: no answer within 0.6 s"
    assert 0.85 <= results[("slow", "e0")].latency_s < 5
    assert results[("block", "e0")].error is None


def test_the_heartbeat_counts_the_time_the_loop_was_held():
    async def main() -> tuple[float, float]:
        stalls = LoopStalls()
        await asyncio.sleep(0.2)  # idle: the beats come on time
        idle = stalls.stalled()
        time.sleep(0.6)  # held: the beat due meanwhile is 0.55 s or more late
        held = stalls.stalled() - idle
        stalls.close()
        return idle, held

    idle, held = asyncio.run(main())
    assert idle < 0.15  # a loaded machine may delay a beat or two
    assert 0.5 <= held <= 1.5  # 0.6 s less the wait for the beat, more if the machine is slow


def test_a_blocking_target_is_named_on_the_terminal(tmp_path):
    spec = project(
        tmp_path,
        "import asyncio, time\n"
        "async def blocker(inputs):\n"
        "    time.sleep(1.2)\n"
        "    return {'final_response': 'late'}\n"
        "async def innocent(inputs):\n"
        "    await asyncio.sleep(0.1)\n"
        "    return {'final_response': 'fine'}\n",
        module="targets.py",
        targets={"innocent": "innocent", "blocker": "blocker"},
        data=[{"id": "a", "inputs": {"question": "q"}}],
        extra="timeout_s: 0.5\nmax_error_rate: 1\n",
    )
    result = CliRunner().invoke(
        app,
        ["run", str(spec), "--store", str(tmp_path / "db")],
        env={"COLUMNS": "400", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert re.search(
        r"warning: target 'blocker' blocked the event loop for 1\.[2-9] s at once", text
    )
    assert "target 'innocent' blocked" not in text
