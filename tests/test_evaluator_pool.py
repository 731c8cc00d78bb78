"""The evaluators' own pool: a result's evaluators side by side, off the target's slots.

The timings are worked out by hand. A target of 0.2 s at concurrency 4 on 8 examples ends
its calls at 0.2 s and 0.4 s; three evaluators of 0.3 s each, all side by side, score the
last four results by 0.7 s. Scoring inside the target's slot, as before, costs each slot
0.2 + 3 × 0.3 = 1.1 s per result, 2.2 s for its two results.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Result
from agenteval_cli.core.retry import RetryPolicy
from agenteval_cli.evaluators import judge_model
from agenteval_cli.evaluators.judge_model import JudgeUsage
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.experiment import run_settings
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.spec.model import load_spec
from agenteval_cli.targets import adapt

TARGET_S, JUDGE_S = 0.2, 0.3


def examples(n: int) -> list[Example]:
    return [Example(f"e{i}", {"question": f"q{i}"}, {}) for i in range(n)]


async def target(inputs):
    await asyncio.sleep(TARGET_S)
    return {"final_response": inputs["question"]}


def judge(name: str, seconds: float = JUDGE_S, flight: list[int] | None = None):
    """An async evaluator taking ``seconds``; ``flight`` is [in flight now, most at once]."""

    async def evaluate(outputs):
        if flight is not None:
            flight[0] += 1
            flight[1] = max(flight[1], flight[0])
        await asyncio.sleep(seconds)
        if flight is not None:
            flight[0] -= 1
        return {"key": name, "score": float(outputs["final_response"].startswith("q"))}

    return BoundEvaluator(name, evaluate, keys=(name,))


def runner_for(evaluators, settings, fn=target) -> Runner:
    return Runner(
        targets=[adapt(fn, name="t", import_path="x:t")], evaluators=evaluators, settings=settings
    )


def run_all(runner: Runner, data: list[Example]) -> tuple[list[tuple[WorkItem, Result]], float]:
    results: list[tuple[WorkItem, Result]] = []
    started = time.perf_counter()
    asyncio.run(runner.run(runner.work(data), lambda item, r: results.append((item, r))))
    return results, time.perf_counter() - started


def test_scoring_leaves_the_target_slots_to_the_targets():
    evaluators = [judge("a"), judge("b"), judge("c")]
    settings = RunSettings(concurrency=4, evaluator_concurrency=12)
    results, took = run_all(runner_for(evaluators, settings), examples(8))
    ideal = 8 / 4 * TARGET_S + JUDGE_S  # 0.7 s; in the target's slot it took 2.2 s
    assert ideal - 0.05 <= took < ideal + 0.4, took
    assert sorted(r.example_id for _, r in results) == [f"e{i}" for i in range(8)]
    for _, result in results:
        assert [(s.key, s.score) for s in result.scores] == [("a", 1.0), ("b", 1.0), ("c", 1.0)]


def test_the_default_pool_grows_to_keep_up_with_slow_judges():
    """Three 0.3 s judges behind a 0.2 s target at concurrency 4: 20 results a second ask
    for 60 judge calls a second, 18 busy at once (Little's law), more than the 8 slots the
    pool starts with. At 8 the 120 calls would take 120 / 8 × 0.3 = 4.5 s; the pool grows,
    so the run takes the targets' 2.0 s and one scoring tail (2.3 s), under 3.5 s on a
    machine busy with other work, well short of the 4.5 s of a pool that did not grow."""
    settings = RunSettings(concurrency=4)
    assert (settings.evaluator_slots(), settings.evaluator_cap()) == (8, 64)
    flight = [0, 0]
    evaluators = [judge(name, flight=flight) for name in "abc"]
    results, took = run_all(runner_for(evaluators, settings), examples(40))
    assert len(results) == 40 and all(len(r.scores) == 3 for _, r in results)
    assert 8 < flight[1] <= 64
    assert 2.0 + JUDGE_S - 0.05 <= took <= 3.5, took


def test_the_default_pool_stays_small_when_judges_keep_up():
    """Judges of 10 ms behind a 0.2 s target need one or two calls in flight: the pool
    never grows past where it starts (twice the concurrency)."""
    flight = [0, 0]
    evaluators = [judge(name, 0.01, flight) for name in "abc"]
    run_all(runner_for(evaluators, RunSettings(concurrency=4)), examples(40))
    assert flight[1] <= 8


def test_a_rate_limit_bounds_the_pool_it_sizes():
    from agenteval_cli.evaluators.slots import AdaptiveSlots

    slots = AdaptiveSlots(2, 100, per_second=10.0)
    slots.observe(0.5)
    slots._arrivals.extend([0.0, 0.01, 0.02])  # a burst: 100 calls a second asked for
    # 10 a second let through × 0.5 s × 1.25 headroom = 6.25: 7, plus one
    assert slots.needed() == 8
    assert AdaptiveSlots(2, 5).needed() == 2  # nothing seen yet: where it starts


def test_evaluator_concurrency_1_scores_one_evaluator_at_a_time():
    flight = [0, 0]
    evaluators = [judge(name, 0.05, flight) for name in "abc"]
    settings = RunSettings(concurrency=4, evaluator_concurrency=1)
    results, took = run_all(runner_for(evaluators, settings), examples(4))
    assert flight[1] == 1
    assert took >= TARGET_S + 12 * 0.05 - 0.02, took  # the 12 calls one after another
    assert all(len(r.scores) == 3 for _, r in results)


def test_judge_usage_goes_to_the_result_it_was_spent_on():
    async def spender(example):
        index = int(example.id[1:])
        # the later examples finish first: their scoring overlaps the others'
        await asyncio.sleep(0.01 * (10 - index))
        sink = judge_model._SINK.get()
        assert sink is not None
        sink.append(JudgeUsage("judge-model", 100 + index, index, 0.001 * index))
        return {"key": "spent", "score": 1.0}

    async def other(example):
        await asyncio.sleep(0.005)
        judge_model._SINK.get().append(JudgeUsage("judge-model", 1, 1, 0.0))  # type: ignore[union-attr]
        return {"key": "other", "score": 1.0}

    evaluators = [BoundEvaluator("spent", spender), BoundEvaluator("other", other)]
    results, _ = run_all(runner_for(evaluators, RunSettings(concurrency=10)), examples(10))
    assert len(results) == 10
    for _, result in results:
        index = int(result.example_id[1:])
        scores = result.score_map()
        assert scores["judge_input_tokens"] == 100 + index + 1
        assert scores["judge_output_tokens"] == index + 1
        assert scores["judge_cost_usd"] == pytest.approx(0.001 * index)


def test_a_failing_evaluator_is_scored_as_failed_and_the_others_still_run():
    async def broken(outputs):
        await asyncio.sleep(0.01)
        raise ValueError("no verdict")

    evaluators = [judge("a", 0.02), BoundEvaluator("broken", broken, keys=("x", "y")), judge("c")]
    results, _ = run_all(runner_for(evaluators, RunSettings(concurrency=2)), examples(3))
    for _, result in results:
        assert [(s.key, s.score, s.comment) for s in result.scores] == [
            ("a", 1.0, None),
            ("x", None, "evaluator 'broken' failed: ValueError: no verdict"),
            ("y", None, "evaluator 'broken' failed: ValueError: no verdict"),
            ("c", 1.0, None),
        ]


class RateLimitError(Exception):
    """Shaped like a provider's: retried by a policy that retries rate limits."""


def test_evaluators_are_retried_by_their_own_policy_not_the_targets():
    calls: dict[str, int] = {}

    async def flaky(example):
        calls[example.id] = calls.get(example.id, 0) + 1
        if calls[example.id] == 1:
            raise RateLimitError("slow down")
        return {"key": "flaky", "score": 1.0}

    retry = RetryPolicy(max=1, on=("rate_limit",), base_s=0.0)
    settings = RunSettings(concurrency=2, retry=RetryPolicy(max=0), evaluator_retry=retry)
    results, _ = run_all(runner_for([BoundEvaluator("flaky", flaky)], settings), examples(3))
    assert calls == {"e0": 2, "e1": 2, "e2": 2}
    assert all(r.score_map() == {"flaky": 1.0} and r.attempts == 1 for _, r in results)

    calls.clear()  # the default: no retries, the failure scored as before
    results, _ = run_all(runner_for([BoundEvaluator("flaky", flaky)], RunSettings()), examples(1))
    assert results[0][1].scores[0].comment == "evaluator 'flaky' failed: RateLimitError: slow down"


def test_the_evaluators_rate_limit_spaces_their_calls():
    starts: list[float] = []

    async def timed(outputs):
        starts.append(time.monotonic())
        return {"key": "timed", "score": 1.0}

    async def instant(inputs):
        return {"final_response": inputs["question"]}

    settings = RunSettings(concurrency=4, evaluator_requests_per_minute=600)  # 0.1 s apart
    run_all(runner_for([BoundEvaluator("timed", timed)], settings, instant), examples(4))
    # 0.1 s apart as granted; a call the loaded machine starts late shortens the next gap
    # by as much, so each gap is checked loosely and the span of the four closely
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(starts) == 4 and min(gaps) >= 0.05, gaps
    assert starts[-1] - starts[0] >= 0.29, gaps


def stopped_mid_scoring(
    grace_s: float, again_at: float | None = None
) -> tuple[list[str], list[tuple[WorkItem, Result]]]:
    """Concurrency 2, evaluators of 0.4 s: stop() at 0.3 s, when the first two calls have
    ended (at 0.2 s) and are being scored, and the next two are in flight; stop() again at
    ``again_at``, as a second Ctrl-C."""
    answered: list[str] = []

    async def answering(inputs):
        await asyncio.sleep(TARGET_S)
        answered.append(inputs["question"])
        return {"final_response": inputs["question"]}

    runner = runner_for(
        [judge("a", 0.4), judge("b", 0.4)],
        RunSettings(concurrency=2, grace_s=grace_s),
        answering,
    )
    results: list[tuple[WorkItem, Result]] = []

    async def main() -> bool:
        asyncio.get_running_loop().call_later(0.3, runner.stop)
        if again_at is not None:
            asyncio.get_running_loop().call_later(again_at, runner.stop)
        return await runner.run(runner.work(examples(10)), lambda i, r: results.append((i, r)))

    assert asyncio.run(main()) is False
    return answered, results


def test_a_stop_mid_scoring_waits_for_the_scores_within_the_grace():
    answered, results = stopped_mid_scoring(grace_s=5.0)
    # e0, e1 ended at 0.2 s; e2, e3 were in flight at the stop and end at 0.4 s
    assert sorted(answered) == ["q0", "q1", "q2", "q3"]
    assert sorted(r.example_id for _, r in results) == ["e0", "e1", "e2", "e3"]  # each once
    assert all(r.score_map() == {"a": 1.0, "b": 1.0} for _, r in results)


def test_a_stop_whose_grace_ends_mid_scoring_saves_those_results_unscored():
    answered, results = stopped_mid_scoring(grace_s=0.2)
    # the grace ends at 0.5 s: e2, e3 ended at 0.4 s, nobody's scores (0.6 s, 0.8 s) are done
    assert sorted(answered) == ["q0", "q1", "q2", "q3"]
    assert sorted(r.example_id for _, r in results) == ["e0", "e1", "e2", "e3"]  # each once
    reason = "not scored: the run was stopped and 0.2 s passed before its evaluators finished"
    for _, result in results:
        assert result.error is None
        assert [(s.key, s.score, s.comment) for s in result.scores] == [
            ("a", None, reason),
            ("b", None, reason),
        ]


BASE = "dataset: data.jsonl\ntargets:\n  supervisor: agenteval_cli.demo.supervisor:graph\n"


def test_the_spec_sets_the_evaluators_pool(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("data.jsonl").write_text('{"inputs": {"question": "q"}}\n')
    Path("spec.yaml").write_text(
        BASE
        + "concurrency: 3\nevaluator_concurrency: 20\n"
        + "evaluator_retries: {max: 4, on: [rate_limit, server]}\n"
        + "evaluator_rate_limit: {requests_per_minute: 120}\n"
    )
    settings = run_settings(load_spec("spec.yaml"))
    assert settings.evaluator_slots() == 20
    retry = settings.evaluator_retry
    assert (retry.max, retry.on) == (4, ("rate_limit", "server"))
    assert settings.evaluator_requests_per_minute == 120
    assert settings.retry.max == 2 and settings.requests_per_minute is None  # the targets'

    Path("spec.yaml").write_text(BASE + "concurrency: 3\n")
    settings = run_settings(load_spec("spec.yaml"))
    assert (settings.evaluator_slots(), settings.evaluator_retry.max) == (6, 0)
    assert settings.evaluator_requests_per_minute is None

    Path("spec.yaml").write_text(BASE + "evaluator_concurrency: 0\n")
    with pytest.raises(UserError) as caught:
        load_spec("spec.yaml")
    assert str(caught.value) == (
        "spec.yaml:4: evaluator_concurrency: expected an integer from 1 to 1024, got 0"
    )


def test_a_second_stop_mid_scoring_saves_the_answered_results_unscored_at_once():
    answered, results = stopped_mid_scoring(grace_s=5.0, again_at=0.45)
    # at 0.45 s e0, e1 (ended at 0.2 s) and e2, e3 (at 0.4 s) are all being scored
    assert sorted(answered) == ["q0", "q1", "q2", "q3"]
    assert sorted(r.example_id for _, r in results) == ["e0", "e1", "e2", "e3"]  # each once
    reason = "not scored: the run was stopped at once before its evaluators finished"
    assert all(s.comment == reason and s.score is None for _, r in results for s in r.scores)
