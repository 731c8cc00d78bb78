"""The store's schema as an ordered list of named migrations.

Each migration moves a store one schema version on. ``PRAGMA user_version`` holds the
store's version (how many migrations it has had) and the ``migrations`` table names each
with the time it ran. A command that writes migrates an older store when it opens it, in one
transaction; a store from a newer agenteval (a version above :data:`SCHEMA_VERSION`) is
refused, as it may have columns this build does not know, or lack some it reads.

Stores written before versions were kept have version 0 whatever their shape, so every
migration is written to find its change already made and leave it. A read-only command reads
a store that has not had some migrations when each one's ``readable`` check says it can: its
change is there already, or nothing that reads needs it.

A migration, once released, is never edited: a new change is a new function at the end.
``python -m agenteval_cli.store.migrations STORE`` migrates a store and prints what it applied.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass

from agenteval_cli.store.tx import StoreError, has_table, store_error, write_transaction

Check = Callable[[sqlite3.Connection], bool]


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[sqlite3.Connection], None]
    # whether a store that has not had it can be read as it is (None: never)
    readable: Check | None


MIGRATIONS: list[Migration] = []


def migration(readable: Check | None = None) -> Callable:
    """Register the decorated function as the next migration, named after it."""

    def register(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
        MIGRATIONS.append(Migration(fn.__name__, fn, readable))
        return fn

    return register


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _has_column(table: str, column: str) -> Check:
    return lambda db: column in _columns(db, table)


def _add_column(db: sqlite3.Connection, table: str, column: str, declaration: str) -> None:
    if column not in _columns(db, table):
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


# --- the migrations, oldest first ---------------------------------------------------------


@migration(readable=lambda db: all(has_table(db, t) for t in ("experiments", "results", "cache")))
def create_experiments_results_cache(db: sqlite3.Connection) -> None:
    """The first release's tables."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS experiments (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    target TEXT NOT NULL,
    target_path TEXT NOT NULL,
    spec_path TEXT,
    spec_json TEXT NOT NULL,
    spec_hash TEXT,
    dataset_path TEXT,
    dataset_name TEXT,
    dataset_hash TEXT,
    git_commit TEXT,
    repetitions INTEGER NOT NULL DEFAULT 1,
    example_count INTEGER,
    status TEXT NOT NULL DEFAULT 'running',
    started_at TEXT NOT NULL,
    ended_at TEXT
)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    experiment_id TEXT NOT NULL REFERENCES experiments(id),
    example_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    inputs_json TEXT NOT NULL,
    reference_json TEXT NOT NULL,
    outputs_json TEXT,
    trace_json TEXT,
    error TEXT,
    latency_s REAL,
    finished_at TEXT NOT NULL,
    UNIQUE (experiment_id, example_id, repetition)
)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY,
    target_path TEXT NOT NULL,
    outputs_json TEXT NOT NULL,
    trace_json TEXT,
    latency_s REAL,
    created_at TEXT NOT NULL
)"""
    )


@migration(readable=_has_column("experiments", "run_id"))
def add_experiments_run_id(db: sqlite3.Connection) -> None:
    """Experiments started together by one ``agenteval run``."""
    _add_column(db, "experiments", "run_id", "TEXT")


@migration(readable=_has_column("results", "attempts"))
def add_results_attempts(db: sqlite3.Connection) -> None:
    """Target calls a result took, retries included."""
    _add_column(db, "results", "attempts", "INTEGER NOT NULL DEFAULT 1")


@migration(readable=_has_column("results", "cached"))
def add_results_cached(db: sqlite3.Connection) -> None:
    """Whether a result's outputs came from the response cache."""
    _add_column(db, "results", "cached", "INTEGER NOT NULL DEFAULT 0")


@migration(readable=_has_column("results", "scores_json"))
def add_results_scores_json(db: sqlite3.Connection) -> None:
    """A result's scores, ``[[key, score, comment], ...]`` or NULL, written with its row."""
    _add_column(db, "results", "scores_json", "TEXT")


