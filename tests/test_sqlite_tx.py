"""The store's shared SQLite idioms: a write transaction that rolls back, a table check."""

from __future__ import annotations

import sqlite3

import pytest

from agenteval_cli.store.tx import has_table, is_storage_failure, store_error, write_transaction


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


# --- a failure of the store's file, as the one line it becomes ----------------------------


def filled(path) -> sqlite3.Connection:
    """A database holding one committed row that cannot grow by a page: a full disk."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    with write_transaction(db):
        db.execute("INSERT INTO t VALUES ('kept')")
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    db.execute(f"PRAGMA max_page_count = {pages}")
    return db


def test_a_full_disk_raises_its_own_error_not_a_failed_rollback(tmp_path):
    db = filled(tmp_path / "t.db")
    with pytest.raises(sqlite3.OperationalError) as failed, write_transaction(db):
        db.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    assert (failed.value.sqlite_errorname, str(failed.value)) == (
        "SQLITE_FULL",
        "database or disk is full",
    )
    assert not db.in_transaction
    assert db.execute("SELECT x FROM t").fetchall() == [("kept",)]
    error = store_error(failed.value, "s.db")
    assert str(error) == (
        "cannot write to the store s.db: the disk is full [SQLITE_FULL: database or disk is "
        "full]; what was committed before is kept (free some space and run the command again "
        "(a run continues with --resume))"
    )
    assert error.exit_code == 4 and is_storage_failure(failed.value)


def raised(fn) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        fn()
    return caught.value


def test_each_kind_of_failure_names_the_store_and_its_cause(tmp_path):
    text = tmp_path / "text.db"
    text.write_text("name,value\na,1\n" * 100)
    not_a_db = raised(lambda: sqlite3.connect(text).execute("PRAGMA user_version"))
    good = tmp_path / "good.db"
    sqlite3.connect(good).execute("CREATE TABLE t (x)").connection.close()
    read_only = sqlite3.connect(f"file:{good}?mode=ro", uri=True)
    readonly = raised(lambda: read_only.execute("INSERT INTO t VALUES (1)"))
    missing = tmp_path / "no" / "such" / "dir.db"
    cantopen = raised(lambda: sqlite3.connect(missing).execute("PRAGMA user_version"))
    holder = sqlite3.connect(good, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(good, timeout=0, isolation_level=None)
    busy = raised(lambda: waiter.execute("BEGIN IMMEDIATE"))
    holder.execute("ROLLBACK")
    holder.execute("CREATE TABLE u (k PRIMARY KEY)")
    holder.execute("INSERT INTO u VALUES (1)")
    duplicate = raised(lambda: holder.execute("INSERT INTO u VALUES (1)"))

    lines = {
        "notadb": (not_a_db, text),
        "readonly": (readonly, good),
        "cantopen": (cantopen, missing),
        "busy": (busy, good),
        "duplicate": (duplicate, good),
    }
    said = {
        kind: (str(store_error(exc, path)), store_error(exc, path).exit_code)
        for kind, (exc, path) in lines.items()
    }
    assert said["notadb"] == (
        f"{text} is not an agenteval store: the file is not a SQLite database [SQLITE_NOTADB: "
        "file is not a database] (pass --store with the right file, or move this one away)",
        2,
    )
    assert said["readonly"] == (
        f"cannot write to the store {good}: the file, its folder or the file system is "
        "read-only [SQLITE_READONLY: attempt to write a readonly database] (make them "
        "writable, or pass --store with a writable path)",
        4,
    )
    assert said["cantopen"][0].startswith(
        f"cannot open the store {missing} [SQLITE_CANTOPEN: unable to open database file]"
    )
    assert said["busy"][0].startswith(
        f"the store {good} is locked by another process [SQLITE_BUSY: database is locked]"
    )
    assert said["duplicate"][0] == (
        f"the store {good} failed: [SQLITE_CONSTRAINT_PRIMARYKEY: UNIQUE constraint failed: u.k]"
    )
    assert [is_storage_failure(exc) for exc, _ in lines.values()] == [
        True,
        True,
        True,
        True,
        False,
    ]
