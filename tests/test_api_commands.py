"""What the commands call to read the store (they open none themselves): each function's
answer against the store's own rows, read with sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agenteval_cli as agenteval
from agenteval_cli import api
from agenteval_cli.core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "configs" / "routing.yaml"


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("commands") / "db"
    return db, agenteval.run(SPEC, store=db, limit=3)


def test_the_list_is_the_stored_experiments_newest_first(demo):
    db, _ = demo
    stored = rows(
        db,
        "SELECT e.name, e.target, e.status, (SELECT COUNT(*) FROM results r "
        "WHERE r.experiment_id = e.id) FROM experiments e ORDER BY e.rowid DESC",
    )
    listed = api.list_experiments(store=db)
    assert [(e.name, e.target, e.status, e.results) for e in listed] == stored
    assert [e.results for e in listed] == [3, 3]  # --limit 3, one repetition
    assert [e.target for e in api.list_experiments(target="swarm", store=db)] == ["swarm"]


def test_the_run_table_reads_each_experiment_once_in_the_order_asked(demo):
    db, report = demo
    table = api.run_table(list(reversed(report.ids)), store=db)
    by_id = dict(rows(db, "SELECT id, target FROM experiments"))
    assert [c.target for c in table.columns] == [by_id[i] for i in reversed(report.ids)]
    assert table.store == db
    assert [c.summary.count for c in table.columns] == [3, 3]


def test_a_name_means_the_targets_latest_experiment(demo):
    db, _ = demo
    newest = rows(db, "SELECT name FROM experiments WHERE target = 'supervisor'")[-1][0]
    assert api.experiment_name("supervisor", store=db) == newest
    with pytest.raises(UserError, match="no target or experiment of that name"):
        api.experiment_name("nobody", store=db, option="--baseline")


def test_reading_a_missing_store_is_an_error_and_makes_no_file(tmp_path):
    missing = tmp_path / "none.db"
    for read in (api.list_experiments, api.cache_info):
        with pytest.raises(UserError, match="no experiment store at"):
            read(store=missing)
    assert not missing.exists()


def test_the_cache_of_a_run_without_it_is_empty(demo):
    db, _ = demo
    assert api.cache_info(store=db) == []
    assert api.clear_cache(store=db) == 0
