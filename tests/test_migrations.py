"""The store's schema version: named migrations applied in order on a writing open, a newer
store refused in one line, read-only commands that never alter a store."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval_cli.core.records import Example, Result, Trace
from agenteval_cli.results import figures
from agenteval_cli.store import migrations
from agenteval_cli.store.db import Store
from agenteval_cli.store.tx import StoreError

NAMES = [
    "create_experiments_results_cache",
    "add_experiments_run_id",
    "add_results_attempts",
    "add_results_cached",
    "add_results_scores_json",
    "move_scores_into_results",
    "create_run_locks",
    "create_summary_scores",
    "create_langsmith_tables",
    "add_experiments_shard",
    "add_results_status",
    "add_cache_fingerprint",
    "add_experiment_fingerprint",
    "add_experiment_metrics",
    "add_results_turns",
    "add_cache_turns",
    "add_results_blame",
]
CURRENT = len(NAMES)  # the schema version after every migration

# A store of the first release: no run_id, attempts, cached nor scores_json; scores in a
# table of their own.
FIRST_RELEASE = """
CREATE TABLE experiments (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, target TEXT NOT NULL,
    target_path TEXT NOT NULL, spec_path TEXT, spec_json TEXT NOT NULL, spec_hash TEXT,
    dataset_path TEXT, dataset_name TEXT, dataset_hash TEXT, git_commit TEXT,
    repetitions INTEGER NOT NULL DEFAULT 1, example_count INTEGER,
    status TEXT NOT NULL DEFAULT 'running', started_at TEXT NOT NULL, ended_at TEXT);
CREATE TABLE results (
    id INTEGER PRIMARY KEY, experiment_id TEXT NOT NULL REFERENCES experiments(id),
    example_id TEXT NOT NULL, repetition INTEGER NOT NULL, inputs_json TEXT NOT NULL,
    reference_json TEXT NOT NULL, outputs_json TEXT, trace_json TEXT, error TEXT,
    latency_s REAL, finished_at TEXT NOT NULL, UNIQUE (experiment_id, example_id, repetition));
CREATE TABLE cache (key TEXT PRIMARY KEY, target_path TEXT NOT NULL,
    outputs_json TEXT NOT NULL, trace_json TEXT, latency_s REAL, created_at TEXT NOT NULL);
CREATE TABLE scores (
    result_id INTEGER NOT NULL REFERENCES results(id), key TEXT NOT NULL, score REAL,
    is_bool INTEGER NOT NULL DEFAULT 0, comment TEXT, PRIMARY KEY (result_id, key));
INSERT INTO experiments (id, name, prefix, target, target_path, spec_json, started_at, status)
    VALUES ('x1', 'old-supervisor-x1', 'old', 'supervisor', 'p:g', '{}', '2025-01-01',
            'finished');
INSERT INTO results VALUES
    (1, 'x1', 'e1', 0, '{"q": 1}', '{}', '{"final_response": "hi"}', NULL, NULL, 0.5,
     '2025-01-01');
