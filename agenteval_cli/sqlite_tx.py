"""The two SQLite idioms the store's modules share, on its autocommit connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One transaction holding the write lock from its start (``BEGIN IMMEDIATE``), so
    what it reads cannot change before it writes; rolled back if the block fails."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the database has table ``name`` (read without creating anything)."""
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None