MOVE_SCORES = """
UPDATE results SET scores_json = (
    SELECT json_group_array(json_array(
        s.key,
        CASE WHEN s.is_bool AND s.score IS NOT NULL
             THEN json(CASE WHEN s.score THEN 'true' ELSE 'false' END) ELSE s.score END,
        s.comment))
    FROM scores s WHERE s.result_id = results.id)
WHERE id IN (SELECT result_id FROM scores)
"""


@migration(readable=lambda db: not has_table(db, "scores"))
def move_scores_into_results(db: sqlite3.Connection) -> None:
    """Stores made before ``results.scores_json`` kept scores in a table of their own."""
    if has_table(db, "scores"):
        db.execute(MOVE_SCORES)
        db.execute("DROP TABLE scores")


@migration(readable=lambda db: True)  # only runs take locks
def create_run_locks(db: sqlite3.Connection) -> None:
    """One row per run being executed, naming the process that holds it (see Store.lock_run)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS run_locks (
    run_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_start TEXT,
    token TEXT NOT NULL,
    locked_at TEXT NOT NULL
)"""
    )


# Read-only commands read a store without these tables as having no such rows.
@migration(readable=lambda db: True)
def create_summary_scores(db: sqlite3.Connection) -> None:
    """The scores of dataset-level evaluators, one row per experiment and key (see
    :mod:`agenteval_cli.evaluators.summaries`); earlier builds made it on first use."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS summary_scores (
    experiment_id TEXT NOT NULL,
    key TEXT NOT NULL,
    score REAL,
    is_bool INTEGER NOT NULL DEFAULT 0,
    comment TEXT,
    PRIMARY KEY (experiment_id, key)
)"""
    )


LANGSMITH_TABLES = (
    """CREATE TABLE IF NOT EXISTS langsmith_examples (
    endpoint TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    example_id TEXT NOT NULL,
    langsmith_id TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    PRIMARY KEY (endpoint, dataset_name, example_id)
)""",
    """CREATE TABLE IF NOT EXISTS langsmith_pushes (
    endpoint TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    tag TEXT,
    added INTEGER, updated INTEGER, unchanged INTEGER, deleted INTEGER,
    pushed_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS langsmith_snapshots (
    endpoint TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    version TEXT NOT NULL,
    splits TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    examples_json TEXT NOT NULL,
    fetched_at TEXT NOT NULL,
    PRIMARY KEY (endpoint, dataset_name, version, splits)
)""",
    """CREATE TABLE IF NOT EXISTS langsmith_run_trees (
    experiment_id TEXT NOT NULL,
    example_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    runs_json TEXT NOT NULL,
    PRIMARY KEY (experiment_id, example_id, repetition)
)""",
    """CREATE TABLE IF NOT EXISTS langsmith_uploads (
    experiment_id TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    project_id TEXT,
    project_name TEXT,
    dataset_id TEXT,
    url TEXT,
    status TEXT NOT NULL,
    error TEXT,
    updated_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS langsmith_sent (
    experiment_id TEXT NOT NULL,
    example_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, example_id, repetition)
)""",
)


@migration(readable=lambda db: True)
def create_langsmith_tables(db: sqlite3.Connection) -> None:
    """What agenteval remembers about LangSmith (see :mod:`agenteval_cli.store.langsmith_state`):
    example ids, pushes, dataset snapshots, run trees and uploads, keyed by endpoint;
    earlier builds made them on first use."""
    for statement in LANGSMITH_TABLES:
        db.execute(statement)


# A store without them holds no sharded run: read as such.
@migration(readable=lambda db: True)
def add_experiments_shard(db: sqlite3.Connection) -> None:
    """The shard ``i/N`` a run covered (``agenteval run --shard``) and the whole dataset's
    example count, which ``agenteval merge`` checks the shards against."""
    _add_column(db, "experiments", "shard_index", "INTEGER")
    _add_column(db, "experiments", "shard_count", "INTEGER")
    _add_column(db, "experiments", "dataset_examples", "INTEGER")


