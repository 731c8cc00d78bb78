"""The SQLite idioms the store's modules share, on its autocommit connection, and the one
line a failure of the store's file becomes."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agenteval_cli.core.errors import ExitCode, UserError

# Exit codes of a store that cannot be used: a file that is not a store this build can read
# (not a database, damaged, from a newer agenteval) is bad input; a storage failure
# (read-only, full, unreadable, locked) is a service failure.
BAD_STORE_EXIT = ExitCode.BAD_INPUT
STORAGE_FAILURE_EXIT = ExitCode.SERVICE_FAILED


class StoreError(UserError):
    """The store's file cannot be used: one line naming it, the cause and the fix."""

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int = BAD_STORE_EXIT):
        super().__init__(message, hint=hint)
        self.exit_code = exit_code


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One transaction holding the write lock from its start (``BEGIN IMMEDIATE``), so
    what it reads cannot change before it writes; rolled back if the block fails.

    SQLite rolls a transaction back itself after some failures (a full disk, an I/O error):
    then there is nothing to roll back, and the error raised is the one that happened."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the first failure is the one to tell
                db.execute("ROLLBACK")
        raise


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether the database has table ``name`` (read without creating anything)."""
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


# SQLite's primary result codes (an extended code's low byte) that say the storage failed
STORAGE_CODES = frozenset(
    (
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_NOTADB,
    )
)


def is_storage_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the store's file or disk (every write would fail
    alike, or wait for a lock again), not of the one row being written."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and isinstance(code, int) and code & 0xFF in STORAGE_CODES


def store_error(exc: sqlite3.Error, path: str | Path) -> StoreError:
    """What a failure of the store's SQLite file means, as one line naming the store."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    text = str(exc)
    said = f"[{name}: {text[:200]}{'...' if len(text) > 200 else ''}]"
    storage = STORAGE_FAILURE_EXIT
    if primary == sqlite3.SQLITE_READONLY:
        return StoreError(
            f"cannot write to the store {path}: the file, its folder or the file system "
            f"is read-only {said}",
            hint="make them writable, or pass --store with a writable path",
            exit_code=storage,
        )
    if primary == sqlite3.SQLITE_FULL:
        return StoreError(
            f"cannot write to the store {path}: the disk is full {said}; what was "
            "committed before is kept",
            hint="free some space and run the command again (a run continues with --resume)",
            exit_code=storage,
        )
    if primary == sqlite3.SQLITE_NOTADB:
        return StoreError(
            f"{path} is not an agenteval store: the file is not a SQLite database {said}",
            hint="pass --store with the right file, or move this one away",
        )
    if primary == sqlite3.SQLITE_CORRUPT or text.startswith("Could not decode to UTF-8"):
        return StoreError(
            f"the store {path} is damaged {said}",
            hint=f"salvage it with 'sqlite3 {path} .recover', or move it away and start a "
            "new store",
        )
    if primary in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return StoreError(
            f"cannot open the store {path} {said}",
            hint="check that the file and its folder exist and are readable and writable, "
            "or pass --store with another path",
            exit_code=storage,
        )
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreError(
            f"the store {path} is locked by another process {said}",
            hint="wait for the other agenteval or sqlite3 session to finish, then run the "
            "command again",
            exit_code=storage,
        )
    if primary == sqlite3.SQLITE_IOERR:
        return StoreError(
            f"cannot read or write the store {path}: the file system reported an error {said}",
            hint="check the disk: is it full, read-only, unmounted or failing?",
            exit_code=storage,
        )
    if primary == sqlite3.SQLITE_NOMEM:
        return StoreError(f"out of memory using the store {path} {said}", exit_code=storage)
    return StoreError(f"the store {path} failed: {said}", exit_code=storage)
