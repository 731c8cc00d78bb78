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
"""


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
    ) -> ExperimentRecord:
        """Start an experiment named ``<prefix>-<target>-<short id>``."""
        experiment_id = uuid.uuid4().hex
        name = f"{prefix}-{target}-{experiment_id[:8]}"
        self.db.execute(
            "INSERT INTO experiments (id, name, prefix, target, target_path, spec_path, spec_json,"
            " spec_hash, dataset_path, dataset_name, dataset_hash, git_commit, repetitions,"
            " example_count, status, started_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?)",
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

    def add_result(self, experiment_id: str, example: Example, result: Result) -> None:
        """Persist one result and its scores in a single transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            cursor = db.execute(
                "INSERT INTO results (experiment_id, example_id, repetition, inputs_json,"
                " reference_json, outputs_json, trace_json, error, latency_s, finished_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    experiment_id,
                    result.example_id,
                    result.repetition,
                    dumps(example.inputs),
                    dumps(example.outputs),
                    None if result.outputs is None else dumps(result.outputs),
                    dumps(result.trace.to_dict()),
                    result.error,
                    result.latency_s,
                    now(),
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
            " trace_json, error, latency_s FROM results WHERE experiment_id = ? ORDER BY id",
            (experiment_id,),
        )
        for rid, example_id, rep, inputs, reference, outputs, trace, error, latency in rows:
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
                ),
            )

    def result_count(self, experiment_id: str) -> int:
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM results WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()
        return count


@dataclass
class StoredResult:
    inputs: dict[str, Any]
    reference_outputs: dict[str, Any]
    result: Result


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
