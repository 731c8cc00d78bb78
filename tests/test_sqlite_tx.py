"""The store's shared SQLite idioms: a write transaction that rolls back, a table check."""

from __future__ import annotations

import sqlite3

import pytest

from agenteval_cli.sqlite_tx import has_table, write_transaction


def test_a_failing_block_leaves_nothing_and_a_finished_one_is_committed(tmp_path):
    db = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    assert not has_table(db, "t")
    db.execute("CREATE TABLE t (x)")
    assert has_table(db, "t")
    with pytest.raises(RuntimeError), write_transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("the block fails")
    with write_transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
    other = sqlite3.connect(tmp_path / "t.db")  # what another connection sees
    assert other.execute("SELECT x FROM t").fetchall() == [(2,)]
    assert not db.in_transaction
