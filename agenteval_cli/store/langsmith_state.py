"""What agenteval remembers about LangSmith, in tables of its own inside the store's file
(created by :mod:`agenteval_cli.store.migrations`, apart from the experiment tables).

Every key includes the endpoint, so two LangSmith instances never share ids. Nothing
secret is stored: the endpoint is a URL, the key stays in the environment.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from agenteval_cli.core.redact import redact_json
from agenteval_cli.store.db import Store
from agenteval_cli.store.results import dumps, now
from agenteval_cli.store.tx import has_table, write_transaction


def store_db(store: Store) -> sqlite3.Connection:
    """The connection of an open store (a store's ``db`` is ``None`` only once closed)."""
    assert store.db is not None, f"the store {store.path} is closed"
    return store.db


class LangSmithState:
    """Read and write the LangSmith tables through the store's connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    @classmethod
    def of(cls, store: Store) -> LangSmithState:
        """The LangSmith tables of an open store, so callers outside the store never hold
        its connection."""
        return cls(store_db(store))

    # example ids --------------------------------------------------------------------------

    def example_ids(self, endpoint: str, dataset_name: str) -> dict[str, str]:
        """Stable example id -> LangSmith example id, for one dataset."""
        rows = self.db.execute(
            "SELECT example_id, langsmith_id FROM langsmith_examples"
            " WHERE endpoint = ? AND dataset_name = ?",
            (endpoint, dataset_name),
        )
        return dict(rows.fetchall())

    def set_example_ids(
        self,
        endpoint: str,
        dataset_name: str,
        dataset_id: str,
        ids: dict[str, str],
        *,
        replace: bool,
    ) -> None:
        """Record ids; ``replace`` first forgets every id of the dataset (after a full sync)."""
        with write_transaction(self.db):
            if replace:
                self.db.execute(
                    "DELETE FROM langsmith_examples WHERE endpoint = ? AND dataset_name = ?",
                    (endpoint, dataset_name),
                )
            self.db.executemany(
                "INSERT OR REPLACE INTO langsmith_examples VALUES (?,?,?,?,?)",
                [(endpoint, dataset_name, k, v, dataset_id) for k, v in ids.items()],
            )

    def record_push(
        self,
        endpoint: str,
        dataset_name: str,
        dataset_id: str,
        file_hash: str,
        tag: str | None,
        counts: tuple[int, int, int, int],
    ) -> None:
        with write_transaction(self.db):
            self.db.execute(
                "INSERT INTO langsmith_pushes VALUES (?,?,?,?,?,?,?,?,?,?)",
                (endpoint, dataset_name, dataset_id, file_hash, tag, *counts, now()),
            )

    # dataset snapshots ------------------------------------------------------------------

    def save_snapshot(
        self,
        endpoint: str,
        name: str,
        version: str,
        splits: str,
        dataset_id: str,
        examples: list[dict[str, Any]],
    ) -> None:
        with write_transaction(self.db):
            self.db.execute(
                "INSERT OR REPLACE INTO langsmith_snapshots VALUES (?,?,?,?,?,?,?)",
                (endpoint, name, version, splits, dataset_id, dumps(examples), now()),
            )

    def snapshot(
        self, name: str, version: str, splits: str, endpoint: str | None = None
    ) -> tuple[str, str, list[dict[str, Any]], str] | None:
        """(endpoint, dataset id, examples, fetched at) of the newest cached copy, or None."""
        query = (
            "SELECT endpoint, dataset_id, examples_json, fetched_at FROM langsmith_snapshots"
            " WHERE dataset_name = ? AND version = ? AND splits = ?"
        )
        params: tuple[Any, ...] = (name, version, splits)
        if endpoint is not None:
            query += " AND endpoint = ?"
            params += (endpoint,)
        row = self.db.execute(query + " ORDER BY fetched_at DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        return row[0], row[1], json.loads(row[2]), row[3]

    # run trees --------------------------------------------------------------------------

    def save_tree(
        self, experiment_id: str, example_id: str, repetition: int, runs: list[dict[str, Any]]
    ) -> None:
        with write_transaction(self.db):
            self.db.execute(
                "INSERT OR REPLACE INTO langsmith_run_trees VALUES (?,?,?,?)",
                (experiment_id, example_id, repetition, redact_json(dumps(runs))),
            )

    def trees(self, experiment_id: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
        rows = self.db.execute(
            "SELECT example_id, repetition, runs_json FROM langsmith_run_trees"
            " WHERE experiment_id = ?",
            (experiment_id,),
        )
        return {(e, r): json.loads(runs) for e, r, runs in rows.fetchall()}

    # uploads ----------------------------------------------------------------------------

    def set_upload(self, experiment_id: str, endpoint: str, status: str, **fields: Any) -> None:
        current = self.upload(experiment_id) or {}
        row = {
            "project_id": None,
            "project_name": None,
            "dataset_id": None,
            "url": None,
            "error": None,
            **{k: current.get(k) for k in ("project_id", "project_name", "dataset_id", "url")},
            **fields,
        }
        with write_transaction(self.db):
            self.db.execute(
                "INSERT OR REPLACE INTO langsmith_uploads VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    experiment_id,
                    endpoint,
                    row["project_id"],
                    row["project_name"],
                    row["dataset_id"],
                    row["url"],
                    status,
                    row["error"],
                    now(),
                ),
            )

    def upload(self, experiment_id: str) -> dict[str, Any] | None:
        return recorded_upload(self.db, experiment_id)

    def sent(self, experiment_id: str) -> set[tuple[str, int]]:
        return sent_results(self.db, experiment_id)

    def mark_sent(self, experiment_id: str, keys: list[tuple[str, int]]) -> None:
        with write_transaction(self.db):
            self.db.executemany(
                "INSERT OR IGNORE INTO langsmith_sent VALUES (?,?,?)",
                [(experiment_id, e, r) for e, r in keys],
            )


def recorded_upload(db: sqlite3.Connection, experiment_id: str) -> dict[str, Any] | None:
    """The upload (or import) row of an experiment, read without creating the tables."""
    if not has_table(db, "langsmith_uploads"):
        return None
    cursor = db.execute("SELECT * FROM langsmith_uploads WHERE experiment_id = ?", (experiment_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([c[0] for c in cursor.description], row, strict=True))


def sent_results(db: sqlite3.Connection, experiment_id: str) -> set[tuple[str, int]]:
    """``(example_id, repetition)`` of each result of the experiment sent to LangSmith, read
    without creating the tables (none in a store that never uploaded)."""
    if not has_table(db, "langsmith_sent"):
        return set()
    rows = db.execute(
        "SELECT example_id, repetition FROM langsmith_sent WHERE experiment_id = ?",
        (experiment_id,),
    )
    return {(e, r) for e, r in rows.fetchall()}
