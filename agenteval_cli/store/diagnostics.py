"""What went wrong in a stored experiment, counted by SQLite: errored calls by message and
evaluators' null scores by key, read with grouped queries (no result is loaded whole)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from agenteval_cli.store.results import status_columns

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store


def call_counts(store: Store, experiment_id: str) -> tuple[int, int, int]:
    """The experiment's results, how many of them errored, and how many are conversations
    (none in a store from before conversations)."""
    turns = status_columns(store.db, "turns_json")
    calls, errored, conversations = store.db.execute(
        f"SELECT COUNT(*), COUNT(error), COUNT(turns_json) FROM (SELECT error, {turns}"
        " FROM results WHERE experiment_id = ?)",
        (experiment_id,),
    ).fetchone()
    return int(calls), int(errored), int(conversations)


def error_messages(store: Store, experiment_id: str) -> Iterable[tuple[str, int, int]]:
    """Each distinct error message: ``(message, results with it, first result's row id)``."""
    return store.db.execute(
        "SELECT error, COUNT(*), MIN(id) FROM results WHERE experiment_id = ? AND error IS NOT"
        " NULL GROUP BY error",
        (experiment_id,),
    ).fetchall()


def evaluator_failures(
    store: Store, experiment_id: str, failed: str
) -> dict[str, tuple[int, int, str]]:
    """Score key -> ``(answered results scored, of them failed, first failure's comment)``,
    for the keys whose evaluator failed at least once on an answered result: a null score
    whose comment is ``LIKE failed``."""
    scored = store.db.execute(
        "SELECT json_extract(s.value, '$[0]'), COUNT(*),"
        " SUM(json_extract(s.value, '$[1]') IS NULL"
        "     AND json_extract(s.value, '$[2]') LIKE ?1),"
        " MIN(CASE WHEN json_extract(s.value, '$[1]') IS NULL"
        "     AND json_extract(s.value, '$[2]') LIKE ?1 THEN r.id END)"
        " FROM results r, json_each(r.scores_json) s"
        " WHERE r.experiment_id = ?2 AND r.error IS NULL AND r.scores_json IS NOT NULL"
        " GROUP BY 1 ORDER BY 1",
        (failed, experiment_id),
    ).fetchall()
    failures: dict[str, tuple[int, int, str]] = {}
    for key, count, failures_of_key, first_id in scored:
        if not failures_of_key:
            continue
        (comment,) = store.db.execute(
            "SELECT json_extract(s.value, '$[2]') FROM results r, json_each(r.scores_json) s"
            " WHERE r.id = ? AND json_extract(s.value, '$[0]') = ?",
            (first_id, key),
        ).fetchone()
        failures[key] = (count, failures_of_key, comment)
    return failures


def null_scores_saying(store: Store, experiment_id: str, text: str) -> dict[str, tuple[int, int]]:
    """Score key -> ``(answered results scored, null scores whose comment contains text)``,
    for the keys with at least one such score."""
    rows = store.db.execute(
        "SELECT json_extract(s.value, '$[0]'), COUNT(*),"
        " SUM(json_extract(s.value, '$[1]') IS NULL"
        "     AND instr(json_extract(s.value, '$[2]'), ?) > 0)"
        " FROM results r, json_each(r.scores_json) s"
        " WHERE r.experiment_id = ? AND r.error IS NULL AND r.scores_json IS NOT NULL"
        " GROUP BY 1 ORDER BY 1",
        (text, experiment_id),
    )
    return {key: (count, found) for key, count, found in rows if found}
