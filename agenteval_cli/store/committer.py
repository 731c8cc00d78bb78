"""A run's group commits on a thread of their own, beside the event loop.

The event loop encodes each result (so a value JSON cannot hold is still the example's
error at once) and hands each group commit over; a thread with its own connection to the
store writes it. SQLite lets go of Python's lock while it inserts and commits, so on a
second core the rows are written while the loop runs the next calls. What was handed over
is committed by :meth:`CommitThread.drain`, which a run calls before it returns, when it is
stopped, and before the process is ended by force; a failure of the store (a full disk, a
lock) is raised to the loop by the next hand-over or by ``drain``, as it was when the loop
wrote the rows itself.

Each batch is inserted by a few multi-row statements rather than one statement a row: the
thread gets Python's lock back after each statement only when the loop gives it up (the
loop holds it most of the time), so a statement a row would make the thread far slower than
the loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable

from agenteval_cli.store.results import EncodedResult, ResultWriter, without_secrets, write

BACKLOG_ROWS = 2000  # rows handed over and not yet committed before a hand-over waits


class CommitThread(ResultWriter):
    """:class:`ResultWriter`'s group commits, written by a thread: ``connect()`` opens the
    thread's own connection to the store (in the thread that uses it)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        max_rows: int = 500,
        max_delay_s: float = 0.05,
        backlog: int = BACKLOG_ROWS,
    ) -> None:
        self.backlog = backlog
        # the groups handed over, not yet taken by the thread
        self._handed: deque[list[EncodedResult]] = deque()
        self._writing = 0  # rows handed over and not yet committed (or failed)
        self._thread_failure: BaseException | None = None
        self._done = False
        self._cond = threading.Condition()
        opened: list[sqlite3.Connection | BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(connect, opened), name="agenteval-store", daemon=True
        )
        with self._cond:
            self._thread.start()
            while not opened:
                self._cond.wait()
        if isinstance(opened[0], BaseException):
            self._thread.join()
            raise opened[0]
        super().__init__(opened[0], max_rows=max_rows, max_delay_s=max_delay_s)

    def flush(self) -> None:
        """Hand every pending result to the thread and wait until it is committed."""
        try:
            super().flush()
        finally:
            self.drain()

    def _write(self, batch: list[EncodedResult]) -> None:
        """Hand ``batch`` to the thread (waiting while it is ``backlog`` rows behind),
        redacted here: the thread holds Python's lock as little as it can."""
        batch = without_secrets(batch)
        with self._cond:
            while self._writing >= self.backlog and self._writes():
                self._cond.wait(1.0)
            self._handed.append(batch)
            self._writing += len(batch)
            self._cond.notify_all()
            self._raise_failure()

    def drain(self) -> None:
        """Wait until every result handed over is committed (or failed); raise the store's
        failure."""
        with self._cond:
            while self._writing and self._thread.is_alive():
                self._cond.wait(1.0)
            self._raise_failure()

    def _writes(self) -> bool:
        """Whether the thread is writing on: alive, and the store has not failed."""
        return self._thread_failure is None and self._thread.is_alive()

    def _raise_failure(self) -> None:
        """The thread's failure, raised once (the run stops on it, as on a failed commit in
        the loop); what was handed over after it is still written."""
        failure = self._thread_failure
        if failure is not None:
            self._thread_failure = None
            raise failure

    def close(self) -> None:
        """Commit what was handed over, end the thread and close its connection."""
        try:
            self.flush()
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()
            self._thread.join()

    def _run(
        self,
        connect: Callable[[], sqlite3.Connection],
        opened: list[sqlite3.Connection | BaseException],
    ) -> None:
        """The thread: open its connection (in it: a connection stays in its thread), then
        commit what is handed over until :meth:`close`."""
        try:
            db: sqlite3.Connection | BaseException = connect()
        except BaseException as exc:  # raised to the caller
            db = exc
        with self._cond:
            opened.append(db)
            self._cond.notify_all()
        if isinstance(db, BaseException):
            return
        try:
            self._commit_handed(db)
        finally:
            db.close()

    def _commit_handed(self, db: sqlite3.Connection) -> None:
        while True:
            with self._cond:
                while not self._handed and not self._done:
                    self._cond.wait()
                if not self._handed:
                    return
                batch = self._handed.popleft()
                # a thread behind the loop commits the groups waiting together, up to
                # max_rows: no more at once than one group commit in the loop would
                while self._handed and len(batch) + len(self._handed[0]) <= self.max_rows:
                    batch += self._handed.popleft()
            failure: BaseException | None = None
            try:
                write(db, batch, redacted=True)
            except BaseException as exc:  # the loop raises it
                failure = exc
            with self._cond:
                if failure is not None and self._thread_failure is None:
                    self._thread_failure = failure
                self._writing -= len(batch)
                self._cond.notify_all()
