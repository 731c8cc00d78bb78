"""Copying experiments and their results from one store into another, and removing
experiments whole: what
merging the stores of a sharded run (:mod:`agenteval_cli.execution.merge`) and combining a
test session's runs (:mod:`agenteval_cli.execution.combine`) do in SQLite."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval_cli.store.results import OLD_ROWS, RESULT_COLUMNS
from agenteval_cli.store.tx import has_table, write_transaction

if TYPE_CHECKING:
    from agenteval_cli.metrics.catalog import Catalog
    from agenteval_cli.store.db import ExperimentRecord, Store

# The tables whose rows belong to one experiment (by experiment_id), besides langsmith_sent.
OWN_TABLES = ("results", "summary_scores", "langsmith_run_trees", "langsmith_uploads")


class SharedExamples(Exception):
    """The results copied hold an example and repetition the experiment copied into
    already has (a row of ``results`` would be doubled)."""


def create_like(
    out: Store, source: ExperimentRecord, *, run_id: str, catalog: Catalog, **changes: Any
) -> ExperimentRecord:
    """A new experiment in ``out`` of ``source``'s spec, target and dataset (its whole
    dataset's example count), in run ``run_id``, with ``changes`` to those fields: the
    experiment a merge or a combination copies results into."""
    fields: dict[str, Any] = {
        "prefix": source.prefix,
        "target": source.target,
        "target_path": source.target_path,
        "spec": source.spec,
        "spec_path": source.spec_path,
        "spec_hash": source.spec_hash,
        "dataset_path": source.dataset_path,
        "dataset_name": source.dataset_name,
        "dataset_hash": source.dataset_hash,
        "git_commit": source.git_commit,
        "repetitions": source.repetitions,
        "example_count": source.dataset_examples,
        "target_fingerprint": source.target_fingerprint,
    }
    return out.create_experiment(**{**fields, **changes}, run_id=run_id, catalog=catalog)


def copy_results(
    out: Store, source: Path, experiments: Sequence[tuple[str, str]], *, replace: bool = False
) -> int:
    """Copy the results of each ``(experiment id in source, experiment id in out)`` pair from
    the store at ``source`` into ``out``, each in the order it stored them, in one
    transaction (a database is attached outside one), a conversation's turns with it. A
    source stored before results had a status (or turns) gets what its rows meant.
    :class:`SharedExamples` when a result is there already; nothing of this source is kept
    then. With ``replace``, a result of the same example and repetition already there is
    replaced instead (the copy is the later run of it); the count replaced is returned."""
    columns = RESULT_COLUMNS.split(", ", 1)[1]  # all but experiment_id
    db = out.db
    alias = "shard"
    with _attached(db, source, alias), _deferred(db):
        found = {row[1] for row in db.execute(f"PRAGMA {alias}.table_info(results)")}
        # a source stored before results had a status or turns: its rows' meaning (no
        # interrupt, no conversation)
        read = ", ".join(
            c if c in found else f"{OLD_ROWS[c]}" for c in columns.replace(" ", "").split(",")
        )
        replaced = 0
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        for source_id, new_id in experiments:
            if replace:
                replaced += db.execute(
                    f"SELECT COUNT(*) FROM {alias}.results s JOIN results r"
                    " ON r.experiment_id = ? AND r.example_id = s.example_id"
                    " AND r.repetition = s.repetition WHERE s.experiment_id = ?",
                    (new_id, source_id),
                ).fetchone()[0]
            try:
                db.execute(
                    f"{verb} INTO results (experiment_id, {columns})"
                    f" SELECT ?, {read} FROM {alias}.results"
                    " WHERE experiment_id = ? ORDER BY id",
                    (new_id, source_id),
                )
            except sqlite3.IntegrityError:
                raise SharedExamples(source_id) from None
    return replaced


def delete_experiments(store: Store, experiment_ids: Sequence[str]) -> None:
    """Remove experiments and every row they own, in one transaction."""
    if not experiment_ids:
        return
    db = store.db
    with write_transaction(db):
        for experiment_id in experiment_ids:
            for table in (*OWN_TABLES, "langsmith_sent"):
                if has_table(db, table):
                    db.execute(f"DELETE FROM {table} WHERE experiment_id = ?", (experiment_id,))
            db.execute("DELETE FROM experiments WHERE id = ?", (experiment_id,))


@contextlib.contextmanager
def _attached(db: sqlite3.Connection, path: Path, alias: str) -> Iterator[None]:
    db.execute("ATTACH DATABASE ? AS " + alias, (str(Path(path).absolute()),))
    try:
        yield
    finally:
        db.execute("DETACH DATABASE " + alias)


@contextlib.contextmanager
def _deferred(db: sqlite3.Connection) -> Iterator[None]:
    """A transaction that locks only what it writes (the output store, not the attached
    file, which may be read-only)."""
    db.execute("BEGIN")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
