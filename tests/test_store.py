"""The SQLite store: experiments, one committed row per result, scores round-trip."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from projects import project, rows

from agenteval_cli.core.records import Example, Handoff, ModelCall, Result, Score, ToolCall, Trace
from agenteval_cli.results import figures
from agenteval_cli.results.figures import from_results
from agenteval_cli.store.db import Store


def make_result(example_id: str, repetition: int = 0, error: str | None = None) -> Result:
    return Result(
        example_id=example_id,
        repetition=repetition,
        outputs=None if error else {"final_response": "done", "obj": object.__name__},
        trace=Trace(
            agent_path=["supervisor", "billing"],
            handoffs=[Handoff("supervisor", "billing", "transfer_to_billing")],
            model_calls=[ModelCall("supervisor", "m", 10, 2)],
        ),
        scores=[] if error else [Score("routing_accuracy", 0.5, "half"), Score("ping_pong", False)],
        error=error,
        latency_s=0.25,
    )


def new_experiment(store: Store, target: str = "supervisor"):
    return store.create_experiment(
        prefix="routing", target=target, target_path="pkg.mod:graph", spec={"concurrency": 2}
    )


def test_experiment_is_named_prefix_target_short_id(store):
    exp = new_experiment(store)
    assert exp.name == f"routing-supervisor-{exp.id[:8]}"
    assert exp.status == "running"
    assert store.experiment(exp.name).id == exp.id
    assert store.experiment(exp.name[:-2]).id == exp.id  # unique prefix
    assert exp.spec == {"concurrency": 2}


def test_results_round_trip_with_scores_and_trace(store):
    exp = new_experiment(store)
    example = Example("e1", {"question": "q"}, {"expected_agents": ["billing"]})
    store.add_result(exp.id, example, make_result("e1"))
    store.add_result(exp.id, example, make_result("e1", 1, error="ValueError: boom"))
    stored = list(store.results(exp.id))
    assert [s.result.repetition for s in stored] == [0, 1]
    first = stored[0]
    assert first.inputs == {"question": "q"}
    assert first.reference_outputs == {"expected_agents": ["billing"]}
    assert first.result.score_map() == {"routing_accuracy": 0.5, "ping_pong": False}
    assert first.result.trace.tokens == {"m": {"input": 10, "output": 2, "total": 12}}
    assert first.result.trace.handoffs[0].tool == "transfer_to_billing"
    assert stored[1].result.error == "ValueError: boom"
    assert stored[1].result.outputs is None


def test_a_result_is_visible_to_another_connection_at_once(store, tmp_path):
    exp = new_experiment(store)
    store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    other = sqlite3.connect(store.path)
    assert other.execute("SELECT COUNT(*) FROM results").fetchone() == (1,)
    assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_duplicate_result_is_refused_and_rolled_back(store):
    exp = new_experiment(store)
    store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    with pytest.raises(sqlite3.IntegrityError):
        store.add_result(exp.id, Example("e1", {}), make_result("e1"))
    assert store.result_count(exp.id) == 1
    store.add_result(exp.id, Example("e2", {}), make_result("e2"))  # still usable
    assert store.result_count(exp.id) == 2


def test_latest_experiment_per_target_and_finish(store):
    first = new_experiment(store)
    second = new_experiment(store)
    new_experiment(store, target="swarm")
    store.finish_experiment(second.id, "finished")
    latest = store.latest_experiment("supervisor")
    assert latest.id == second.id
    assert latest.status == "finished" and latest.ended_at
    assert [e.id for e in store.experiments(target="supervisor")] == [second.id, first.id]
    assert store.latest_experiment("nobody") is None
    with pytest.raises(KeyError):
        store.experiment("routing-")  # ambiguous prefix


def test_a_repeated_score_key_keeps_its_last_score(store):
    exp = new_experiment(store)
    result = make_result("e1")
    result.scores = [Score("a", 1.0), Score("b", True), Score("a", 0.25, "second")]
    store.add_result(exp.id, Example("e1", {}, {}), result)
    [stored] = store.results(exp.id)
    assert [(s.key, s.score, s.comment) for s in stored.result.scores] == [
        ("a", 0.25, "second"),
        ("b", True, None),
    ]


# The schema of stores written before scores became a column of results.
OLD_SCHEMA = """
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
CREATE TABLE scores (
    result_id INTEGER NOT NULL REFERENCES results(id), key TEXT NOT NULL, score REAL,
    is_bool INTEGER NOT NULL DEFAULT 0, comment TEXT, PRIMARY KEY (result_id, key));
