"""The asyncio runner: concurrency bound, failures recorded, timeouts, repetitions."""

from __future__ import annotations

import asyncio

import pytest

from agenteval_cli.core.records import Example, Score
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.runner import Runner, RunSettings
from agenteval_cli.targets import adapt


def examples(n: int) -> list[Example]:
    return [Example(f"e{i}", {"question": f"q{i}"}, {"must_mention": ["q"]}) for i in range(n)]


def coverage(outputs, reference_outputs):
    return {"key": "cov", "score": float(outputs["final_response"].startswith("q"))}


def run_all(runner: Runner, data: list[Example]):
    results = []
    asyncio.run(runner.run(runner.work(data), lambda item, r: results.append((item, r))))
    return results


def test_concurrency_bound_is_respected():
    in_flight = 0
    peak = 0

    async def target(inputs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return {"final_response": inputs["question"]}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[BoundEvaluator("cov", coverage)],
        settings=RunSettings(concurrency=3),
    )
    results = run_all(runner, examples(12))
    assert len(results) == 12
    assert peak == 3
    assert all(r.score_map() == {"cov": 1.0} for _, r in results)


def test_raising_target_is_recorded_and_the_run_goes_on():
    def target(inputs):
        if inputs["question"] == "q1":
            raise ValueError("boom")
        return {"final_response": inputs["question"]}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[BoundEvaluator("cov", coverage)],
    )
    by_id = {r.example_id: r for _, r in run_all(runner, examples(3))}
    assert by_id["e1"].error == "ValueError: boom"
    # coverage needs a final answer: null, saying why (the trace's metrics would be scored)
    assert by_id["e1"].scores == [
        Score(
            "cov",
            None,
            "no answer: the target raised (ValueError: boom); the metric needs a final answer",
        )
    ]
    assert by_id["e1"].trace.error == "ValueError: boom"
    assert by_id["e0"].error is None and by_id["e0"].score_map() == {"cov": 1.0}
    assert by_id["e2"].error is None


def test_timing_out_target_is_recorded():
    async def target(inputs):
        if inputs["question"] == "q0":
            await asyncio.sleep(5)
        return {"final_response": inputs["question"]}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[],
        settings=RunSettings(timeout_s=0.05, concurrency=2),
    )
    by_id = {r.example_id: r for _, r in run_all(runner, examples(2))}
    assert by_id["e0"].error == "TimeoutError: no answer within 0.05 s"
    assert 0.05 <= by_id["e0"].latency_s < 1
    assert by_id["e1"].error is None


def test_repetitions_and_targets_side_by_side():
    def first(inputs):
        return {"final_response": inputs["question"]}

    def second(inputs):
        return {"final_response": "other"}

    runner = Runner(
        targets=[
            adapt(first, name="a", import_path="x:a"),
            adapt(second, name="b", import_path="x:b"),
        ],
        evaluators=[BoundEvaluator("cov", coverage)],
        settings=RunSettings(repetitions=2, concurrency=1),
    )
    results = run_all(runner, examples(3))
    keys = [(item.target.name, r.example_id, r.repetition) for item, r in results]
    assert len(keys) == len(set(keys)) == 12
    assert keys[:4] == [("a", "e0", 0), ("b", "e0", 0), ("a", "e1", 0), ("b", "e1", 0)]
    scores = {k: r.score_map()["cov"] for k, (_, r) in zip(keys, results, strict=True)}
    assert scores[("a", "e2", 1)] == 1.0
    assert scores[("b", "e2", 1)] == 0.0


def test_failing_evaluator_gives_null_scores_and_others_still_run():
    def broken(outputs):
        raise RuntimeError("bad evaluator")

    def garbage(outputs):
        return "not a result"

    runner = Runner(
        targets=[adapt(lambda inputs: {"final_response": "q"}, name="t", import_path="x:t")],
        evaluators=[
            BoundEvaluator("broken", broken, ("b1", "b2")),
            BoundEvaluator("garbage", garbage),
            BoundEvaluator("cov", coverage),
        ],
    )
    [(_, result)] = run_all(runner, examples(1))
    scores = {s.key: s for s in result.scores}
    assert scores["b1"].score is None and scores["b2"].score is None
    assert scores["b1"].comment == "evaluator 'broken' failed: RuntimeError: bad evaluator"
    assert scores["garbage"].score is None
    assert "return a dict with 'score'" in scores["garbage"].comment
    assert scores["cov"].score == 1.0


