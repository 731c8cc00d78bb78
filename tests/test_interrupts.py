"""Requests that stop at ``interrupt()``: found in what a target returns or raises, whatever
its kind; status ``interrupted``, never an answer, never an error, never cached."""

from __future__ import annotations

import asyncio
import json

from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt

from agenteval_cli.core.interrupts import describe, raised_interrupts, returned_interrupt
from agenteval_cli.core.records import Example, Result, Trace
from agenteval_cli.core.retry import RetryPolicy
from agenteval_cli.evaluators.scoring import BoundEvaluator
from agenteval_cli.execution.cache import ResponseCache
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.store.db import Store
from agenteval_cli.targets import adapt

ASKED = Interrupt(value={"question": "Refund INV-42?"}, id="i1")


def coverage(outputs):
    return {"key": "resolution_coverage", "score": 1.0}


def run_one(target, *, retry: RetryPolicy | None = None, output: str | None = None) -> Result:
    adapted = adapt(target, name="t", import_path="x:t", output=output)
    runner = Runner(
        targets=[adapted],
        evaluators=[BoundEvaluator("resolution_coverage", coverage)],
        settings=RunSettings(retry=retry or RetryPolicy()),
    )
    item = WorkItem(adapted, Example("e1", {"question": "refund?"}), 0)
    return asyncio.run(runner.run_one(item))


def test_the_interrupts_of_a_returned_state_or_a_raised_graph_interrupt_are_read():
    assert returned_interrupt({"messages": [], "__interrupt__": [ASKED]}) == (
        '{"question": "Refund INV-42?"}'
    )
    stored = {"__interrupt__": [{"value": "approve?", "id": "i2"}]}  # as the store keeps it
    assert returned_interrupt(stored) == '"approve?"'
    assert returned_interrupt({"messages": []}) is None
    assert returned_interrupt({"__interrupt__": []}) is None
    assert returned_interrupt("text") is None
    assert raised_interrupts(GraphInterrupt([ASKED])) == [ASKED]
    assert raised_interrupts(ValueError("boom")) is None
    assert describe(raised_interrupts(GraphInterrupt()) or []) == "null"  # one with no value


def test_a_function_returning_an_interrupted_state_is_interrupted_not_answered():
    def target(inputs):
        return {
            "messages": [{"role": "assistant", "content": "one moment"}],
            "__interrupt__": [ASKED],
        }

    result = run_one(target)
    assert (result.status, result.error) == ("interrupted", None)
    assert json.loads(result.interrupt) == {"question": "Refund INV-42?"}
    [score] = result.scores
    assert score.score is None and score.comment.startswith(
        "no answer: the graph stopped at interrupt() waiting for input"
    )


def test_an_output_path_the_interrupted_state_never_reached_is_no_error():
    def target(inputs):
        return {"messages": [], "__interrupt__": [ASKED]}

    result = run_one(target, output="structured_response")
    assert result.status == "interrupted"
    assert result.outputs["final_response"] is None


def test_a_graph_interrupt_no_graph_caught_is_interrupted_and_not_retried():
    calls = []

    def target(inputs):
        calls.append(1)
        raise GraphInterrupt([ASKED])

    result = run_one(target, retry=RetryPolicy(max=3, on=("any",), base_s=0.0, max_s=0.0))
    assert (result.status, result.error, result.attempts, len(calls)) == ("interrupted", None, 1, 1)
    assert json.loads(result.interrupt) == {"question": "Refund INV-42?"}


def test_an_interrupted_answer_is_never_cached_nor_served(tmp_path):
    with Store(tmp_path / "db") as store:
        exp = store.create_experiment(prefix="p", target="t", target_path="x:t", spec={})
        example = Example("e1", {"question": "q"})
        stopped = Result(
            "e1", 0, {"__interrupt__": [{"value": "approve?", "id": "i"}]}, Trace(), interrupt="x"
        )
        store.add_result(exp.id, example, stopped, cache_key="k1", target_path="x:t")
        errored = Result("e2", 0, None, Trace(), error="ValueError: boom")
        store.add_result(exp.id, Example("e2", {}), errored, cache_key="k2", target_path="x:t")
        assert store.cache_stats() == []
        # one stored by a build that could not tell it apart is not served either
        store.db.execute(
            "INSERT INTO cache VALUES ('k3', 'x:t', ?, NULL, 0.1, '2026-01-01', NULL, NULL)",
            (json.dumps(stopped.outputs),),
        )
        cache = ResponseCache(store)
        assert (cache.get("k1"), cache.get("k3"), cache.hits) == (None, None, 0)
        assert store.status_counts(exp.id) == {"interrupted": 1, "error": 1}
        assert [s.result.interrupt for s in store.results(exp.id)] == ["x", None]