INSERT INTO experiments (id, name, prefix, target, target_path, spec_json, started_at)
    VALUES ('x1', 'old-supervisor-x1', 'old', 'supervisor', 'p:g', '{}', '2025-01-01');
INSERT INTO results VALUES
    (1, 'x1', 'e1', 0, '{}', '{}', '{}', NULL, NULL, 0.5, '2025-01-01'),
    (2, 'x1', 'e2', 0, '{}', '{}', NULL, NULL, 'ValueError: boom', 0.1, '2025-01-01');
INSERT INTO scores VALUES
    (1, 'routing_accuracy', 0.5, 0, 'half'), (1, 'ping_pong', 0, 1, NULL),
    (1, 'judge', NULL, 0, 'judge failed');
"""


def test_an_older_store_keeps_its_scores_when_opened(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    with Store(path) as store:
        first, second = (stored.result for stored in store.results("x1"))
        assert [(s.key, s.score, s.comment) for s in first.scores] == [
            ("judge", None, "judge failed"),
            ("ping_pong", False, None),
            ("routing_accuracy", 0.5, "half"),
        ]
        assert second.scores == [] and second.error == "ValueError: boom"
        assert figures.stored(store, "x1").metrics()["ping_pong"] == 0.0
        tables = {row[0] for row in store.db.execute("SELECT name FROM sqlite_master")}
        assert "scores" not in tables
    with Store(path) as again:  # opening it again changes nothing
        assert [stored.result.score_map() for stored in again.results("x1")] == [
            {"judge": None, "ping_pong": False, "routing_accuracy": 0.5},
            {},
        ]


def test_a_single_score_and_an_empty_trace_round_trip_exactly(store):
    exp = new_experiment(store)
    result = Result(
        example_id="e1",
        repetition=0,
        outputs={"final_response": "ok"},
        trace=Trace(latency_s=0.123456789),
        scores=[Score("coverage", 2 / 3, 'missing ["refund"] — «naïve»')],
        latency_s=0.123456789,
    )
    store.add_result(exp.id, Example("e1", {}, {}), result)
    [stored] = store.results(exp.id)
    [score] = stored.result.scores
    assert (score.key, score.score, score.comment) == (
        "coverage",
        2 / 3,
        'missing ["refund"] — «naïve»',
    )
    assert stored.result.trace.latency_s == 0.123456789  # from the result's column
    assert stored.result.trace.error is None


@pytest.mark.parametrize("moments", [(1764495000.0015, 1764495000.9999, 1764495001.0)])
def test_timestamps_are_utc_iso_to_the_millisecond(monkeypatch, moments):
    from datetime import UTC, datetime

    from agenteval_cli.store import results as store_results

    for moment in moments:  # the same second twice, then the next: each text is exact
        monkeypatch.setattr(store_results.time, "time", lambda moment=moment: moment)
        expected = datetime.fromtimestamp(int(moment * 1000) / 1000, UTC)
        assert store_results.now() == expected.isoformat(timespec="milliseconds")


def test_the_stored_summary_equals_summing_the_full_results(store):
    """Summed from the columns alone, the metrics match what the full results give:
    errors skipped, null scores uncounted, bools as 0/1, models collected, per-repetition
    means and each pass/fail key's outcomes kept."""
    exp = new_experiment(store)
    rows = [
        ("e1", 0, [Score("routing_accuracy", 1.0, "ok"), Score("ping_pong", False)], None),
        ("e1", 1, [Score("routing_accuracy", 0.5, "half"), Score("ping_pong", True)], None),
        ("e2", 0, [Score("routing_accuracy", 1.0, "ok"), Score("judge", 0.75, "a")], None),
        ("e2", 1, [Score("routing_accuracy", 1.0, "ok"), Score("judge", 0.75, "b")], None),
        ("e3", 0, [], "ValueError: boom"),
        ("e3", 1, [Score("total_tokens", 12), Score("judge", None, "failed")], None),
    ]
    for example_id, rep, scores, error in rows:
        result = make_result(example_id, rep, error)
        result.scores, result.latency_s = scores, 0.1 * (rep + 1)
        result.trace.model_calls = [ModelCall("supervisor", f"m{rep}", 1, 1)]
        store.add_result(exp.id, Example(example_id, {}, {}), result)

    stored = figures.stored(store, exp.id, repetitions=2)
    full = from_results(s.result for s in store.results(exp.id))

    assert stored.metrics() == full.metrics()
    assert stored.metrics()["routing_accuracy"] == 0.875
    assert stored.metrics()["ping_pong"] == 0.5
    assert stored.metrics()["judge"] == 0.75
    assert stored.metrics()["error_rate"] == pytest.approx(1 / 6)
    # ping_pong (pass/fail, lower is better) passed then failed in e1: e1 is flaky
    assert stored.outcomes == full.outcomes == {"ping_pong": {"e1": [True, False]}}
    assert stored.flaky() == full.flaky() and (
        stored.flaky().examples,
        stored.flaky().repeated,
    ) == (1, 1)
    assert stored.spread("routing_accuracy") == full.spread("routing_accuracy") > 0
    assert stored.models == full.models == {"m0", "m1"}
    assert figures.stored(store, exp.id).outcomes == {}  # one repetition: nothing kept per example