class Halt(BaseException):
    """A BaseException of the target's own."""


def _raise(exc: BaseException):
    def sync(inputs):
        raise exc

    async def async_(inputs):
        await asyncio.sleep(0)  # raised after a wait, not on the first step
        raise exc

    return sync, async_


def test_every_base_exception_of_a_target_is_that_examples_error():
    raised = {
        "exit0": SystemExit(0),
        "exit3": SystemExit(3),
        "generator_exit": GeneratorExit(),
        "stop_iteration": StopIteration(),
        "cancelled": asyncio.CancelledError("gave up"),
        "custom": Halt("halt"),
    }
    targets = []
    for name, exc in raised.items():
        sync, async_ = _raise(exc)
        targets.append(adapt(sync, name=f"sync_{name}", import_path=f"x:{name}"))
        targets.append(adapt(async_, name=f"async_{name}", import_path=f"x:a{name}"))
    targets.append(adapt(lambda inputs: {"final_response": "q"}, name="fine", import_path="x:f"))
    runner = Runner(targets=targets, evaluators=[BoundEvaluator("cov", coverage)])
    results = []
    finished = asyncio.run(
        runner.run(runner.work(examples(2)), lambda item, r: results.append((item, r)))
    )
    assert finished is True
    errors = {(item.target.name, r.example_id): r.error for item, r in results}
    assert len(errors) == 13 * 2
    for example in ("e0", "e1"):
        assert errors["sync_exit0", example] == errors["async_exit0", example] == "SystemExit: 0"
        assert errors["sync_exit3", example] == errors["async_exit3", example] == "SystemExit: 3"
        # a thread's GeneratorExit would close every coroutine awaiting it, the run too,
        # and asyncio refuses a StopIteration in a future: both come back as RuntimeError
        assert errors["sync_generator_exit", example] == "RuntimeError: sync raised GeneratorExit"
        assert errors["async_generator_exit", example] == "GeneratorExit: "
        assert errors["sync_stop_iteration", example] == "RuntimeError: sync raised StopIteration"
        assert errors["async_stop_iteration", example] == (
            "RuntimeError: coroutine raised StopIteration"
        )
        assert errors["sync_cancelled", example] == "CancelledError: gave up"
        assert errors["async_cancelled", example] == "CancelledError: gave up"
        assert errors["sync_custom", example] == errors["async_custom", example] == "Halt: halt"
        assert errors["fine", example] is None


def test_a_stop_cancelling_a_call_is_not_recorded_as_its_error():
    started = asyncio.Event()

    async def slow(inputs):
        started.set()
        await asyncio.sleep(5)
        return {"final_response": "late"}

    runner = Runner(
        targets=[adapt(slow, name="slow", import_path="x:slow")],
        evaluators=[],
        settings=RunSettings(grace_s=0.05),
    )
    results = []

    async def main():
        running = asyncio.ensure_future(
            runner.run(runner.work(examples(1)), lambda item, r: results.append(r))
        )
        await started.wait()
        runner.stop()
        return await running

    assert asyncio.run(main()) is False  # stopped: the call was cancelled, left for --resume
    assert results == []


def test_no_more_workers_than_work_items(monkeypatch):
    started = []
    real = asyncio.ensure_future

    def counting(coro, **kwargs):
        started.append(getattr(coro, "__qualname__", ""))
        return real(coro, **kwargs)

    runner = Runner(
        targets=[adapt(lambda inputs: {"final_response": "q"}, name="t", import_path="x:t")],
        evaluators=[],
        settings=RunSettings(concurrency=1024),
    )
    monkeypatch.setattr(asyncio, "ensure_future", counting)
    results = run_all(runner, examples(2))
    assert len(results) == 2
    assert started.count("Runner.run.<locals>.worker") == 2  # not 1024


