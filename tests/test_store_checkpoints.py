"""A run's writer copies the store's log into its file on a thread of its own: SQLite's own
copy, made as a commit returns, is off for the run's connection while the run writes and
on again after; every committed row is there however the copies fell, and the store's last
connection leaves no log behind."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from test_store import make_result, new_experiment

from agenteval_cli.core.records import Example
from agenteval_cli.store import results
from agenteval_cli.store.checkpoints import AUTOCHECKPOINT_PAGES, Checkpointer
from agenteval_cli.store.db import Store


def _autocheckpoint(db: sqlite3.Connection) -> int:
    return db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]


def _copied(checkpointer: Checkpointer) -> int:
    """The copies the thread made, once the one asked for last is made (or 5 s passed)."""
    deadline = time.monotonic() + 5
    while checkpointer.copies == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return checkpointer.copies


def _batch(exp_id: str, start: int, count: int) -> list[results.EncodedResult]:
    examples = [Example(f"e{i:05d}", {"q": "x" * 200}, {}) for i in range(start, start + count)]
    return [results.encode(exp_id, e, make_result(e.id)) for e in examples]


def test_a_run_writer_copies_the_log_on_its_thread_and_gives_the_copy_back(tmp_path: Path):
    """Ten group commits of 100 results (about 100 KB of text each) with a copy asked for
    every 150 KB: the thread copies the log while the run writes (SQLite's own copy off,
    ``wal_autocheckpoint`` 0), the writer's close turns SQLite's back on (1,000 pages), and
    once the store is closed (the thread ended first) there is no log file and a fresh
    store reads all 1,000."""
    path = tmp_path / "s.db"
    store = Store(path)
    exp = new_experiment(store)
    store._checkpoints = Checkpointer(path, every_bytes=150_000)
    writer = store.writer(run=True)
    assert _autocheckpoint(store.db) == 0
    for start in range(0, 1000, 100):
        for encoded in _batch(exp.id, start, 100):
            writer.add(encoded)
        writer.flush()
    writer.close()
    assert _autocheckpoint(store.db) == AUTOCHECKPOINT_PAGES
    assert _copied(store._checkpoints) >= 1
    store.close()  # the thread ends first: the store's connection is the last
    assert not Path(f"{path}-wal").exists()
    with Store(path, readonly=True) as again:
        assert again.result_count(exp.id) == 1000


def test_a_writer_not_a_run_leaves_the_copy_to_sqlite(store):
    """Any other writer (the names' and the one-agent marks' rewrites) keeps SQLite's own
    copy: no thread is started."""
    exp = new_experiment(store)
    writer = store.writer()
    for encoded in _batch(exp.id, 0, 50):
        writer.add(encoded)
    writer.flush()
    assert _autocheckpoint(store.db) == AUTOCHECKPOINT_PAGES
    assert store._checkpoints is None


def test_a_run_keeps_every_result_with_its_copies_made_apart(tmp_path: Path, monkeypatch):
    """A whole run (the library's ``execute``) of 300 examples, a copy asked for every
    20 KB: its results are all stored, its connection copies the log itself again after
    the run, and the copies were made on the thread."""
    from agenteval_cli.execution import experiment
    from agenteval_cli.spec.model import load_spec
    from agenteval_cli.store import checkpoints as module

    made: list[Checkpointer] = []

    class Counted(Checkpointer):
        def __init__(self, path: Path) -> None:
            super().__init__(path, every_bytes=20_000)
            made.append(self)

    monkeypatch.setattr("agenteval_cli.store.db.Checkpointer", Counted)
    assert module.EVERY_BYTES == AUTOCHECKPOINT_PAGES * 4096 // 4
    rows = "\n".join(
        f'{{"id": "ex-{i:04d}", "inputs": {{"question": "refund {i}"}}, '
        f'"outputs": {{"must_mention": ["refund"]}}}}'
        for i in range(300)
    )
    (tmp_path / "data.jsonl").write_text(rows + "\n", encoding="utf-8")
    (tmp_path / "target.py").write_text(
        "async def target(inputs):\n    return {'final_response': 'your ' + inputs['question']}\n",
        encoding="utf-8",
    )
    (tmp_path / "spec.yaml").write_text(
        "experiment_prefix: t\ndataset: data.jsonl\ntargets:\n  t: target.py:target\n"
        "evaluators: [resolution_coverage]\nconcurrency: 8\n",
        encoding="utf-8",
    )
    prepared = experiment.prepare(load_spec(tmp_path / "spec.yaml"))
    with Store(tmp_path / "run.db") as store:
        experiment.start_experiments(prepared, store)
        status = experiment.execute(prepared, store)
        assert status == "finished"
        assert _autocheckpoint(store.db) == AUTOCHECKPOINT_PAGES
        (record,) = prepared.experiments.values()
        assert store.result_count(record.id) == 300
        assert len(made) == 1
        assert _copied(made[0]) >= 1
    assert not (tmp_path / "run.db-wal").exists()


@pytest.mark.parametrize("size", [0, 149_999])
def test_no_copy_is_asked_for_before_enough_was_written(tmp_path: Path, size: int):
    """Below ``every_bytes`` since the last copy, no thread is started."""
    checkpointer = Checkpointer(tmp_path / "s.db", every_bytes=150_000)
    checkpointer.wrote(size)
    assert checkpointer._thread is None
    checkpointer.close()
