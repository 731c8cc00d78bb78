"""The embedded experiment store: one SQLite file, one row per example x target x repetition.

Rows are committed as each result finishes (WAL journal), so a crash or Ctrl-C never loses
what was already computed.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval_cli.records import Example, Result, Score, Trace

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
CREATE TABLE IF NOT EXISTS scores (
    result_id INTEGER NOT NULL REFERENCES results(id),
    key TEXT NOT NULL,
    score REAL,
    is_bool INTEGER NOT NULL DEFAULT 0,
    comment TEXT,
    PRIMARY KEY (result_id, key)
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
]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def dumps(value: Any) -> str:
    """JSON for the store: anything not JSON-native is converted, never an exception."""
    return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))


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
        """
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if replace:
                self._delete_result(experiment_id, result.example_id, result.repetition)
            trace_json = dumps(result.trace.to_dict())
            outputs_json = None if result.outputs is None else dumps(result.outputs)
            cursor = db.execute(
                "INSERT INTO results (experiment_id, example_id, repetition, inputs_json,"
                " reference_json, outputs_json, trace_json, error, latency_s, finished_at,"
                " attempts, cached) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    experiment_id,
                    result.example_id,
                    result.repetition,
                    dumps(example.inputs),
                    dumps(example.outputs),
                    outputs_json,
                    trace_json,
                    result.error,
                    result.latency_s,
                    now(),
                    result.attempts,
                    result.cached,
                ),
            )
            db.executemany(
                "INSERT OR REPLACE INTO scores (result_id, key, score, is_bool, comment)"
                " VALUES (?,?,?,?,?)",
                [
                    (cursor.lastrowid, s.key, s.score, isinstance(s.score, bool), s.comment)
                    for s in result.scores
                ],
            )
            if cache_key is not None and result.error is None and outputs_json is not None:
                db.execute(
                    "INSERT OR REPLACE INTO cache (key, target_path, outputs_json, trace_json,"
                    " latency_s, created_at) VALUES (?,?,?,?,?,?)",
                    (cache_key, target_path, outputs_json, trace_json, result.latency_s, now()),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def results(self, experiment_id: str) -> Iterator[StoredResult]:
        """Results of an experiment in insertion order, with their inputs and references."""
        scores: dict[int, list[Score]] = {}
        for result_id, key, score, is_bool, comment in self.db.execute(
            "SELECT s.result_id, s.key, s.score, s.is_bool, s.comment FROM scores s"
            " JOIN results r ON r.id = s.result_id WHERE r.experiment_id = ?",
            (experiment_id,),
        ):
            value = bool(score) if is_bool and score is not None else score
            scores.setdefault(result_id, []).append(Score(key, value, comment))
        rows = self.db.execute(
            "SELECT id, example_id, repetition, inputs_json, reference_json, outputs_json,"
            " trace_json, error, latency_s, attempts, cached FROM results"
            " WHERE experiment_id = ? ORDER BY id",
            (experiment_id,),
        )
        for row in rows:
            rid, example_id, rep, inputs, reference, outputs, trace, error, latency = row[:9]
            yield StoredResult(
                inputs=json.loads(inputs),
                reference_outputs=json.loads(reference),
                result=Result(
                    example_id=example_id,
                    repetition=rep,
                    outputs=None if outputs is None else json.loads(outputs),
                    trace=Trace.from_dict(json.loads(trace) if trace else None),
                    scores=scores.get(rid, []),
                    error=error,
                    latency_s=latency or 0.0,
                    attempts=row[9],
                    cached=bool(row[10]),
                ),
            )

    def result_count(self, experiment_id: str) -> int:
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM results WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()
        return count

    def _delete_result(self, experiment_id: str, example_id: str, repetition: int) -> None:
        where = "experiment_id = ? AND example_id = ? AND repetition = ?"
        params = (experiment_id, example_id, repetition)
        self.db.execute(
            f"DELETE FROM scores WHERE result_id IN (SELECT id FROM results WHERE {where})", params
        )
        self.db.execute(f"DELETE FROM results WHERE {where}", params)

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