INSERT INTO scores VALUES (1, 'routing_accuracy', 0.75, 0, NULL);
"""


def digest(path: Path) -> str:
    """The bytes of the store and its WAL: what 'never altered' is checked on."""
    parts = [path.read_bytes()]
    wal = Path(f"{path}-wal")
    if wal.exists():
        parts.append(wal.read_bytes())
    return hashlib.sha256(b"".join(parts)).hexdigest()


def first_release(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(FIRST_RELEASE)
    db.commit()
    db.close()
    return path


def current_store(path: Path) -> Path:
    """A store written by this build with one experiment of two results."""
    with Store(path) as store:
        exp = store.create_experiment(
            prefix="routing", target="supervisor", target_path="p:g", spec={}
        )
        for i in range(2):
            result = Result(f"e{i}", 0, outputs={"final_response": "ok"}, trace=Trace())
            store.add_result(exp.id, Example(f"e{i}", {"question": "q"}), result)
        store.finish_experiment(exp.id)
    return path


def newer_store(path: Path) -> Path:
    """What a later agenteval might leave: one more migration, a column this build lacks."""
    current_store(path)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE experiments ADD COLUMN owner TEXT")
    db.execute(f"PRAGMA user_version = {len(NAMES) + 1}")
    db.commit()
    db.close()
    return path


def schema(path: Path) -> tuple[int, list[str], dict[str, list[str]]]:
    db = sqlite3.connect(path)
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        names = [name for name, _ in migrations.applied(db)]
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = {t: [c[1] for c in db.execute(f"PRAGMA table_info({t})")] for t in tables}
        return version, names, columns
    finally:
        db.close()


def test_the_migrations_are_the_named_steps_in_order():
    assert [m.name for m in migrations.MIGRATIONS] == NAMES
    assert migrations.SCHEMA_VERSION == CURRENT


def test_a_new_store_has_every_migration_and_the_last_version(tmp_path):
    version, names, columns = schema(current_store(tmp_path / "new.db"))
    assert version == CURRENT
    assert names == NAMES
    assert columns["experiments"][-7:] == [
        "ended_at",
        "run_id",
        "shard_index",
        "shard_count",
        "dataset_examples",
        "target_fingerprint",
        "metrics_json",
    ]
    assert columns["results"][11:] == [
        "attempts",
        "cached",
        "scores_json",
        "status",
        "interrupt",
        "turns_json",
        "blame_json",
    ]
    assert columns["cache"][-2:] == ["fingerprint_json", "turns_json"]
    assert "scores" not in columns and "run_locks" in columns
    assert "summary_scores" in columns
    assert {"langsmith_examples", "langsmith_uploads", "langsmith_sent"} <= set(columns)


def test_a_first_release_store_is_migrated_by_a_writing_open_and_keeps_its_rows(tmp_path):
    path = first_release(tmp_path / "old.db")
    with Store(path) as store:
        [stored] = store.results("x1")
        assert stored.inputs == {"q": 1}
        assert stored.result.outputs == {"final_response": "hi"}
        assert stored.result.score_map() == {"routing_accuracy": 0.75}
        assert stored.result.attempts == 1 and stored.result.cached is False
        assert store.experiment("x1").run_id is None
    version, names, columns = schema(path)
    assert (version, names) == (CURRENT, NAMES)
    assert "scores" not in columns
    db = sqlite3.connect(path)
    assert migrations.migrate(db) == []  # once migrated, nothing is left to apply
    db.close()


def test_a_failing_migration_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    path = first_release(tmp_path / "old.db")
    before = schema(path)

    def breaks(db: sqlite3.Connection) -> None:
        raise RuntimeError("this step fails")

    steps = [*migrations.MIGRATIONS, migrations.Migration("breaks", breaks, None)]
    monkeypatch.setattr(migrations, "MIGRATIONS", steps)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(steps))
    with pytest.raises(RuntimeError, match="this step fails"):
        Store(path)
    after = schema(path)
    assert after[0] == 0 and "scores" in after[2]  # the six steps before it rolled back too
    assert after[2]["results"] == before[2]["results"]


def test_a_store_from_before_versions_in_the_current_shape_is_read_without_a_change(
    tmp_path, invoke
):
    path = current_store(tmp_path / "prev.db")
    db = sqlite3.connect(path)  # as the previous build left it: version 0, no lock table
    db.execute("DROP TABLE migrations")
    db.execute("DROP TABLE run_locks")
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    before = digest(path)
    with Store(path, readonly=True) as store:
        [exp] = store.experiments()
        assert store.result_count(exp.id) == 2
    listed = invoke("experiments", "--store", path)
    assert listed.exit_code == 0, listed.output
    assert "routing-supervisor-" in listed.output
    assert digest(path) == before
    with Store(path):  # a writing open migrates it
        pass
    assert schema(path)[:2] == (CURRENT, NAMES)


def test_read_only_commands_never_migrate_an_older_store_and_say_so(tmp_path, invoke):
    path = first_release(tmp_path / "old.db")
    before = digest(path)
    for command in (
        ["experiments"],
        ["compare", "supervisor"],
        ["report", "supervisor", "-o", tmp_path / "r.html"],
        ["cache", "info"],
    ):
        out = invoke(*command, "--store", path)
        assert out.exit_code == 2, (command, out.output)
        line = out.output.strip()
        assert "\n" not in line and "Traceback" not in line
        assert line.startswith(
            f"error: the store {path} has schema version 0 and needs migrating to version {CURRENT}"
        ), line
        assert f"python -m agenteval_cli.store.migrations {path}" in line
    assert digest(path) == before
    assert schema(path)[0] == 0 and not (tmp_path / "r.html").exists()


def test_a_newer_store_is_refused_by_every_command_and_left_alone(tmp_path, invoke):
    path = newer_store(tmp_path / "newer.db")
    before = digest(path)
    with pytest.raises(StoreError, match="upgrade agenteval"):
        Store(path)
    with pytest.raises(StoreError, match="upgrade agenteval"):
        Store(path, readonly=True)
    spec = tmp_path / "spec.yaml"
    (tmp_path / "data.jsonl").write_text('{"inputs": {"question": "q"}}\n')
    (tmp_path / "t.py").write_text("def answer(inputs):\n    return 'ok'\n")
    spec.write_text("dataset: data.jsonl\ntargets: {a: t.py:answer}\nevaluators: []\n")
    for command in (
        ["experiments"],
        ["compare", "supervisor"],
        ["report", "supervisor", "-o", tmp_path / "r.html"],
        ["dataset", "add-failures", "supervisor", "--to", tmp_path / "f.jsonl"],
        ["cache", "info"],
        ["cache", "clear"],
        ["run", spec],
        ["run", spec, "--resume"],
    ):
        out = invoke(*command, "--store", path)
        assert out.exit_code == 2, (command, out.output)
        line = out.output.strip()
        assert "\n" not in line and "Traceback" not in line, (command, line)
        assert line == (
            f"error: the store {path} has schema version {CURRENT + 1}, newer than this agenteval "
            f"knows ({CURRENT}): it was written by a newer agenteval (upgrade agenteval with "
            "'pip install -U agenteval', or pass --store with another file)"
        ), (command, line)
    assert digest(path) == before


def test_an_unknown_column_of_the_same_version_is_ignored_on_reading(tmp_path):
    path = current_store(tmp_path / "s.db")
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE experiments ADD COLUMN note TEXT DEFAULT 'x'")
    db.commit()
    db.close()
    with Store(path, readonly=True) as store:
        [exp] = store.experiments()
        assert exp.target == "supervisor" and exp.status == "finished"


def test_a_file_that_is_no_agenteval_store_is_said_so_to_a_reader(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(path).close()  # an empty SQLite file
    with pytest.raises(StoreError, match="is not an agenteval store: it has no experiments"):
        Store(path, readonly=True)
    assert path.stat().st_size == 0


def test_the_module_migrates_a_store_from_the_command_line(tmp_path):
    path = first_release(tmp_path / "old.db")
    command = [sys.executable, "-m", "agenteval_cli.store.migrations", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: schema version {CURRENT} ({', '.join(NAMES)})\n"
    assert schema(path)[:2] == (CURRENT, NAMES)
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.stdout == f"{path}: schema version {CURRENT} (nothing to do)\n"
    newer = newer_store(tmp_path / "newer.db")
    refused = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.store.migrations", str(newer)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: the store {newer} has schema version {CURRENT + 1}")


def test_the_columns_checked_on_opening_are_those_of_a_new_store(tmp_path):
    columns = schema(current_store(tmp_path / "s.db"))[2]
    for table, names in migrations.COLUMNS.items():
        optional = migrations.OPTIONAL_COLUMNS.get(table, ())
        assert tuple(c for c in columns[table] if c not in optional) == names
    assert tuple(columns["run_locks"]) == migrations.LOCK_COLUMNS


def test_a_store_changed_by_another_program_is_refused_in_one_line(tmp_path, invoke):
    dropped = current_store(tmp_path / "dropped.db")
    db = sqlite3.connect(dropped)
    db.execute("ALTER TABLE experiments DROP COLUMN git_commit")  # the version kept
    db.commit()
    db.close()
    negative = current_store(tmp_path / "negative.db")
    db = sqlite3.connect(negative)
    db.execute("PRAGMA user_version = -3")
    db.commit()
    db.close()
    foreign = tmp_path / "places.sqlite"
    db = sqlite3.connect(foreign)
    for table in ("moz_places", "moz_bookmarks", "moz_origins", "moz_meta"):
        db.execute(f"CREATE TABLE {table} (x)")
    db.commit()
    db.close()
    expected = {
        dropped: f"error: the store {dropped} has no column experiments.git_commit, which "
        f"this agenteval reads (schema version {CURRENT}): another program or a newer agenteval "
        "changed it (upgrade agenteval with 'pip install -U agenteval', or pass --store "
        "with another file)",
        negative: f"error: {negative} is not an agenteval store: its schema version is -3 "
        "(pass --store with the file 'agenteval run' wrote)",
    }
    for path, line in expected.items():
        before = digest(path)
        for command in (["experiments"], ["cache", "clear"]):
            out = invoke(*command, "--store", path)
            assert (out.exit_code, out.output.strip()) == (2, line), command
        assert digest(path) == before
    before = digest(foreign)
    out = invoke("cache", "clear", "--store", foreign)
    assert (out.exit_code, out.output.strip()) == (
        2,
        f"error: {foreign} is not an agenteval store: it is another SQLite database (tables "
        "moz_bookmarks, moz_meta, moz_origins, ...) (pass --store with another path)",
    )
    assert digest(foreign) == before  # nothing added to another program's database


def previous_build_store(path: Path, *, lazy_tables: bool) -> Path:
    """A store as the build before the summary and LangSmith migrations left it (version 7),
    with those tables made on first use (``lazy_tables``) or never needed."""
    current_store(path)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM migrations WHERE name IN (?, ?)", tuple(NAMES[7:9]))
    for table in ("summary_scores", *(t.split()[5] for t in migrations.LANGSMITH_TABLES)):
        db.execute(f"DROP TABLE {table}")
    if lazy_tables:
        db.execute(
            "CREATE TABLE summary_scores (experiment_id TEXT NOT NULL, key TEXT NOT NULL,"
            " score REAL, is_bool INTEGER NOT NULL DEFAULT 0, comment TEXT,"
            " PRIMARY KEY (experiment_id, key))"
        )
        exp_id = db.execute("SELECT id FROM experiments").fetchone()[0]
        db.execute(
            "INSERT INTO summary_scores VALUES (?, 'routing_confusion', 0.5, 0, NULL)", (exp_id,)
        )
        db.execute(migrations.LANGSMITH_TABLES[4])  # langsmith_uploads
        db.execute(
            "INSERT INTO langsmith_uploads (experiment_id, endpoint, status, updated_at)"
            " VALUES (?, 'http://ls', 'done', '2026-01-01')",
            (exp_id,),
        )
    db.execute("PRAGMA user_version = 7")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("lazy_tables", [False, True])
def test_a_store_of_the_previous_version_gets_the_summary_and_langsmith_tables(
    tmp_path, invoke, lazy_tables
):
    from agenteval_cli.store.langsmith_state import LangSmithState
    from agenteval_cli.store.summaries import summary_scores

    path = previous_build_store(tmp_path / "prev.db", lazy_tables=lazy_tables)
    before = digest(path)
    with Store(path, readonly=True) as store:  # read as it is, left alone
        [exp] = store.experiments()
        assert [s.key for s in summary_scores(store, exp.id)] == (
            ["routing_confusion"] if lazy_tables else []
        )
    assert invoke("experiments", "--store", path).exit_code == 0
    assert digest(path) == before
    with Store(path) as store:  # a writing open migrates it, the rows kept
        assert [s.score for s in summary_scores(store, exp.id)] == ([0.5] if lazy_tables else [])
        upload = LangSmithState(store.db).upload(exp.id)
        assert (upload or {}).get("status") == ("done" if lazy_tables else None)
    version, names, columns = schema(path)
    assert (version, names[7:]) == (CURRENT, NAMES[7:])
    assert "summary_scores" in columns and "langsmith_run_trees" in columns


def test_a_store_from_before_the_shard_columns_is_read_as_it_is_and_migrated_on_writing(
    tmp_path, invoke
):
    path = current_store(tmp_path / "v9.db")
    db = sqlite3.connect(path)
    for column in migrations.OPTIONAL_COLUMNS["experiments"]:
        db.execute(f"ALTER TABLE experiments DROP COLUMN {column}")
    db.execute("DELETE FROM migrations WHERE name = 'add_experiments_shard'")
    db.execute("PRAGMA user_version = 9")
    db.commit()
    db.close()
    before = digest(path)
    with Store(path, readonly=True) as store:  # no sharded run in it: read as such
        [exp] = store.experiments()
        assert (exp.shard_index, exp.shard_count, exp.dataset_examples) == (None, None, None)
    assert invoke("experiments", "--store", path).exit_code == 0
    assert digest(path) == before
    with Store(path):
        pass
    version, names, columns = schema(path)
    assert (version, names) == (CURRENT, NAMES)
    assert columns["experiments"][-5:-2] == ["shard_index", "shard_count", "dataset_examples"]


def test_a_store_from_before_result_statuses_reads_its_errors_as_errors_and_is_migrated(
    tmp_path, invoke
):
    """No result of such a store stopped at an interrupt: read as it is, each row's status
    is ok or error by its error column; a writing open adds the columns and fills them."""
    path = current_store(tmp_path / "v10.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE results SET error = 'ValueError: boom' WHERE example_id = 'e1'")
    for column in migrations.OPTIONAL_COLUMNS["results"]:
        db.execute(f"ALTER TABLE results DROP COLUMN {column}")
    db.execute("DELETE FROM migrations WHERE name = 'add_results_status'")
    db.execute("PRAGMA user_version = 10")
    db.commit()
    db.close()
    before = digest(path)
    with Store(path, readonly=True) as store:
        [exp] = store.experiments()
        statuses = {s.result.example_id: s.result.status for s in store.results(exp.id)}
        assert statuses == {"e0": "ok", "e1": "error"}
        assert store.status_counts(exp.id) == {"ok": 1, "error": 1}
        assert figures.stored(store, exp.id, repetitions=1).errors == 1
    assert invoke("experiments", "--store", path).exit_code == 0
    assert digest(path) == before
    with Store(path):
        pass
    version, names, columns = schema(path)
    assert (version, names) == (CURRENT, NAMES)
    assert columns["results"][-4:] == ["status", "interrupt", "turns_json", "blame_json"]
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT example_id, status FROM results").fetchall())
    db.close()
    assert rows == {"e0": "ok", "e1": "error"}
