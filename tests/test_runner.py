"""The asyncio runner: concurrency bound, failures recorded, timeouts, repetitions."""

from __future__ import annotations

import asyncio

from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.records import Example
from agenteval_cli.runner import Runner, RunSettings
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
    assert by_id["e1"].scores == []
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