# --- values UTF-8 or repr() cannot take --------------------------------------------------


class _ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


def test_lone_surrogates_are_stored_as_replacement_characters(store):
    exp = new_experiment(store)
    example = Example("e1", {"question": "q"}, {})
    result = make_result("e1")
    result.outputs = {"final_response": "bad \ud800 text", "\udcff": ["\udfff"]}
    result.scores = [Score("judge", 0.5, "quoted \ud83d alone")]
    result.trace.messages = [{"role": "assistant", "content": "\udc00"}]
    store.add_result(exp.id, example, result)
    errored = make_result("e2", error="ValueError: \ud800 in a message")
    store.add_result(exp.id, Example("e2", {"question": "\udc01"}, {}), errored)
    first, second = store.results(exp.id)
    assert first.result.outputs == {"final_response": "bad \ufffd text", "\ufffd": ["\ufffd"]}
    assert first.result.scores[0].comment == "quoted \ufffd alone"
    assert first.result.trace.messages == [{"role": "assistant", "content": "\ufffd"}]
    assert second.result.error == "ValueError: \ufffd in a message"
    assert second.inputs == {"question": "\ufffd"}


def test_an_object_whose_repr_raises_is_stored_as_a_placeholder(store):
    exp = new_experiment(store)
    result = make_result("e1")
    result.outputs = {"final_response": "ok", "thing": _ReprRaises(), "items": {_ReprRaises()}}
    store.add_result(exp.id, Example("e1", {}, {}), result)
    (stored,) = store.results(exp.id)
    placeholder = "<_ReprRaises object: repr() raised RuntimeError>"
    assert stored.result.outputs == {
        "final_response": "ok",
        "thing": placeholder,
        "items": [placeholder],
    }


def test_exception_text_never_raises_and_is_storable():
    from agenteval_cli.core.safe_text import exception_text, storable
    from agenteval_cli.trace.recorder import error_text

    assert exception_text(KeyError("customer_id")) == "KeyError: 'customer_id'"
    assert exception_text(ValueError()) == "ValueError: "
    assert (
        exception_text(_StrRaises()) == "_StrRaises: <str() of the exception raised RuntimeError>"
    )
    assert error_text(_StrRaises()) == "_StrRaises: <str() of the exception raised RuntimeError>"
    assert exception_text(ValueError("a\ud800b")) == "ValueError: a\ufffdb"
    text = "plain"
    assert storable(text) is text and storable("é\udfffé") == "é\ufffdé"


