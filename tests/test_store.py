"""The SQLite store: experiments, one committed row per result, scores round-trip."""

from __future__ import annotations

import sqlite3

import pytest

from agenteval_cli.records import Example, Handoff, ModelCall, Result, Score, Trace
from agenteval_cli.store import Store


def make_result(example_id: str, repetition: int = 0, error: str | None = None) -> Result:
    return Result(
        example_id=example_id,
        repetition=repetition,
        outputs=None if error else {"final_response": "done", "obj": object.__name__},
        trace=Trace(
            agent_path=["supervisor", "billing"],
            handoffs=[Handoff("supervisor", "billing", "transfer_to_billing")],
            model_calls=[ModelCall("supervisor", "m", 10, 2)],
        ),
        scores=[] if error else [Score("routing_accuracy", 0.5, "half"), Score("ping_pong", False)],
        error=error,
        latency_s=0.25,
    )


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s" / "a.db") as s:
        yield s


def new_experiment(store: Store, target: str = "supervisor"):
    return store.create_experiment(
        prefix="routing", target=target, target_path="pkg.mod:graph", spec={"concurrency": 2}
    )


def test_experiment_is_named_prefix_target_short_id(store):
    exp = new_experiment(store)
    assert exp.name == f"routing-supervisor-{exp.id[:8]}"
    assert exp.status == "running"
    assert store.experiment(exp.name).id == exp.id
    assert store.experiment(exp.name[:-2]).id == exp.id  # unique prefix
    assert exp.spec == {"concurrency": 2}


def test_results_round_trip_with_scores_and_trace(store):
    exp = new_experiment(store)
    example = Example("e1", {"question": "q"}, {"expected_agents": ["billing"]})
    store.add_result(exp.id, example, make_result("e1"))
    store.add_result(exp.id, example, make_result("e1", 1, error="ValueError: boom"))
    stored = list(store.results(exp.id))
    assert [s.result.repetition for s in stored] == [0, 1]
    first = stored[0]
    assert first.inputs == {"question": "q"}
    assert first.reference_outputs == {"expected_agents": ["billing"]}
    assert first.result.score_map() == {"routing_accuracy": 0.5, "ping_pong": False}
    assert first.result.trace.tokens == {"m": {"input": 10, "output": 2, "total": 12}}
    assert first.result.trace.handoffs[0].tool == "transfer_to_billing"
    assert stored[1].result.error == "ValueError: boom"
    assert stored[1].result.outputs is None


def test_a_result_is_visible_to_another_connection_at_once(store, tmp_path):
    exp = new_experiment(store)
    store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    other = sqlite3.connect(store.path)
    assert other.execute("SELECT COUNT(*) FROM results").fetchone() == (1,)
    assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_duplicate_result_is_refused_and_rolled_back(store):
    exp = new_experiment(store)
    store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    with pytest.raises(sqlite3.IntegrityError):
        store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    assert store.result_count(exp.id) == 1
    store.add_result(exp.id, Example("e2", {}), make_result("e2"))  # still usable
    assert store.result_count(exp.id) == 2


def test_latest_experiment_per_target_and_finish(store):
    first = new_experiment(store)
    second = new_experiment(store)
    new_experiment(store, target="swarm")
    store.finish_experiment(second.id, "finished")
    latest = store.latest_experiment("supervisor")
    assert latest.id == second.id
    assert latest.status == "finished" and latest.ended_at
    assert [e.id for e in store.experiments(target="supervisor")] == [second.id, first.id]
    assert store.latest_experiment("nobody") is None
    with pytest.raises(KeyError):
        store.experiment("routing-")  # ambiguous prefix
