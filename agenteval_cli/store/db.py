"""The embedded experiment store: one SQLite file, one row per example x target x repetition.

A run's results are committed as they finish, those that finish together in one
transaction (WAL journal; :mod:`agenteval_cli.store.results`), so a crash or Ctrl-C never
loses what was already committed. Its schema is versioned by named migrations
(:mod:`agenteval_cli.store.migrations`); a run holds a lock on its experiments while it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.children import proc_stat
from agenteval_cli.core.records import Example, Result, Turn
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.store import DEFAULT_STORE, migrations
from agenteval_cli.store.checkpoints import Checkpointer
from agenteval_cli.store.results import (
    FigureRow,
    ResultWriter,
    StoredResult,
    dumps,
    encode,
    figure_rows,
    iter_results,
    now,
    status_columns,
    stored_blames,
    turns_from_json,
    write,
)
from agenteval_cli.store.tx import (
    STORAGE_FAILURE_EXIT,
    StoreError,
    has_table,
    store_error,
    write_transaction,
)

if TYPE_CHECKING:
    pass


@dataclass
class ExperimentRecord:
    id: str
    name: str
    prefix: str
    target: str
    target_path: str
    spec_path: str | None
    spec: dict[str, Any]
    spec_hash: str | None
    dataset_path: str | None
    dataset_name: str | None
    dataset_hash: str | None
    git_commit: str | None
    repetitions: int
    example_count: int | None
    status: str
    started_at: str
    ended_at: str | None
    run_id: str | None = None
    shard_index: int | None = None  # the shard i/N of a run with --shard
    shard_count: int | None = None
    dataset_examples: int | None = None  # a shard's whole dataset's examples
    # what the target's answers depended on when it started (execution.fingerprint), JSON
    target_fingerprint: str | None = None
    # how its metric keys read, as its run declared them; None for an experiment stored
    # before catalogs were kept (its spec says)
    catalog: Catalog | None = None


@dataclass
class CacheEntry:
    """A cached call as the cache table holds it: the trace as its JSON, a conversation's
    turns (None for a single-turn call) without their scores."""

    outputs: dict[str, Any]
    trace: dict[str, Any] | None
    latency_s: float
    turns: list[Turn] | None = None
    fingerprint: str | None = None  # what the answer depended on, JSON (None: not kept)


class Store:
    """A thin library over the SQLite file; the CLI and the runner both go through it.

    Opening it migrates an older store (:mod:`agenteval_cli.store.migrations`) and refuses one from
    a newer agenteval; ``readonly`` opens the file read-only and never alters it. A failure
    of the file (not a database, damaged, read-only, full...) is a :class:`StoreError`
    naming it, raised on opening or by the ``with`` block's end."""

    def __init__(self, path: str | Path = DEFAULT_STORE, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._token = uuid.uuid4().hex  # tells this Store's run locks from any other's
        self._locks: set[str] = set()
        self._checkpoints: Checkpointer | None = None  # a run writer's copies of the log
        if self.path.exists() and not self.path.is_file():  # a FIFO would block the open
            raise StoreError(
                f"{self.path} is not an agenteval store: it is not a regular file (a folder, "
                "device or pipe)",
                hint="pass --store with the path of a file",
            )
        db: sqlite3.Connection | None = None
        try:
            db = _connect(self.path, readonly)
            self._prepare(db)
        except sqlite3.Error as exc:
            _close_quietly(db)
            raise store_error(exc, self.path) from exc
        except BaseException:
            _close_quietly(db)
            raise
        self.db: sqlite3.Connection = db

    def _prepare(self, db: sqlite3.Connection) -> None:
        migrations.refuse_newer(db, self.path)
        if self.readonly:
            if not migrations.readable(db):
                raise self._unreadable(db)
            db.execute("PRAGMA query_only = ON")
        else:
            foreign = migrations.foreign_tables(db)
            if foreign:  # another program's database: add nothing to it
                raise StoreError(
                    f"{self.path} is not an agenteval store: it is another SQLite database "
                    f"(tables {', '.join(foreign)})",
                    hint="pass --store with another path",
                )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            migrations.migrate(db, self.path)
        migrations.refuse_missing_columns(db, self.path, writing=not self.readonly)
        db.execute("PRAGMA foreign_keys=ON")

    def _unreadable(self, db: sqlite3.Connection) -> StoreError:
        if not has_table(db, "experiments"):
            return StoreError(
                f"{self.path} is not an agenteval store: it has no experiments table",
                hint="pass --store with the file 'agenteval run' wrote",
            )
        return StoreError(
            f"the store {self.path} has schema version {migrations.version(db)} and needs "
            f"migrating to version {migrations.SCHEMA_VERSION}; this command only reads "
            "stores, and left it as it is",
            hint=f"migrate it with 'python -m agenteval_cli.store.migrations {self.path}' or any "
            "command that writes to it, such as 'agenteval run'",
        )

    def close(self) -> None:
        """Release this Store's run locks and close the file (its last connection: what is
        left of the log is copied into the file as it closes)."""
        if self._checkpoints is not None:
            self._checkpoints.close()
        if self._locks:
            with contextlib.suppress(sqlite3.Error):  # a dead holder's lock is taken over
                self.db.execute("DELETE FROM run_locks WHERE token = ?", (self._token,))
            self._locks.clear()
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        if isinstance(exc, sqlite3.Error):  # the file failed: one line naming it
            raise store_error(exc, self.path) from exc
        if isinstance(exc, json.JSONDecodeError) and _raised_reading(exc):
            raise StoreError(
                f"the store {self.path} is damaged: a value it holds is not valid JSON ({exc})",
                hint="another program changed it; move it away and start a new store, or pass "
                "--store with another file",
            ) from exc

    # run locks ---------------------------------------------------------------------------

    def lock_run(self, run_id: str, label: str) -> None:
        """Hold run ``run_id`` (``label`` names it) until this Store closes, so that no
        other process runs the same examples at the same time.

        Raises a StoreError naming the holder when another live process holds it; the lock
        of a holder that died (its process is gone, or its pid now another process's) is
        taken over."""
        if run_id in self._locks:
            return
        host, pid, started = _holder()
        with write_transaction(self.db):
            row = self.db.execute(
                "SELECT host, pid, process_start, token, locked_at FROM run_locks WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is not None and row[3] != self._token and _alive(row[0], row[1], row[2]):
                raise self._locked(run_id, label, host=row[0], pid=row[1], since=row[4])
            self.db.execute(
                "INSERT OR REPLACE INTO run_locks (run_id, host, pid, process_start, token,"
                " locked_at) VALUES (?,?,?,?,?,?)",
                (run_id, host, pid, started, self._token, now()),
            )
        self._locks.add(run_id)

    def _locked(self, run_id: str, label: str, *, host: str, pid: int, since: str) -> StoreError:
        hint = "wait for it to finish; nothing was called"
        if host != _HOST:
            hint += (
                f"; if it is no longer running on {host}, remove its lock: sqlite3 "
                f"{self.path} \"DELETE FROM run_locks WHERE run_id = '{run_id}'\""
            )
        return StoreError(
            f"{label}: already being run by process {pid} on {host} since {since} (store "
            f"{self.path}); a second run at the same time would call the same examples again",
            hint=hint,
        )

    # experiments -------------------------------------------------------------------------

    def create_experiment(
        self,
        *,
        prefix: str,
        target: str,
        target_path: str,
        spec: dict[str, Any],
        spec_path: str | None = None,
        spec_hash: str | None = None,
        dataset_path: str | None = None,
        dataset_name: str | None = None,
        dataset_hash: str | None = None,
        git_commit: str | None = None,
        repetitions: int = 1,
        example_count: int | None = None,
        run_id: str | None = None,
        shard: tuple[int, int] | None = None,
        dataset_examples: int | None = None,
        target_fingerprint: str | None = None,
        catalog: Catalog | None = None,
    ) -> ExperimentRecord:
        """Start an experiment named ``<prefix>-<target>-<short id>``; ``shard`` is the
        ``(i, N)`` of a sharded run, ``dataset_examples`` then its whole dataset's count;
        ``catalog`` how its metrics read."""
        experiment_id = uuid.uuid4().hex
        name = f"{prefix}-{target}-{experiment_id[:8]}"
        if run_id is not None:  # held while this run lasts: a --resume of it waits its turn
            self.lock_run(run_id, name)
        self.db.execute(
            "INSERT INTO experiments (id, name, prefix, target, target_path, spec_path, spec_json,"
            " spec_hash, dataset_path, dataset_name, dataset_hash, git_commit, repetitions,"
            " example_count, status, started_at, run_id, shard_index, shard_count,"
            " dataset_examples, target_fingerprint, metrics_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?,?,?,?,?)",
            (
                experiment_id,
                name,
                prefix,
                target,
                target_path,
                spec_path,
                dumps(spec),
                spec_hash,
                dataset_path,
                dataset_name,
                dataset_hash,
                git_commit,
                repetitions,
                example_count,
                now(),
                run_id,
                shard[0] if shard else None,
                shard[1] if shard else None,
                dataset_examples,
                target_fingerprint,
                None if catalog is None else dumps(catalog.to_json()),
            ),
        )
        return self.experiment(experiment_id)

    def set_catalog(self, experiment_id: str, catalog: Catalog) -> None:
        """Replace how an experiment's metrics read (a rescore with other evaluators)."""
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE experiments SET metrics_json = ? WHERE id = ?",
                (dumps(catalog.to_json()), experiment_id),
            )

    def finish_experiment(self, experiment_id: str, status: str = "finished") -> None:
        self.db.execute(
            "UPDATE experiments SET status = ?, ended_at = ? WHERE id = ?",
            (status, now(), experiment_id),
        )

    def rename_experiment(self, experiment_id: str, name: str, *, started_at: str) -> None:
        """Give an experiment a name and start of its own in place of the
        ``<prefix>-<target>-<short id>`` and the time it was created (an imported
        experiment keeps LangSmith's)."""
        self.db.execute(
            "UPDATE experiments SET name = ?, started_at = ? WHERE id = ?",
            (name, started_at, experiment_id),
        )

    def experiment(self, id_or_name: str) -> ExperimentRecord:
        """An experiment by id, name or unique name prefix; KeyError when there is none."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE id = ? OR name = ?", (id_or_name, id_or_name)
        ).fetchone()
        if row is None:
            rows = self.db.execute(
                "SELECT * FROM experiments WHERE name LIKE ? ESCAPE '\\'",
                (_like_prefix(id_or_name),),
            ).fetchall()
            if len(rows) != 1:
                raise KeyError(id_or_name)
            row = rows[0]
        return self._experiment(row)

    def experiments(self, *, target: str | None = None) -> list[ExperimentRecord]:
        """All experiments, newest first, optionally of one target."""
        query = "SELECT * FROM experiments"
        params: tuple[Any, ...] = ()
        if target is not None:
            query += " WHERE target = ?"
            params = (target,)
        rows = self.db.execute(query + " ORDER BY started_at DESC, rowid DESC", params)
        return [self._experiment(row) for row in rows.fetchall()]

    def latest_experiment(self, target: str) -> ExperimentRecord | None:
        found = self.experiments(target=target)
        return found[0] if found else None

    def _experiment(self, row: tuple[Any, ...]) -> ExperimentRecord:
        columns = [c[1] for c in self.db.execute("PRAGMA table_info(experiments)")]
        data = dict(zip(columns, row, strict=True))
        data["spec"] = json.loads(data.pop("spec_json"))
        stored = data.pop("metrics_json", None)
        data["catalog"] = None if stored is None else self._catalog(data.get("name"), stored)
        return ExperimentRecord(**{k: v for k, v in data.items() if k in RECORD_FIELDS})

    def _catalog(self, experiment: Any, stored: str) -> Catalog:
        """An experiment's stored metric declarations, or one line saying they cannot be
        read (a file edited by hand, or written by a newer version)."""
        try:
            return Catalog.from_json(json.loads(stored))
        except (ValueError, TypeError, AttributeError) as exc:
            raise StoreError(
                f"the store {self.path}: experiment {experiment!r} keeps metric declarations "
                f"this version cannot read ({exc})",
                hint="run the experiment again into a fresh store, or upgrade agenteval",
            ) from None

    # results ----------------------------------------------------------------------------

    def add_result(
        self,
        experiment_id: str,
        example: Example,
        result: Result,
        *,
        replace: bool = False,
        cache_key: str | None = None,
        target_path: str = "",
    ) -> None:
        """Persist one result and its scores in a single transaction.

        ``replace`` swaps out an earlier row of the same example and repetition (a retried
        error) in the same transaction, so the pair is never missing nor doubled.
        ``cache_key`` also stores a successful call's outputs in the response cache.
        A run writes through :meth:`writer` instead, which groups the commits.
        """
        encoded = encode(
            experiment_id,
            example,
            result,
            replace=replace,
            cache_key=cache_key,
            target_path=target_path,
        )
        write(self.db, [encoded])

    def writer(self, *, run: bool = False) -> ResultWriter:
        """A group-committing writer (see :class:`ResultWriter`); ``run``: a run's, whose
        commits leave copying the log into the file to a thread of the store's until it is
        closed (:mod:`agenteval_cli.store.checkpoints`)."""
        if not run:
            return ResultWriter(self.db)
        if self._checkpoints is None:
            self._checkpoints = Checkpointer(self.path)
        return ResultWriter(self.db, checkpoints=self._checkpoints)

    def results(
        self, experiment_id: str, *, reference_holding: str | None = None
    ) -> Iterator[StoredResult]:
        """Results of an experiment in insertion order, with their inputs and references;
        ``reference_holding``: only those whose reference JSON text holds that string."""
        return iter_results(self.db, experiment_id, reference_holding=reference_holding)

    def figure_rows(self, experiment_id: str) -> Iterator[FigureRow]:
        """Each result of an experiment as its figures read it (``results.figures``), from
        only the columns they need."""
        return figure_rows(self.db, experiment_id)

    def blames(self, experiment_id: str) -> Iterator[dict[str, Any]]:
        """The blame of each result of an experiment that failed a check, in insertion
        order (none from a store that predates it)."""
        return stored_blames(self.db, experiment_id)

    def result_count(self, experiment_id: str) -> int:
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM results WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()
        return count

    # resume -----------------------------------------------------------------------------

    def status_counts(self, experiment_id: str) -> dict[str, int]:
        """The experiment's results by status (``ok``, ``error``, ``interrupted``)."""
        rows = self.db.execute(
            f"SELECT {status_columns(self.db, 'status')}, COUNT(*) FROM results"
            " WHERE experiment_id = ? GROUP BY 1",
            (experiment_id,),
        )
        return dict(rows.fetchall())

    def result_keys(self, experiment_id: str) -> dict[tuple[str, int], bool]:
        """``(example_id, repetition) -> ended in error`` for every stored result."""
        rows = self.db.execute(
            "SELECT example_id, repetition, error IS NOT NULL FROM results WHERE experiment_id = ?",
            (experiment_id,),
        )
        return {(example_id, rep): bool(errored) for example_id, rep, errored in rows}

    def run_experiments(self, run_id: str) -> list[ExperimentRecord]:
        """The experiments one ``agenteval run`` started together, in creation order."""
        rows = self.db.execute(
            "SELECT * FROM experiments WHERE run_id = ? ORDER BY rowid", (run_id,)
        ).fetchall()
        return [self._experiment(row) for row in rows]

    def reopen_experiment(self, experiment_id: str) -> None:
        """Mark a resumed experiment running again until it finishes."""
        self.db.execute(
            "UPDATE experiments SET status = 'running', ended_at = NULL WHERE id = ?",
            (experiment_id,),
        )

    # cache ------------------------------------------------------------------------------

    def cache_get(self, key: str) -> CacheEntry | None:
        """What is cached under ``key``, or None."""
        row = self.db.execute(
            "SELECT outputs_json, trace_json, latency_s, turns_json, fingerprint_json FROM cache"
            " WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        outputs, trace, latency, turns, fingerprint = row
        return CacheEntry(
            outputs=json.loads(outputs),
            trace=json.loads(trace) if trace else None,
            latency_s=latency or 0.0,
            turns=turns_from_json(turns),
            fingerprint=fingerprint,
        )

    def cache_clear(self, target_path: str | None = None) -> int:
        """Delete cached calls (of one target import path, or all); returns how many."""
        if target_path is None:
            cursor = self.db.execute("DELETE FROM cache")
        else:
            cursor = self.db.execute("DELETE FROM cache WHERE target_path = ?", (target_path,))
        return cursor.rowcount

    def cache_stats(self) -> list[tuple[str, int]]:
        """``(target import path, entries)`` pairs, most entries first."""
        rows = self.db.execute(
            "SELECT target_path, COUNT(*) FROM cache GROUP BY target_path ORDER BY 2 DESC, 1"
        )
        return [(path, count) for path, count in rows]

    def cache_fingerprints(self) -> list[tuple[str, str | None, int]]:
        """``(target import path, fingerprint JSON, entries)`` per fingerprint an entry was
        cached with (None: cached before fingerprints were kept)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(cache)")}
        fingerprint = "fingerprint_json" if "fingerprint_json" in columns else "NULL"
        rows = self.db.execute(
            f"SELECT target_path, {fingerprint}, COUNT(*) FROM cache GROUP BY 1, 2 ORDER BY 1, 2"
        )
        return [(path, found, count) for path, found, count in rows]


def _close_quietly(db: sqlite3.Connection | None) -> None:
    if db is not None:
        with contextlib.suppress(sqlite3.Error):
            db.close()


RECORD_FIELDS = frozenset(f.name for f in fields(ExperimentRecord))


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def _raised_reading(exc: BaseException) -> bool:
    """Whether ``exc`` came from the store's own reading code (not from a file of the
    user's read while the store was open)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") in (__name__, "agenteval_cli.store.results"):
            return True
        tb = tb.tb_next
    return False


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """The store's autocommit connection; ``readonly`` opens the file read-only (an SQLite
    ``mode=ro`` URI), so nothing done through it can alter the store."""
    if readonly:
        uri = path.absolute().as_uri() + "?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA user_version").fetchone()  # the file is opened here
        except sqlite3.OperationalError as exc:
            # A WAL store in a folder where its -shm file cannot be made (a read-only
            # medium, an archive): with no -wal file, no one can be writing it.
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            unwritable = code == sqlite3.SQLITE_CANTOPEN and path.is_file()
            if not unwritable or Path(f"{path}-wal").exists():
                raise
            db.close()
            uri += "&immutable=1"
            db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
        return db
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the folder of the store {path}: {exc.strerror or exc}",
            hint="pass --store with a path in a writable folder",
            exit_code=STORAGE_FAILURE_EXIT,
        ) from None
    return sqlite3.connect(path, timeout=30, isolation_level=None)


# --- run locks: who holds one, and whether it still lives ---------------------------------


def _host_name() -> str:
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


_HOST = _host_name()


def _holder() -> tuple[str, int, str | None]:
    """``(host, pid, process start)`` of this process, as a run lock records it."""
    return _HOST, os.getpid(), _process_start(os.getpid())


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (boot id and clock ticks since boot, on Linux), which
    tells a live lock holder from a later process given the same pid; None elsewhere."""
    found = proc_stat(pid)
    stat = found[1] if found is not None else []
    if len(stat) < 20:
        return None
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{boot}:{stat[19]}"


def _alive(host: str, pid: int, started: str | None) -> bool:
    """Whether the process that took a run lock still runs (a holder on another host, or
    on a system where this cannot be told, is taken to)."""
    if type(pid) is not int or pid <= 0:  # not a process id: no holder to wait for
        return False
    if host != _HOST or os.name == "nt":  # os.kill(pid, 0) would signal it on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    found = proc_stat(pid)
    if found is not None and found[1][:1] in (["Z"], ["X"]):  # exited, not yet reaped
        return False
    return started is None or _process_start(pid) in (None, started)