# --- a store file that fails: one line naming it and the cause, committed rows intact ------

STORE_TARGETS = """
import asyncio

async def answer(inputs):
    await asyncio.sleep(0.001)
    return {"final_response": inputs["question"] + " " + "x" * 3000}
"""


def store_project(folder, n: int = 40):
    """A two-target spec whose every result takes about a page of the store."""
    return project(
        folder,
        STORE_TARGETS,
        module="targets.py",
        targets={"a": "answer", "b": "answer"},
        data=rows(n, question="q {i}"),
        prefix="disk",
        evaluators="[]",
        concurrency=2,
    )


def cli(*args):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def stored_rows(path):
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return db.execute(
            "SELECT id, experiment_id, example_id, repetition, outputs_json FROM results"
            " ORDER BY id"
        ).fetchall()
    finally:
        db.close()


def test_a_full_disk_mid_run_is_one_line_and_keeps_the_committed_rows(tmp_path, monkeypatch):
    import json

    from agenteval_cli.store import db as store_module

    spec = store_project(tmp_path / "p")
    path = tmp_path / "full.db"
    connect = store_module._connect

    def small_disk(at, readonly):  # the store cannot grow past 160 kB, as on a full disk
        db = connect(at, readonly)
        db.execute("PRAGMA max_page_count = 40")
        return db

    monkeypatch.setattr(store_module, "_connect", small_disk)
    failed = cli("run", spec, "--store", path)
    monkeypatch.undo()
    assert failed.exit_code == 4, failed.output
    assert "Traceback" not in failed.output and "cannot rollback" not in failed.output
    assert failed.output.strip().splitlines()[-1] == (
        f"error: cannot write to the store {path}: the disk is full [SQLITE_FULL: database or "
        "disk is full]; what was committed before is kept (free some space and run the "
        "command again (a run continues with --resume))"
    )
    kept = stored_rows(path)
    assert 0 < len(kept) < 80
    for _, _, example_id, _, outputs in kept:
        assert json.loads(outputs)["final_response"] == f"q {example_id[1:]} " + "x" * 3000

    resumed = cli("run", spec, "--resume", "--store", path)
    assert resumed.exit_code == 0, resumed.output
    after = stored_rows(path)
    assert after[: len(kept)] == kept  # the rows committed before the failure, unchanged
    pairs = [(e, x, r) for _, e, x, r, _ in after]
    assert len(pairs) == len(set(pairs)) == 80


