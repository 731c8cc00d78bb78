"""A run's group commits, written by a thread of their own (store.committer): every result
handed over is committed before the run returns, in the order it was handed over; a failure
of the store reaches the run; a batch is a few statements, not one a row."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from projects import project, rows
from test_store import make_result, new_experiment

from agenteval_cli.core.records import Example
from agenteval_cli.store import committer, results
from agenteval_cli.store.tx import store_error


def encoded(experiment_id: str, count: int, start: int = 0) -> list[results.EncodedResult]:
    examples = [Example(f"e{i:04d}", {"q": i}, {"expected": i}) for i in range(start, count)]
    return [results.encode(experiment_id, e, make_result(e.id)) for e in examples]


async def hand(writer: results.ResultWriter, batch: list[results.EncodedResult]) -> None:
    """``batch`` added in one turn of an event loop: one group, handed over at its end."""
    for one in batch:
        writer.add(one)


def test_a_batch_is_inserted_by_a_few_statements_in_its_order(store):
    """1,000 results and their cache entries: 1,000 = 512 + 256 + 128 + 64 + 32 + 8 rows a
    statement, six statements a table (executemany steps once a row), ids in batch order;
    of two cache entries of one key, the later is kept, as one statement a row kept it."""
    exp = new_experiment(store)
    examples = [Example(f"e{i:04d}", {"q": i}, {}) for i in range(1000)]
    batch = [
        results.encode(exp.id, e, make_result(e.id), cache_key=f"k{i // 2}", target_path="m:f")
        for i, e in enumerate(examples)
    ]
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    results.write(store.db, batch)
    store.db.set_trace_callback(None)
    inserts = [s.split(" (")[0] for s in statements if s.startswith("INSERT")]
    assert inserts == ["INSERT INTO results"] * 6 + ["INSERT OR REPLACE INTO cache"] * 6
    ids = [
        example_id
        for (example_id,) in store.db.execute(
            "SELECT example_id FROM results WHERE experiment_id = ? ORDER BY id", (exp.id,)
        )
    ]
    assert ids == [e.id for e in examples]
    kept = dict(store.db.execute("SELECT key, outputs_json FROM cache"))
    assert len(kept) == 500
    assert kept["k0"] == batch[1].cache[2]  # e0001's answer, written after e0000's
    assert [s.result.example_id for s in store.results(exp.id)] == ids


def test_every_result_handed_over_is_committed_by_the_thread_before_flush_returns(store):
    exp = new_experiment(store)
    writer = store.committer()
    threads: set[str] = set()
    real = committer.write

    def recording(db, batch, **options):
        threads.add(threading.current_thread().name)
        real(db, batch, **options)

    async def run() -> None:
        for i, one in enumerate(encoded(exp.id, 300)):
            writer.add(one)
            if i % 7 == 0:
                await asyncio.sleep(0)  # the loop's turn ends: the group is handed over

    committer.write = recording
    try:
        asyncio.run(run())
        writer.flush()
        assert store.result_count(exp.id) == 300  # on the store's own connection
        writer.close()
    finally:
        committer.write = real
    assert threads == {"agenteval-store"}
    assert not writer._thread.is_alive()


def test_a_failed_commit_reaches_the_run_and_what_follows_is_still_written(store):
    """A pair already stored fails its batch: the others of that batch are kept (each in a
    transaction of its own), the failure is raised by the next flush, and results handed
    over after it are written."""
    exp = new_experiment(store)
    results.write(store.db, encoded(exp.id, 1))  # e0000
    writer = store.committer()
    asyncio.run(hand(writer, encoded(exp.id, 3)))  # e0000 again, e0001, e0002
    with pytest.raises(sqlite3.IntegrityError):
        writer.flush()
    asyncio.run(hand(writer, encoded(exp.id, 5, start=3)))
    writer.close()
    assert store.result_count(exp.id) == 5


def test_a_store_that_cannot_be_written_is_one_line_from_the_thread(store):
    exp = new_experiment(store)

    def read_only() -> sqlite3.Connection:
        db = store._writing_connection()
        db.execute("PRAGMA query_only = ON")
        return db

    writer = committer.CommitThread(read_only)
    asyncio.run(hand(writer, encoded(exp.id, 2)))
    with pytest.raises(sqlite3.Error) as failed:
        writer.close()
    assert str(store_error(failed.value, store.path)).startswith(
        f"cannot write to the store {store.path}: the file, its folder or the file system "
        "is read-only"
    )
    assert not writer._thread.is_alive()
    assert store.result_count(exp.id) == 0


def test_a_connection_that_cannot_open_is_raised_by_the_constructor():
    def refused() -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    before = threading.active_count()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        committer.CommitThread(refused)
    assert threading.active_count() == before


TARGET = """
async def answer(inputs):
    return {"final_response": "answer " + inputs["question"]}
"""


def test_a_run_commits_on_the_thread_and_everything_before_it_returns(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app
    from agenteval_cli.store.db import Store

    spec = project(tmp_path / "p", TARGET, data=rows(120), concurrency=4, evaluators="[]")
    threads: list[str] = []
    real = committer.write

    def recording(db, batch, **options):
        threads.append(threading.current_thread().name)
        real(db, batch, **options)

    monkeypatch.setattr(committer, "write", recording)
    path = tmp_path / "run.db"
    out = CliRunner().invoke(app, ["run", str(spec), "--store", str(path), "-q"])
    assert out.exit_code == 0, out.output
    assert threads and set(threads) == {"agenteval-store"}
    with Store(path, readonly=True) as stored:
        (experiment,) = stored.experiments()
        assert experiment.status == "finished"
        assert stored.result_count(experiment.id) == 120