# A store without them holds no interrupted result: read as such (status from ``error``).
@migration(readable=lambda db: True)
def add_results_status(db: sqlite3.Connection) -> None:
    """A result's status, ``ok``, ``error`` or ``interrupted`` (the graph stopped at
    ``interrupt()``), and for an interrupted one what it waits for."""
    if "status" not in _columns(db, "results"):
        _add_column(db, "results", "status", "TEXT NOT NULL DEFAULT 'ok'")
        db.execute("UPDATE results SET status = 'error' WHERE error IS NOT NULL")
    _add_column(db, "results", "interrupt", "TEXT")


# A store without it holds entries cached before fingerprints were kept: read as such.
@migration(readable=lambda db: True)
def add_cache_fingerprint(db: sqlite3.Connection) -> None:
    """What a cached answer depended on (:mod:`agenteval_cli.execution.fingerprint`), so
    ``agenteval cache info`` can say why entries stopped matching."""
    _add_column(db, "cache", "fingerprint_json", "TEXT")


# A store without it holds experiments started before fingerprints were kept: read as such.
@migration(readable=lambda db: True)
def add_experiment_fingerprint(db: sqlite3.Connection) -> None:
    """What each experiment's target depended on when it started (its project files and
    declared variables), so a resumed run can say its answers mix two versions."""
    _add_column(db, "experiments", "target_fingerprint", "TEXT")


# A store without it holds experiments whose metrics are read from their stored spec.
@migration(readable=lambda db: True)
def add_experiment_metrics(db: sqlite3.Connection) -> None:
    """Each experiment's metric catalog (:mod:`agenteval_cli.metrics.catalog`): how its
    keys read, so reading it never depends on what else a process declared."""
    _add_column(db, "experiments", "metrics_json", "TEXT")


# A store without it holds no conversation: read as such (every result single-turn).
@migration(readable=lambda db: True)
def add_results_turns(db: sqlite3.Connection) -> None:
    """A conversation's turns (``[Turn.to_dict(), ...]``; NULL for a single-turn result):
    each turn's inputs, answer, trace and scores."""
    _add_column(db, "results", "turns_json", "TEXT")


# A store without it holds no cached conversation: read as such.
@migration(readable=lambda db: True)
def add_cache_turns(db: sqlite3.Connection) -> None:
    """A cached conversation's turns, served with its outputs and trace (NULL for a
    single-turn call)."""
    _add_column(db, "cache", "turns_json", "TEXT")


# A store without it holds no blame: its results read as blamed on nothing.
@migration(readable=lambda db: True)
def add_results_blame(db: sqlite3.Connection) -> None:
    """Where a failed request went wrong (``{agent, step, kind, why}``, JSON; NULL for one
    that did not fail, and for results stored before it was read)."""
    _add_column(db, "results", "blame_json", "TEXT")


SCHEMA_VERSION = len(MIGRATIONS)  # the version a store has after every migration

UPGRADE_HINT = (
    "upgrade agenteval with 'pip install -U agenteval', or pass --store with another file"
)


# --- applying them -------------------------------------------------------------------------


def version(db: sqlite3.Connection) -> int:
    """The store's schema version (0 for a new file, or one from before versions)."""
    (found,) = db.execute("PRAGMA user_version").fetchone()
    return found


def refuse_newer(db: sqlite3.Connection, path: object) -> None:
    """A StoreError when the store was written by a newer agenteval than this one (or its
    version is one agenteval never writes)."""
    found = version(db)
    if found < 0:
        raise StoreError(
            f"{path} is not an agenteval store: its schema version is {found}",
            hint="pass --store with the file 'agenteval run' wrote",
        )
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the store {path} has schema version {found}, newer than this agenteval knows "
            f"({SCHEMA_VERSION}): it was written by a newer agenteval",
            hint=UPGRADE_HINT,
        )