def test_a_store_that_is_not_a_database_or_is_damaged_is_one_line_for_every_command(tmp_path):
    spec = store_project(tmp_path / "p", n=3)
    text = tmp_path / "agenteval.db"
    text.write_text("this is a text file named like a store\n" * 50)
    good = tmp_path / "good.db"
    assert cli("run", spec, "--store", good).exit_code == 0
    damaged = tmp_path / "damaged.db"
    data = good.read_bytes()
    damaged.write_bytes(data[: len(data) // 3])  # a copy cut short
    expected = {
        text: f"error: {text} is not an agenteval store: the file is not a SQLite database "
        "[SQLITE_NOTADB: file is not a database] (pass --store with the right file, or move "
        "this one away)",
        damaged: f"error: the store {damaged} is damaged [SQLITE_CORRUPT: database disk image "
        f"is malformed] (salvage it with 'sqlite3 {damaged} .recover', or move it away and "
        "start a new store)",
    }
    for path, line in expected.items():
        before = path.read_bytes()
        for command in (
            ["run", spec],
            ["run", spec, "--resume"],
            ["experiments"],
            ["compare", "a", "b"],
            ["report", "a", "-o", tmp_path / "r.html"],
            ["cache", "info"],
            ["cache", "clear"],
        ):
            out = cli(*command, "--store", path)
            assert out.exit_code == 2, (command, out.output)
            assert out.output.strip() == line, (command, out.output)
        assert path.read_bytes() == before


def test_a_read_only_store_file_is_one_line_and_left_as_it_was(tmp_path, monkeypatch):
    from agenteval_cli.store import db as store_module

    spec = store_project(tmp_path / "p", n=3)
    path = tmp_path / "ro.db"
    assert cli("run", spec, "--store", path).exit_code == 0
    kept = stored_rows(path)
    connect = store_module._connect
    # what SQLite does with a file it may not write (chmod, chattr +i, a read-only mount):
    # it opens it read-only, and the first write fails
    monkeypatch.setattr(store_module, "_connect", lambda at, readonly: connect(at, True))
    for command in (["run", spec], ["cache", "clear"]):
        out = cli(*command, "--store", path)
        assert out.exit_code == 4, out.output
        assert out.output.strip().splitlines()[-1] == (
            f"error: cannot write to the store {path}: the file, its folder or the file system "
            "is read-only [SQLITE_READONLY: attempt to write a readonly database] (make them "
            "writable, or pass --store with a writable path)"
        )
    monkeypatch.undo()
    assert stored_rows(path) == kept
    listed = cli("experiments", "--store", path)
    assert listed.exit_code == 0 and listed.output.count("disk-") == 2


@pytest.mark.slow
def test_a_pipe_or_a_folder_as_the_store_is_refused_at_once(tmp_path):
    import os
    import subprocess
    import sys

    fifo = tmp_path / "agenteval.db"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for path in (fifo, tmp_path):
        for command in (["experiments"], ["cache", "clear"]):
            done = subprocess.run(
                [sys.executable, "-m", "agenteval_cli.cli", *command, "--store", str(path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip() == (
                f"error: {path} is not an agenteval store: it is not a regular file (a folder, "
                "device or pipe) (pass --store with the path of a file)"
            )


def test_a_stored_value_that_is_not_json_or_not_utf8_is_one_line(tmp_path):
    spec = store_project(tmp_path / "p", n=3)
    path = tmp_path / "s.db"
    assert cli("run", spec, "--store", path).exit_code == 0
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE results SET outputs_json = '{oops' WHERE example_id = 'e1'"
        " AND experiment_id = (SELECT id FROM experiments WHERE target = 'a')"
    )
    db.commit()
    db.close()
    for command in (["compare", "a", "b"], ["report", "a", "-o", tmp_path / "r.html"]):
        out = cli(*command, "--store", path)
        assert (out.exit_code, out.output.strip()) == (
            2,
            f"error: the store {path} is damaged: a value it holds is not valid JSON (Expecting "
            "property name enclosed in double quotes: line 1 column 2 (char 1)) (another program "
            "changed it; move it away and start a new store, or pass --store with another file)",
        ), command
    db = sqlite3.connect(path)
    db.execute("UPDATE experiments SET target = CAST(x'ff00fe' AS TEXT) WHERE rowid = 1")
    db.commit()
    db.close()
    out = cli("experiments", "--store", path)
    assert out.exit_code == 2
    assert out.output.startswith(
        f"error: the store {path} is damaged [OperationalError: Could not decode to UTF-8 "
        "column 'target'"
    )
    assert "Traceback" not in out.output and out.output.count("\n") == 1


def test_a_store_in_a_folder_that_cannot_be_written_is_read_and_refused_for_writing(tmp_path):
    import shutil
    import subprocess

    spec = store_project(tmp_path / "p", n=3)
    folder = tmp_path / "archive"
    folder.mkdir()
    path = folder / "s.db"
    assert cli("run", spec, "--store", path).exit_code == 0
    kept = stored_rows(path)
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", folder]).returncode != 0:
        pytest.skip("no chattr +i here (it takes root on a file system that has it)")
    try:  # as on a read-only medium: no -shm file can be made next to the WAL store
        listed = cli("experiments", "--store", path)
        assert listed.exit_code == 0, listed.output
        assert listed.output.count("disk-") == 2
        refused = cli("run", spec, "--store", path)
        assert refused.exit_code == 4
        assert refused.output.strip().splitlines()[-1] == (
            f"error: cannot open the store {path} [SQLITE_CANTOPEN: unable to open database "
            "file] (check that the file and its folder exist and are readable and writable, "
            "or pass --store with another path)"
        )
    finally:
        subprocess.run([chattr, "-i", folder], check=True)
    assert stored_rows(path) == kept


# --- strict JSON: NaN and ±Infinity are stored as null -----------------------------------


def _refuse(constant: str) -> None:
    raise ValueError(f"not strict JSON: {constant}")


def test_nan_and_infinity_are_stored_as_null_and_count_as_no_score(store):
    inf, nan = float("inf"), float("nan")
    exp = new_experiment(store)
    first = make_result("e1")
    first.outputs = {"final_response": "NaN and Infinity stay text", "ratio": nan, "big": [inf]}
    first.trace.tool_calls = [ToolCall("billing", "refund", {"amount": -inf, "note": "NaN"})]
    first.scores = [Score("judge", inf, "too sure"), Score("routing_accuracy", 1.0)]
    second = make_result("e2")
    second.scores = [Score("judge", 0.5, "fine"), Score("routing_accuracy", 0.0)]
    solo = make_result("e3")
    solo.scores = [Score("solo", -inf, "the one-score form")]
    store.add_result(exp.id, Example("e1", {"question": "q", "weight": nan}, {"x": inf}), first)
    store.add_result(exp.id, Example("e2", {"question": "q"}, {}), second)
    store.add_result(exp.id, Example("e3", {"question": "q"}, {}), solo)

    columns = "inputs_json, reference_json, outputs_json, trace_json, scores_json"
    rows = store.db.execute(f"SELECT {columns} FROM results ORDER BY id").fetchall()
    for row in rows:
        for text in row:
            json.loads(text, parse_constant=_refuse)  # raises on NaN, Infinity, -Infinity
    assert rows[0][0] == '{"question":"q","weight":null}' and rows[0][1] == '{"x":null}'
    assert rows[2][4] == '[["solo",null,"the one-score form"]]'

    stored = {s.result.example_id: s for s in store.results(exp.id)}
    assert stored["e1"].inputs == {"question": "q", "weight": None}
    assert stored["e1"].result.outputs == {
        "final_response": "NaN and Infinity stay text",
        "ratio": None,
        "big": [None],
    }
    assert stored["e1"].result.trace.tool_calls[0].args == {"amount": None, "note": "NaN"}
    assert stored["e1"].result.score_map() == {"judge": None, "routing_accuracy": 1.0}
    assert stored["e3"].result.score_map() == {"solo": None}

    metrics = figures.stored(store, exp.id).metrics()
    assert metrics["judge"] == 0.5  # the infinite score is no score, not a 0
    assert metrics["routing_accuracy"] == 0.5
    assert "solo" not in metrics
    assert from_results(s.result for s in stored.values()).metrics() == metrics


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, asyncio.CancelledError])
def test_an_interrupt_while_writing_a_batch_is_raised_not_retried_row_by_row(
    store, monkeypatch, interrupt
):
    """Only an ordinary failure of a batch is retried one result at a time: Ctrl-C (or an
    exit, a cancellation) while the batch is written reaches the caller."""
    from agenteval_cli.store import results as store_results

    exp = new_experiment(store)
    examples = [Example(f"e{i}", {"q": i}, {}) for i in range(3)]
    batch = [store_results.encode(exp.id, e, make_result(e.id)) for e in examples]
    real_write = store_results._write

    def interrupted(db, items):
        if len(items) > 1:
            raise interrupt()
        real_write(db, items)

    monkeypatch.setattr(store_results, "_write", interrupted)
    with pytest.raises(interrupt):
        store_results.write(store.db, batch)
    assert store.result_count(exp.id) == 0  # the batch's transaction was rolled back


def test_an_interrupt_during_the_row_by_row_retries_keeps_the_rows_committed(store, monkeypatch):
    from agenteval_cli.store import results as store_results

    exp = new_experiment(store)
    examples = [Example(f"e{i}", {"q": i}, {}) for i in range(3)]
    batch = [store_results.encode(exp.id, e, make_result(e.id)) for e in examples]
    real_write = store_results._write
    calls = []

    def failing(db, items):
        calls.append(len(items))
        if len(items) > 1:
            raise sqlite3.IntegrityError("one pair already stored")
        if len(calls) == 3:  # the second result's own transaction
            raise KeyboardInterrupt
        real_write(db, items)

    monkeypatch.setattr(store_results, "_write", failing)
    with pytest.raises(KeyboardInterrupt):
        store_results.write(store.db, batch)
    assert [s.result.example_id for s in store.results(exp.id)] == ["e0"]


def test_a_batch_encodes_every_value_as_the_store_does():
    """The one encoder a batch of results shares (``Texts``) writes each value exactly as
    ``json.dumps`` with the store's options does, NaN and infinity made null, one value
    after another: keys of every JSON-able type, objects by their fields or ``repr``, NaN
    inside a text kept; a circular value raises as it does, and the values after it are
    encoded as before."""
    import dataclasses
    import math
    from pathlib import Path

    from agenteval_cli.store.results import Texts, json_default

    @dataclasses.dataclass
    class Point:
        x: int
        label: str

    loop: list = []
    loop.append(loop)
    values = [
        {"final_response": "Réponse — ☃ NaN Infinity", "n": 3, "ok": True, "none": None},
        [1.5, 0.1 + 0.2, 10**30, -0.0],
        {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
        'a bare string with "quotes" and a \ud800 surrogate',
        {"point": Point(1, "p"), "set": {3}, "path": Path("/tmp/x"), "obj": object},
        [],
        {},
        {math.nan: 1, math.inf: 2},  # keys are texts: kept as json.dumps writes them
    ]
    not_finite = [math.nan, 1.0, {"x": math.inf, "y": [-math.inf]}]
    texts = Texts()
    for value in [*values, loop, not_finite, *values]:
        if value is loop:
            with pytest.raises(ValueError, match="Circular reference"):
                texts.json(value)
        elif value is not_finite:
            assert texts.json(value) == '[null,1.0,{"x":null,"y":[null]}]'
        else:
            written = json.dumps(
                value, default=json_default, ensure_ascii=False, separators=(",", ":")
            )
            assert texts.json(value) == written


def test_a_plain_score_and_an_untraced_trace_are_written_as_the_encoder_writes_them():
    """A result's one score and a trace that recorded nothing are written without the
    encoder: a score's text is the one ``json.dumps`` writes with the store's options, for
    the same number seen again (its text kept), zero and minus zero (one key to a dict),
    texts to escape and a lone surrogate, and a score the shortcut does not write (NaN, an
    integer) is the encoder's as before; an untraced trace's text reads back as the empty
    trace with its reason, the reason seen again too."""
    import math
    import random

    from agenteval_cli.core.records import Score, Trace
    from agenteval_cli.store.results import _scores_json, _trace_json, json_default, trace_from_row

    def dumped(value: object) -> str:
        return json.dumps(value, default=json_default, ensure_ascii=False, separators=(",", ":"))

    draw = random.Random(7)
    numbers = [0.0, -0.0, 1.0, 2 / 3, 0.1 + 0.2, 1e-300, 1e300, True, False, None]
    numbers += [draw.random() * draw.choice([1, 1e-9, 1e9]) for _ in range(300)]
    comments = [None, "missing ['warranty']", 'é \u2028 "quoted" \\ \n', "lone \ud800"]
    for number in numbers * 2:  # the second time, a number's kept text
        for comment in comments:
            for key in ("resolution_coverage", 'k"é'):
                written = _scores_json([Score(key, number, comment)])
                assert written == dumped([[key, number, comment]])
    assert _scores_json([Score("k", math.nan, None)]) == '[["k",null,null]]'
    assert _scores_json([Score("k", 3, "c")]) == '[["k",3,"c"]]'
    for why in ("no LangChain run was seen", 'a "quoted" reason é', "lone \udfff") * 2:
        text = _trace_json(Trace(untraced=why))
        assert json.loads(text) == {
            "agent_path": [],
            "handoffs": [],
            "tool_calls": [],
            "model_calls": [],
            "messages": [],
            "tokens": {},
            "untraced": why,
        }
        assert trace_from_row(text, 0.5, None).untraced == why
