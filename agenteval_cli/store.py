"""The embedded experiment store: one SQLite file, one row per example x target x repetition.

A run's results are committed as they finish, those that finish together in one
transaction (WAL journal; :mod:`agenteval_cli.store_results`), so a crash or Ctrl-C never
loses what was already committed.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.records import Example, Result
from agenteval_cli.sqlite_tx import has_table, write_transaction
from agenteval_cli.store_results import (  # noqa: F401 (dumps, now, _default: re-exported)
    ResultWriter,
    _default,
    dumps,
    encode,
    iter_results,
    now,
    stored_summary,
    write,
)

if TYPE_CHECKING:
    from agenteval_cli.metrics import Summary

DEFAULT_PATH = Path(".agenteval") / "agenteval.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
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
);
CREATE TABLE IF NOT EXISTS results (
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
);
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY,
    target_path TEXT NOT NULL,
    outputs_json TEXT NOT NULL,
    trace_json TEXT,
    latency_s REAL,
    created_at TEXT NOT NULL
);
"""

# Columns added after the first release: (table, column, declaration). Stores made before
# them get them on open, so an old .agenteval/agenteval.db keeps working.
ADDED_COLUMNS: list[tuple[str, str, str]] = [
    ("experiments", "run_id", "TEXT"),  # experiments started together by one `agenteval run`
    ("results", "attempts", "INTEGER NOT NULL DEFAULT 1"),  # target calls, retries included
    ("results", "cached", "INTEGER NOT NULL DEFAULT 0"),  # outputs came from the cache
    # [[key, score, comment], ...] or NULL: a result's scores, written with its row
    ("results", "scores_json", "TEXT"),
]

# Stores made before results.scores_json kept scores in a table of their own: moved on open.
MOVE_SCORES = """
UPDATE results SET scores_json = (
    SELECT json_group_array(json_array(
        s.key,
        CASE WHEN s.is_bool AND s.score IS NOT NULL
             THEN json(CASE WHEN s.score THEN 'true' ELSE 'false' END) ELSE s.score END,
        s.comment))
    FROM scores s WHERE s.result_id = results.id)
WHERE id IN (SELECT result_id FROM scores);
"""


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


class Store:
    """A thin library over the SQLite file; the CLI and the runner both go through it."""

    def __init__(self, path: str | Path = DEFAULT_PATH) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        self._add_columns()
        self._move_scores()

    def _add_columns(self) -> None:
        for table, column, declaration in ADDED_COLUMNS:
            present = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            if column in present:
                continue
            try:
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def _move_scores(self) -> None:
        """Move an older store's ``scores`` table into ``results.scores_json``, once."""
        if not has_table(self.db, "scores"):
            return
        with write_transaction(self.db):
            if has_table(self.db, "scores"):  # not moved by another process meanwhile
                self.db.execute(MOVE_SCORES)
                self.db.execute("DROP TABLE scores")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
    ) -> ExperimentRecord:
        """Start an experiment named ``<prefix>-<target>-<short id>``."""
        experiment_id = uuid.uuid4().hex
        name = f"{prefix}-{target}-{experiment_id[:8]}"
        self.db.execute(
            "INSERT INTO experiments (id, name, prefix, target, target_path, spec_path, spec_json,"
            " spec_hash, dataset_path, dataset_name, dataset_hash, git_commit, repetitions,"
            " example_count, status, started_at, run_id)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?,?)",
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
            ),
        )
        return self.experiment(experiment_id)

    def finish_experiment(self, experiment_id: str, status: str = "finished") -> None:
        self.db.execute(
            "UPDATE experiments SET status = ?, ended_at = ? WHERE id = ?",
            (status, now(), experiment_id),
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
        return ExperimentRecord(**data)

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

    def writer(self) -> ResultWriter:
        """A group-committing writer for a run (see :class:`ResultWriter`)."""
        return ResultWriter(self.db)

    def results(self, experiment_id: str) -> Iterator[StoredResult]:
        """Results of an experiment in insertion order, with their inputs and references."""
        return iter_results(self.db, experiment_id)

    def summary(self, experiment_id: str, *, repetitions: int = 1) -> Summary:
        """The experiment's metrics summary, summed from the columns the metrics read."""
        return stored_summary(self.db, experiment_id, repetitions=repetitions)

    def result_count(self, experiment_id: str) -> int:
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM results WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()
        return count

    # resume -----------------------------------------------------------------------------

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

    def cache_get(self, key: str) -> tuple[dict[str, Any], dict[str, Any] | None, float] | None:
        """``(outputs, trace, latency_s)`` cached under ``key``, or None."""
        row = self.db.execute(
            "SELECT outputs_json, trace_json, latency_s FROM cache WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        outputs, trace, latency = row
        return json.loads(outputs), json.loads(trace) if trace else None, latency or 0.0

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


@dataclass
class StoredResult:
    inputs: dict[str, Any]
    reference_outputs: dict[str, Any]
    result: Result


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
