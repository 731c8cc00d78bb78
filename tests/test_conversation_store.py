"""A conversation's turns kept with its result: the store (and a store from before turns),
the merge of shards, the ``--json`` export read back, baselines and the response cache."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from conversation_results import conversation, turn
from projects import project

import agenteval_cli as agenteval
from agenteval_cli.core.records import Example, Result, Score, Trace
from agenteval_cli.data.examples import shard_of
from agenteval_cli.execution.cache import ResponseCache
from agenteval_cli.execution.runner import Runner, WorkItem
from agenteval_cli.gating.baselines import read_baseline_file, save_baseline
from agenteval_cli.metrics.prices import price_calls
from agenteval_cli.report.json_report import write_json
from agenteval_cli.results.sources import from_json_file, from_store
from agenteval_cli.store import migrations
from agenteval_cli.store.db import Store
from agenteval_cli.targets import adapt

EXAMPLE = Example(
    "c1",
    {"turns": ["refund please", {"question": "and my plan?"}]},
    {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["account"]}]},
)


SINGLE = Result("s1", 0, outputs={"final_response": "hello"}, trace=Trace(latency_s=0.01))


def experiment(store: Store) -> str:
    exp = store.create_experiment(prefix="conv", target="supervisor", target_path="m:g", spec={})
    store.add_result(exp.id, EXAMPLE, conversation())
    store.add_result(exp.id, Example("s1", {"question": "hi"}), SINGLE)
    store.finish_experiment(exp.id)
    return exp.id


def test_a_conversations_turns_round_trip_through_the_store(store):
    exp_id = experiment(store)
    talk, single = store.results(exp_id)
    assert talk.inputs == EXAMPLE.inputs and talk.reference_outputs == EXAMPLE.outputs
    assert talk.result.turns == conversation().turns
    assert [t.status for t in talk.result.turns] == ["ok", "ok"]
    assert talk.result.turns[1].trace.tokens == {
        "m-small": {"input": 8, "output": 2, "total": 10},
        "m-large": {"input": 20, "output": 7, "total": 27},
    }
    assert single.result.turns is None
    stored = dict(store.db.execute("SELECT example_id, turns_json FROM results").fetchall())
    assert stored["s1"] is None  # a single-turn result has no turns, not an empty list
    assert [t["status"] for t in json.loads(stored["c1"])] == ["ok", "ok"]
    runs = from_store(store, store.experiment(exp_id)).runs
    assert [run.turns for run in runs] == [conversation().turns, None]


def test_a_turns_error_and_comments_are_redacted_as_the_results_are(store, monkeypatch):
    monkeypatch.setenv("CONVERSATION_API_KEY", "sk-conversation-123")
    failed = turn(
        "account",
        "and my plan?",
        "",
        error="AuthError: key sk-conversation-123 refused",
        comment="judge saw sk-conversation-123",
    )
    exp = store.create_experiment(prefix="conv", target="supervisor", target_path="m:g", spec={})
    store.add_result(exp.id, EXAMPLE, conversation("c1", turn("billing", "hi", "ok"), failed))
    [stored] = store.results(exp.id)
    last = stored.result.turns[1]
    assert last.error == last.trace.error == stored.result.error == "AuthError: key *** refused"
    assert last.scores == [Score("routing_accuracy", None, "judge saw ***")]
    [(text,)] = store.db.execute("SELECT turns_json FROM results").fetchall()
    assert "sk-conversation-123" not in text


def digest(path: Path) -> str:
    parts = [path.read_bytes()]
    wal = Path(f"{path}-wal")
    if wal.exists():
        parts.append(wal.read_bytes())
    return hashlib.sha256(b"".join(parts)).hexdigest()


def before_turns(path: Path) -> Path:
    """A store as the build before turns left it: one single-turn result, no turns columns
    (nor the blame, added after them)."""
    with Store(path) as store:
        exp = store.create_experiment(prefix="old", target="t", target_path="m:g", spec={})
        store.add_result(exp.id, Example("s1", {"question": "hi"}), SINGLE)
        store.finish_experiment(exp.id)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE results DROP COLUMN turns_json")
    db.execute("ALTER TABLE cache DROP COLUMN turns_json")
    db.execute("ALTER TABLE results DROP COLUMN blame_json")
    db.execute(
        "DELETE FROM migrations WHERE name IN"
        " ('add_results_turns', 'add_cache_turns', 'add_results_blame')"
    )
    db.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION - 3}")
    db.commit()
    db.close()
    return path


def test_a_store_from_before_turns_is_read_as_it_is_and_migrated_on_writing(tmp_path, invoke):
    path = before_turns(tmp_path / "old.db")
    before = digest(path)
    with Store(path, readonly=True) as store:  # no conversation in it: read as such
        [exp] = store.experiments()
        [stored] = store.results(exp.id)
        assert stored.result.turns is None and stored.result.outputs == SINGLE.outputs
    assert invoke("experiments", "--store", path).exit_code == 0
    assert digest(path) == before
    with Store(path) as store:  # a writing open adds the columns; conversations then keep
        store.add_result(exp.id, EXAMPLE, conversation())
        assert [s.result.turns for s in store.results(exp.id)] == [None, conversation().turns]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
    assert [name for name, _ in migrations.applied(db)][-3:] == [
        "add_results_turns",
        "add_cache_turns",
        "add_results_blame",
    ]
    db.close()


# --- shards -------------------------------------------------------------------------------

ANSWER = "def answer(inputs):\n    return {'final_response': 'noted'}\n"


def test_merged_shards_keep_their_conversations_and_an_older_shards_rows_have_none(tmp_path):
    ids = [f"c{i}" for i in range(6)]
    assert {shard_of(i, 2) for i in ids} == {1, 2}  # both shards hold some
    data = [{"id": i, "inputs": {"turns": ["refund please", "and my plan?"]}} for i in ids]
    spec = project(tmp_path / "p", ANSWER, data=data, prefix="conv")
    shards = [tmp_path / "shard1.db", tmp_path / "shard2.db"]
    for index, path in enumerate(shards, 1):
        assert agenteval.run(spec, store=path, shard=(index, 2)).status == "finished"
    with Store(shards[0]) as store:  # shard 1's results are conversations
        [exp] = store.experiments()
        for stored in list(store.results(exp.id)):
            example = Example(stored.result.example_id, stored.inputs, stored.reference_outputs)
            store.add_result(exp.id, example, conversation(example.id), replace=True)
    db = sqlite3.connect(shards[1])  # shard 2's store is an older build's: no turns column
    db.execute("ALTER TABLE results DROP COLUMN turns_json")
    db.commit()
    db.close()
    report = agenteval.merge(shards, store=tmp_path / "merged.db")
    assert report.status == "finished"
    with Store(tmp_path / "merged.db") as merged:
        [exp_id] = report.ids
        turns = {s.result.example_id: s.result.turns for s in merged.results(exp_id)}
    assert set(turns) == set(ids)
    for example_id, kept in turns.items():
        assert kept == (conversation().turns if shard_of(example_id, 2) == 1 else None)


# --- --json and baselines -----------------------------------------------------------------


def test_the_json_export_writes_each_turn_and_reads_it_back(store, tmp_path):
    exp_id = experiment(store)
    path = tmp_path / "out.json"
    write_json(path, store, [exp_id])
    talk, single = json.loads(path.read_text())["experiments"][0]["results"]
    assert single["turns"] is None
    first, second = talk["turns"]
    assert (first["inputs"], first["outputs"]) == (
        {"question": "refund please"},
        {"final_response": "refunded"},
    )
    assert [t["status"] for t in talk["turns"]] == ["ok", "ok"]
    assert first["scores"] == {"routing_accuracy": 1.0} and first["comments"] == {}
    assert first["trace"]["agent_path"] == ["supervisor", "billing"]
    assert first["trace"]["handoffs"] == [
        {
            "source": "supervisor",
            "target": "billing",
            "tool": "transfer_to_billing",
            "via": "tool",
            "parallel": False,
            "after": [],
        }
    ]
    assert [(m["agent"], m["input_tokens"]) for m in second["trace"]["model_calls"]] == [
        ("supervisor", 8),
        ("account", 20),
    ]
    assert second["trace"]["tokens"]["m-large"] == {"input": 20, "output": 7, "total": 27}
    assert "messages" not in second["trace"]  # as a result's trace: the export keeps none

    [data] = from_json_file(path)
    run = data.runs[0]
    written = conversation().turns
    assert [t.inputs for t in run.turns] == [t.inputs for t in written]
    assert [t.outputs for t in run.turns] == [t.outputs for t in written]
    assert [t.scores for t in run.turns] == [t.scores for t in written]
    assert [(t.status, t.error, t.interrupt, t.latency_s) for t in run.turns] == [
        ("ok", None, None, 0.03),
        ("ok", None, None, 0.03),
    ]
    assert [replace(t.trace, messages=[]) for t in run.turns] == [
        replace(t.trace, messages=[]) for t in written
    ]
    assert data.runs[1].turns is None


def test_a_baseline_of_conversations_keeps_their_scores(store, tmp_path):
    exp_id = experiment(store)
    path = tmp_path / "base.json"
    save_baseline(path, [from_store(store, store.experiment(exp_id))], git_commit=None)
    [base] = read_baseline_file(path)
    assert {run.example_id: run.scores for run in base.runs} == {
        "c1": {"routing_accuracy": 1.0},
        "s1": {},
    }
    exported = tmp_path / "out.json"  # an export serves as a baseline too, turns and all
    write_json(exported, store, [exp_id])
    [again] = read_baseline_file(exported)
    assert again.per_example("routing_accuracy") == {"c1": 1.0}


# --- the response cache -------------------------------------------------------------------


def cached_keys(store: Store) -> list[str]:
    return [key for (key,) in store.db.execute("SELECT key FROM cache ORDER BY key")]


def test_a_conversation_is_cached_whole_and_served_with_its_turns(store):
    exp = store.create_experiment(prefix="conv", target="supervisor", target_path="m:g", spec={})
    store.add_result(exp.id, EXAMPLE, conversation(), cache_key="k1", target_path="m:g")
    hit = ResponseCache(store).get("k1")
    unscored = [replace(t, scores=[]) for t in conversation().turns]  # scored when served
    assert hit is not None and hit.turns == unscored
    assert hit.outputs == {"final_response": "upgraded"}

    def never(inputs):
        raise AssertionError("a cached conversation calls nothing")

    target = adapt(never, name="supervisor", import_path="m:g")
    runner = Runner([target], [], cache=ResponseCache(store))
    served = asyncio.run(runner.run_one(WorkItem(target, EXAMPLE, 0, cache_key="k1")))
    assert (served.cached, served.attempts) == (True, 0)
    for each in unscored:  # this run prices a cached answer's calls, as it does any answer's
        price_calls([*each.trace.model_calls, *each.user_calls], {})
    assert served.turns == unscored
    assert served.trace.agent_path == ["supervisor", "billing", "supervisor", "account"]


@pytest.mark.parametrize(
    ("turns", "cached"),
    [
        pytest.param(
            (turn("billing", "hi", "ok"), turn("account", "plan?", "", error="ValueError: x")),
            False,
            id="ended-in-an-error",
        ),
        pytest.param(
            (turn("billing", "hi", "ok"), turn("account", "plan?", "", interrupt='"approve?"')),
            False,
            id="ended-at-an-interrupt",
        ),
        pytest.param(
            (turn("billing", "hi", "", interrupt='"approve?"'), turn("billing", "yes", "done")),
            True,
            id="an-interrupt-answered-by-the-next-turn",
        ),
    ],
)
def test_only_a_conversation_that_answered_is_cached(store, turns, cached):
    exp = store.create_experiment(prefix="conv", target="supervisor", target_path="m:g", spec={})
    result = conversation("c1", *turns)
    store.add_result(exp.id, EXAMPLE, result, cache_key="k1", target_path="m:g")
    assert cached_keys(store) == (["k1"] if cached else [])
    [stored] = store.results(exp.id)
    assert stored.result.turns == list(turns)  # the result keeps its turns either way


def test_rescore_scores_each_stored_turn_again_and_the_conversation_across_them(tmp_path, invoke):
    references = {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["billing"]}]}
    data = [{"id": "c1", "inputs": EXAMPLE.inputs, "outputs": references}]
    spec = project(tmp_path / "p", ANSWER, data=data, evaluators="[routing_accuracy]")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with Store(db) as store:  # billing answered turn 1, account turn 2 (both scored 1.0)
        [exp] = store.experiments()
        example = Example("c1", EXAMPLE.inputs, references)
        store.add_result(exp.id, example, conversation(), replace=True)
    out = tmp_path / "r.json"
    rescored = invoke("rescore", spec, "t", "--store", db, "--json", out)
    assert rescored.exit_code == 0, rescored.output
    [result] = json.loads(out.read_text())["experiments"][0]["results"]
    first, second = result["turns"]
    assert first["scores"] == {"routing_accuracy": 1.0}
    assert second["scores"] == {"routing_accuracy": 0.0}  # billing expected, account answered
    assert second["comments"] == {
        "routing_accuracy": "invoked ['supervisor', 'account']; missing ['billing']"
    }
    scores, comments = result["scores"], result["comments"]
    assert scores["routing_accuracy"] == 0.5
    assert comments["routing_accuracy"] == "mean of 2 turns"
    # and the conversation's own figures, from the stored turns: turn 2 began at the
    # supervisor, not at billing where turn 1 ended (no continuity; a restart at the entry,
    # no handoff beside the 1 + 1); 2 + 2 model calls
    shown = ("turns", "agent_continuity", "model_calls", "followup_model_calls")
    assert [scores[k] for k in shown] == [2.0, 0.0, 4.0, 2.0]
    assert scores["conversation_handoffs"] == 2.0
    assert scores["resolved"] is False
    assert comments["resolved"] == "unmet: turn 2 routing_accuracy 0.0% (pass mark >= 1)"