# The columns this build reads and writes, by table. A store of the current version without
# one of them was changed by another program, and is refused rather than half read.
COLUMNS: dict[str, tuple[str, ...]] = {
    "experiments": (
        "id",
        "name",
        "prefix",
        "target",
        "target_path",
        "spec_path",
        "spec_json",
        "spec_hash",
        "dataset_path",
        "dataset_name",
        "dataset_hash",
        "git_commit",
        "repetitions",
        "example_count",
        "status",
        "started_at",
        "ended_at",
        "run_id",
    ),
    "results": (
        "id",
        "experiment_id",
        "example_id",
        "repetition",
        "inputs_json",
        "reference_json",
        "outputs_json",
        "trace_json",
        "error",
        "latency_s",
        "finished_at",
        "attempts",
        "cached",
        "scores_json",
    ),
    "cache": ("key", "target_path", "outputs_json", "trace_json", "latency_s", "created_at"),
}
# Columns read when present: a store that has not had their migration holds no sharded
# run, and read-only commands read it as it is (a writing open adds them).
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "experiments": (
        "shard_index",
        "shard_count",
        "dataset_examples",
        "target_fingerprint",
        "metrics_json",
    ),
    "results": ("status", "interrupt", "turns_json", "blame_json"),
    "cache": ("fingerprint_json", "turns_json"),
}
LOCK_COLUMNS = ("run_id", "host", "pid", "process_start", "token", "locked_at")


def refuse_missing_columns(db: sqlite3.Connection, path: object, *, writing: bool) -> None:
    """A StoreError naming the first table or column this build needs that the store lacks
    (``writing``: the run locks' too)."""
    tables = dict(COLUMNS, run_locks=LOCK_COLUMNS) if writing else COLUMNS
    for table, needed in tables.items():
        present = _columns(db, table)
        missing = [c for c in needed if c not in present]
        if missing:
            what = f"table {table}" if not present else f"column {table}.{missing[0]}"
            raise StoreError(
                f"the store {path} has no {what}, which this agenteval reads (schema "
                f"version {version(db)}): another program or a newer agenteval changed it",
                hint=UPGRADE_HINT,
            )


def foreign_tables(db: sqlite3.Connection) -> list[str]:
    """The first tables of a database that has some but no experiments table: another
    program's, which an agenteval store never is."""
    if has_table(db, "experiments"):
        return []
    rows = db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY name LIMIT 4"
    ).fetchall()
    names = [name for (name,) in rows]
    return [*names[:3], "..."] if len(names) > 3 else names


def pending(db: sqlite3.Connection) -> list[Migration]:
    """The migrations the store has not had, in order."""
    return MIGRATIONS[version(db) :]


def readable(db: sqlite3.Connection) -> bool:
    """Whether this build can read the store as it is, without migrating it (say, a store
    from before versions were kept, written by a recent build)."""
    return all(m.readable is not None and m.readable(db) for m in pending(db))


def migrate(db: sqlite3.Connection, path: object = "the store") -> list[str]:
    """Apply the pending migrations in one transaction; the names of those applied.

    The version is read again once the write lock is held, so two processes opening an
    older store at once migrate it once."""
    from agenteval_cli.store.results import now

    if not pending(db):
        return []
    with write_transaction(db):
        refuse_newer(db, path)
        todo = pending(db)
        if todo:
            db.execute(
                "CREATE TABLE IF NOT EXISTS migrations"
                " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            for step in todo:
                step.apply(db)
                db.execute(
                    "INSERT OR REPLACE INTO migrations (name, applied_at) VALUES (?, ?)",
                    (step.name, now()),
                )
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
    return [step.name for step in todo]


def applied(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """``(name, applied_at)`` of every migration recorded in the store, in order."""
    if not has_table(db, "migrations"):
        return []
    return db.execute("SELECT name, applied_at FROM migrations ORDER BY rowid").fetchall()


def main(argv: list[str]) -> int:
    """Migrate the stores named on the command line; 2 when one cannot be."""
    from pathlib import Path

    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m agenteval_cli.store.migrations STORE...")
        return 0 if argv else 2
    for name in argv:
        path = Path(name)
        if not path.is_file():
            print(f"error: no store at {path}", file=sys.stderr)
            return 2
        try:
            try:
                db = sqlite3.connect(path, timeout=30, isolation_level=None)
                try:
                    refuse_newer(db, path)
                    done = migrate(db, path)
                finally:
                    db.close()
            except sqlite3.Error as exc:
                raise store_error(exc, path) from exc
        except StoreError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        what = ", ".join(done) if done else "nothing to do"
        print(f"{path}: schema version {SCHEMA_VERSION} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
