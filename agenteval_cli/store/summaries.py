"""The dataset-level ("summary") scores of experiments: one row per experiment and key in
the ``summary_scores`` table (created by :mod:`agenteval_cli.store.migrations`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agenteval_cli.core.records import Score
from agenteval_cli.store.tx import has_table, write_transaction

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store


def save_summary_scores(store: Store, experiment_id: str, scores: Sequence[Score]) -> None:
    """Replace the experiment's summary scores with ``scores``, in one transaction, so a
    rescored experiment never keeps a key its evaluators no longer give."""
    db = store.db
    with write_transaction(db):
        db.execute("DELETE FROM summary_scores WHERE experiment_id = ?", (experiment_id,))
        db.executemany(
            "INSERT OR REPLACE INTO summary_scores VALUES (?,?,?,?,?)",
            [(experiment_id, s.key, s.score, isinstance(s.score, bool), s.comment) for s in scores],
        )


def summary_scores(store: Store, experiment_id: str) -> list[Score]:
    """The stored dataset-level scores of an experiment (none for a store without them)."""
    if not has_table(store.db, "summary_scores"):
        return []
    rows = store.db.execute(
        "SELECT key, score, is_bool, comment FROM summary_scores WHERE experiment_id = ?"
        " ORDER BY key",
        (experiment_id,),
    )
    return [
        Score(key, bool(score) if is_bool and score is not None else score, comment)
        for key, score, is_bool, comment in rows
    ]