def test_hanging_sync_calls_with_retries_use_a_bounded_number_of_threads(monkeypatch):
    import threading

    from agenteval_cli.core.retry import RetryPolicy
    from agenteval_cli.execution import runner as runner_module

    release = threading.Event()

    def hangs(inputs):
        release.wait(30)
        return {"final_response": "late"}

    def quick(inputs):
        return {"final_response": inputs["question"]}

    monkeypatch.setattr(runner_module, "ABANDONED_THREADS", 3)
    runner = Runner(
        targets=[
            adapt(hangs, name="hangs", import_path="x:hangs"),
            adapt(quick, name="quick", import_path="x:quick"),
        ],
        evaluators=[],
        settings=RunSettings(
            concurrency=2,
            timeout_s=0.05,
            retry=RetryPolicy(max=3, on=("timeout",), base_s=0.0, max_s=0.0),
        ),
    )
    before = set(threading.enumerate())  # threads, not idents: an ident is reused
    try:
        results = run_all(runner, examples(6))  # 'hangs': up to 6 × 4 attempts
        pool_threads = [
            t
            for t in threading.enumerate()
            if t not in before and t.name.startswith("agenteval-worker")
        ]
    finally:
        release.set()
    assert len(pool_threads) == 2 + 3  # concurrency + ABANDONED_THREADS, not 24
    starved = (
        "ThreadsExhausted: no worker thread came free within 0.05 s: all 5 are held by sync "
        "calls stuck past their time-out"
    )
    hung = {r.example_id: r for item, r in results if item.target.name == "hangs"}
    assert len(hung) == 6
    # 4 of the first attempts of e0 and e1 take 4 threads, one more takes the fifth; every
    # later request waits. A starved call is retried as a time-out is, and starves again.
    assert {(r.error, r.attempts) for r in hung.values()} == {(starved, 4)}
    quick_errors = [r.error for item, r in results if item.target.name == "quick"]
    assert set(quick_errors) <= {None, starved} and quick_errors[-1] == starved


def test_an_evaluator_raising_a_base_exception_gives_null_scores():
    def exits(outputs):
        raise SystemExit(0)

    async def halts(outputs):
        raise Halt("stop")

    runner = Runner(
        targets=[adapt(lambda inputs: {"final_response": "q"}, name="t", import_path="x:t")],
        evaluators=[
            BoundEvaluator("exits", exits),
            BoundEvaluator("halts", halts),
            BoundEvaluator("cov", coverage),
        ],
    )
    [(_, result)] = run_all(runner, examples(1))
    assert [(s.key, s.score, s.comment) for s in result.scores] == [
        ("exits", None, "evaluator 'exits' failed: SystemExit: 0"),
        ("halts", None, "evaluator 'halts' failed: Halt: stop"),
        ("cov", 1.0, None),
    ]


def test_a_keyboard_interrupt_raised_by_a_target_is_its_error_when_the_run_owns_ctrl_c():
    # Under handle_signals the run takes Ctrl-C itself (it stops dispatching), so a
    # KeyboardInterrupt that reaches a call was raised by the target's own code.
    sync, async_ = _raise(KeyboardInterrupt("target's own"))
    targets = [
        adapt(sync, name="sync", import_path="x:s"),
        adapt(async_, name="async", import_path="x:a"),
        adapt(lambda inputs: {"final_response": "q"}, name="fine", import_path="x:f"),
    ]
    runner = Runner(targets=targets, evaluators=[])
    results = []
    finished = asyncio.run(
        runner.run(
            runner.work(examples(2)),
            lambda item, r: results.append((item, r)),
            handle_signals=True,
        )
    )
    assert finished is True and runner.stopped is False
    errors = {(item.target.name, r.example_id): r.error for item, r in results}
    assert errors == {
        **{("sync", e): "KeyboardInterrupt: target's own" for e in ("e0", "e1")},
        **{("async", e): "KeyboardInterrupt: target's own" for e in ("e0", "e1")},
        **{("fine", e): None for e in ("e0", "e1")},
    }
    # without the run's own handling, a KeyboardInterrupt is Ctrl-C: it stops the caller
    runner = Runner(targets=targets[1:2], evaluators=[])
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(runner.run(runner.work(examples(1)), lambda item, r: None))
