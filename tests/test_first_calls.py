"""The judges' first call shared by the processes of a run (a Ray run's workers), here
with the actor's class called directly, as two workers' judges would through Ray."""

from __future__ import annotations

import asyncio

import pytest

from agenteval_cli.evaluators.judge import JudgeCalls, KeyRefused, share_first_calls
from agenteval_cli.execution.ray_executor.first_calls import SharedFirstCalls


class Status(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


class Local:
    """What RemoteFirstCalls does over Ray, in this process."""

    def __init__(self, actor: SharedFirstCalls) -> None:
        self.actor = actor

    async def first(self, name):
        return await self.actor.first(name)

    async def settle(self, name, outcome, reason):
        self.actor.settle(name, outcome, reason)


@pytest.fixture
def shared():
    calls = Local(SharedFirstCalls(wait_s=5))
    share_first_calls(calls)
    yield calls
    share_first_calls(None)


def test_a_refusal_in_one_worker_stops_the_judge_in_the_others(shared):
    made: list[str] = []

    async def judge(worker: str) -> dict:
        made.append(worker)
        await asyncio.sleep(0.05)
        raise Status(401)

    async def main() -> list[BaseException | dict]:
        workers = [JudgeCalls("quality", "the key in OPENAI_API_KEY") for _ in range(3)]
        calls = [w.call(judge, worker=str(i)) for i, w in enumerate(workers) for _ in range(2)]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert len(made) == 1
    assert all(isinstance(o, KeyRefused) for o in outcomes)
    assert {str(o) for o in outcomes} == {
        "401 Status: the key in OPENAI_API_KEY was refused; set a valid key (judge 'quality' "
        "made no further calls)"
    }


def test_a_first_call_that_is_cancelled_lets_another_worker_make_it(shared):
    made: list[str] = []

    async def hangs(worker: str) -> dict:
        made.append(worker)
        await asyncio.Event().wait()
        return {}

    async def answers(worker: str) -> dict:
        made.append(worker)
        return {"score": True}

    async def main() -> tuple[object, object]:
        first, second = JudgeCalls("q", "k"), JudgeCalls("q", "k")
        hung = asyncio.ensure_future(first.call(hangs, worker="a"))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(second.call(answers, worker="b"))
        await asyncio.sleep(0.05)
        assert made == ["a"]  # b waits for a's first call
        hung.cancel()  # a's evaluator timed out
        return await asyncio.gather(hung, waiting, return_exceptions=True)

    cancelled, answered = asyncio.run(main())
    assert isinstance(cancelled, asyncio.CancelledError)
    assert answered == {"score": True} and made == ["a", "b"]
