"""The write-ahead log copied into the store's file on a thread of its own during a run.

SQLite appends every commit to the store's log (``-wal``) and, once the log holds about
1,000 pages, copies them into the file before the commit returns (its automatic
checkpoint), syncing both to disk: meanwhile the event loop waits and no call can start.
A run's writer (:class:`~agenteval_cli.store.results.ResultWriter`) turns that off for its
connection and hands the copy to a :class:`Checkpointer`: a thread with a connection of its
own, which copies what is committed (a ``PASSIVE`` checkpoint: it neither waits for nor
holds up the writer) each time about ``every_bytes`` more were written. SQLite lets go of
the interpreter's lock while it copies, so the loop goes on meanwhile, and since the copy
costs the loop nothing it is made sooner than SQLite would (a quarter of its 1,000 pages):
the log stays small, and little is left for the store's last connection to copy as it
closes. What is committed is as safe either way: a commit is in the log before it returns,
and the log is read back after a crash.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

# SQLite's own automatic checkpoint: once the log holds this many pages
AUTOCHECKPOINT_PAGES = 1000
# How much text the commits write between two copies: a quarter of SQLite's 4 KiB pages
EVERY_BYTES = AUTOCHECKPOINT_PAGES * 4096 // 4


class Checkpointer:
    """Copies a store's log into its file on a daemon thread, each time it is told that
    about ``every_bytes`` more were committed (:meth:`wrote`); :meth:`close` ends the
    thread, its connection closed."""

    def __init__(self, path: Path, every_bytes: int = EVERY_BYTES) -> None:
        self.path, self.every_bytes = path, every_bytes
        self.copies = 0  # the copies made (for the tests)
        self._written = 0  # since the last copy was asked for (the writer's side only)
        self._due = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None

    def wrote(self, size: int) -> None:
        """``size`` bytes of text were committed: a copy is asked for once enough were."""
        self._written += size
        if self._written < self.every_bytes:
            return
        self._written = 0
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name="agenteval-checkpoint", daemon=True
            )
            self._thread.start()
        self._due.set()

    def close(self) -> None:
        """End the thread once its copy under way is made, so the store's own connection
        is the last, and copies what is left as it closes."""
        thread = self._thread
        if thread is None:
            return
        self._closing = True
        self._due.set()
        thread.join()
        self._thread, self._closing = None, False

    def _serve(self) -> None:
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error:  # the copy is left to the store's own connection
            return
        with contextlib.closing(db):
            while True:
                self._due.wait()
                self._due.clear()
                if self._closing:
                    return
                with contextlib.suppress(sqlite3.Error):  # copied by the next one, or at close
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.copies += 1
