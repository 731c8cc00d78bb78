"""--resume: only missing pairs run, nothing is doubled, changed inputs are refused; Ctrl-C
stops dispatching, lets calls in flight finish and prints the resume command."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from conversation_results import conversation, turn
from projects import project, rows

from agenteval_cli.core.records import Example
from agenteval_cli.execution.runner import Runner, RunSettings
from agenteval_cli.results.figures import from_results
from agenteval_cli.store.db import Store
from agenteval_cli.targets import adapt

N = 40

TARGETS = """
import asyncio, os, signal

calls = {"n": 0}

async def answer(inputs):
    await asyncio.sleep(0.002)
    q = inputs["question"]
    return {"final_response": q + (" refund" if int(q.split()[1]) % 2 else " billing")}

async def interrupting(inputs):
    calls["n"] += 1
    if calls["n"] == 15:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the run
    await asyncio.sleep(0.01)
    return await answer(inputs)
"""


def resumable(folder: Path, target: str = "answer") -> Path:
    """Targets 'a' (calling ``target``) and 'b' on N rows, three calls at a time."""
    return project(
        folder,
        TARGETS,
        module="targets.py",
        targets={"a": target, "b": "answer"},
        data=rows(N, question="q {i}", outputs={"must_mention": ["refund"]}),
        prefix="resume",
        evaluators="[resolution_coverage]",
        concurrency=3,
    )


def metrics(db: Path) -> dict[str, dict]:
    with Store(db) as store:
        return {
            e.target: {
                k: v
                for k, v in from_results(s.result for s in store.results(e.id)).metrics().items()
                if "latency" not in k
            }
            for e in store.experiments()
        }


def keys(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT experiment_id, example_id, repetition FROM results").fetchall()


def test_ctrl_c_saves_in_flight_calls_and_resume_finishes_the_same_table(tmp_path, invoke):
    spec = resumable(tmp_path / "p", target="interrupting")
    db = tmp_path / "db"
    stopped = invoke("run", spec, "--store", db)
    assert stopped.exit_code == 130, stopped.output
    assert "interrupted" in stopped.output
    saved = len(keys(db))
    assert 14 <= saved < 2 * N  # the calls in flight at Ctrl-C finished and were saved
    with Store(db) as store:
        experiments = store.experiments()
        assert {e.status for e in experiments} == {"interrupted"}
        names = {e.name for e in experiments}
    command = stopped.output.split("resume with: ", 1)[1].split()
    assert command[:3] == ["agenteval", "run", str(spec)]
    assert command[3] == "--resume" and command[4] in names

    resumed = invoke("run", spec, "--resume", command[4], "--store", db)
    assert resumed.exit_code == 0, resumed.output
    found = keys(db)
    assert len(found) == len(set(found)) == 2 * N
    with Store(db) as store:
        assert {e.status for e in store.experiments()} == {"finished"}

    clean = resumable(tmp_path / "clean")
    assert invoke("run", clean, "--store", tmp_path / "clean.db").exit_code == 0
    assert metrics(db) == metrics(tmp_path / "clean.db")


def test_resume_with_nothing_unfinished_is_a_clear_error(tmp_path, invoke):
    spec = resumable(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    again = invoke("run", spec, "--resume", "--store", db)
    assert again.exit_code == 2
    assert "no unfinished experiment of" in again.output
    assert "Traceback" not in again.output


def interrupted_run(invoke, tmp_path: Path) -> tuple[Path, Path]:
    """A run whose experiments hold only half the results, as after a crash."""
    spec = resumable(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE id % 2")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    return spec, db


def test_resume_runs_only_the_missing_pairs(tmp_path, invoke):
    spec, db = interrupted_run(invoke, tmp_path)
    before = set(keys(db))
    resumed = invoke("run", spec, "--resume", "--store", db)
    assert resumed.exit_code == 0, resumed.output
    assert f"{2 * N - len(before)} call(s) left" in resumed.output
    after = keys(db)
    assert len(after) == len(set(after)) == 2 * N
    assert before <= set(after)


@pytest.mark.parametrize(
    ("changed", "old", "new", "says"),
    [
        pytest.param(
            "spec.yaml",
            "concurrency: 3",
            "concurrency: 2",
            "the spec changed since resume-a-",
            id="a-changed-spec",
        ),
        pytest.param(
            "data.jsonl",
            '"q 3"',
            '"q 3 changed"',
            "the dataset changed since",
            id="a-changed-dataset",
        ),
    ],
)
def test_a_changed_input_is_refused_in_one_line(tmp_path, invoke, changed, old, new, says):
    spec, db = interrupted_run(invoke, tmp_path)
    path = spec.parent / changed
    path.write_text(path.read_text().replace(old, new))
    refused = invoke("run", spec, "--resume", "--store", db)
    assert refused.exit_code == 2
    line = refused.output.strip()
    assert refused.output.startswith(f"error: {path}: {says}")
    assert "run without --resume" in line and "\n" not in line


def test_resume_options_that_make_no_sense_are_refused(tmp_path, invoke):
    spec, db = interrupted_run(invoke, tmp_path)
    assert "leave out --target" in invoke("run", spec, "--resume", "-n", "3", "--store", db).output
    stray = invoke("run", spec, "some-name", "--store", db)
    assert stray.exit_code == 2 and "read only after --resume" in stray.output
    unknown = invoke("run", spec, "--resume", "nope", "--store", db)
    assert unknown.exit_code == 2 and "--resume 'nope': no target or experiment" in unknown.output


def test_stop_lets_calls_in_flight_finish_within_the_grace_period():
    started: list[str] = []

    async def target(inputs):
        started.append(inputs["question"])
        if len(started) == 3:
            runner.stop()
        await asyncio.sleep(0.05 if inputs["question"] != "q2" else 10)
        return {"final_response": inputs["question"]}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[],
        settings=RunSettings(concurrency=3, grace_s=0.5),
    )
    data = [Example(f"e{i}", {"question": f"q{i}"}) for i in range(20)]
    saved = []
    completed = asyncio.run(runner.run(runner.work(data), lambda item, r: saved.append(r)))
    assert completed is False
    assert len(started) == 3  # nothing new was dispatched after stop()
    assert sorted(r.example_id for r in saved) == ["e0", "e1"]  # e2 outlived the grace period


def test_a_second_stop_cancels_at_once():
    async def target(inputs):
        runner.stop()
        runner.stop()
        await asyncio.sleep(10)
        return {}

    runner = Runner(
        targets=[adapt(target, name="t", import_path="x:t")],
        evaluators=[],
        settings=RunSettings(concurrency=2, grace_s=30),
    )
    data = [Example(f"e{i}", {"question": f"q{i}"}) for i in range(4)]
    saved = []
    assert asyncio.run(runner.run(runner.work(data), lambda i, r: saved.append(r))) is False
    assert saved == []


# --- one run at a time: a lock per run, taken before anything is called -------------------

GATED = """

def gated(inputs):
    # logs each call, then waits for the test's go-ahead (a sync target: on a thread)
    import os, pathlib, time

    here = pathlib.Path(__file__).parent
    with open(here / "calls.log", "a") as log:
        log.write(f"{os.getpid()}\\n")
    deadline = time.monotonic() + 20  # a bound, should a second run call it too
    while not (here / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"final_response": inputs["question"] + " refund"}
"""


def gated_run(invoke, tmp_path: Path) -> tuple[Path, Path, Path]:
    """An interrupted run whose target 'a' logs its calls and waits for a 'go' file."""
    folder = tmp_path / "p"
    spec = resumable(folder, target="gated")
    (folder / "targets.py").write_text(TARGETS + GATED)
    (folder / "go").touch()
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE id % 2")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    (folder / "go").unlink()
    (folder / "calls.log").unlink()
    return spec, db, folder


def gated_keys(db: Path) -> list[tuple]:
    """The stored results of the gated target 'a' (target 'b' keeps finishing meanwhile)."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT r.experiment_id, r.example_id, r.repetition FROM results r"
            " JOIN experiments e ON e.id = r.experiment_id WHERE e.target = 'a'"
        ).fetchall()


def lock_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT run_id, pid FROM run_locks").fetchall()


def run_id_of(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        [(run_id,)] = conn.execute("SELECT DISTINCT run_id FROM experiments").fetchall()
    return run_id


def test_a_second_resume_of_a_run_in_progress_is_refused_before_calling_anything(tmp_path, invoke):
    import subprocess
    import sys
    import time

    spec, db, folder = gated_run(invoke, tmp_path)
    with sqlite3.connect(db) as conn:
        missing = (
            N
            - conn.execute(
                "SELECT COUNT(*) FROM results r JOIN experiments e ON e.id = r.experiment_id"
                " WHERE e.target = 'a'"
            ).fetchone()[0]
        )
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agenteval_cli.cli",
            "run",
            str(spec),
            "--resume",
            "--store",
            str(db),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        log = folder / "calls.log"
        while not (log.exists() and lock_rows(db)):  # it holds the lock and is calling
            assert first.poll() is None and time.monotonic() < deadline, first.stdout.read()
            time.sleep(0.05)
        assert lock_rows(db) == [(run_id_of(db), first.pid)]
        before = gated_keys(db)  # 'a' waits for the go-ahead: nothing of it can be stored

        second = invoke("run", spec, "--resume", "--store", db)
        assert second.exit_code == 2, second.output
        line = second.output.strip()
        assert "\n" not in line and "Traceback" not in line
        with Store(db, readonly=True) as store:
            names = ", ".join(sorted(e.name for e in store.experiments()))
        assert line.startswith(f"error: {names}: already being run by process {first.pid} on ")
        assert line.endswith(
            f"(store {db}); a second run at the same time would call the same examples again "
            "(wait for it to finish; nothing was called)"
        )
        assert set(log.read_text().split()) == {str(first.pid)}  # no call of the second
        assert gated_keys(db) == before
    finally:
        (folder / "go").touch()
        output, _ = first.communicate(timeout=120)
    assert first.returncode == 0, output
    found = keys(db)
    assert len(found) == len(set(found)) == 2 * N
    assert log.read_text().split() == [str(first.pid)] * missing  # each missing call, once
    assert lock_rows(db) == []  # released when the run ended


def test_a_resume_while_the_run_itself_goes_on_is_refused(tmp_path, invoke):
    import subprocess
    import sys
    import time

    folder = tmp_path / "p"
    spec = resumable(folder, target="gated")
    (folder / "targets.py").write_text(TARGETS + GATED)
    db = tmp_path / "db"
    run = [sys.executable, "-m", "agenteval_cli.cli", "run", str(spec), "--store", str(db)]
    first = subprocess.Popen(run, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (folder / "calls.log").exists():  # started, and waiting in its first calls
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        resumed = invoke("run", spec, "--resume", "--store", db)
        assert resumed.exit_code == 2, resumed.output
        assert f"already being run by process {first.pid} on " in resumed.output
        assert set((folder / "calls.log").read_text().split()) == {str(first.pid)}
    finally:
        (folder / "go").touch()
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert len(keys(db)) == 2 * N and lock_rows(db) == []


def test_a_dead_holders_lock_is_taken_over(tmp_path, invoke):
    import os
    import socket
    import subprocess
    import sys

    spec, db = interrupted_run(invoke, tmp_path)
    run_id = run_id_of(db)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process
    host = socket.gethostname()
    holders = [
        (gone.pid, None),  # a crashed run
        (os.getpid(), "another-boot:1"),  # its pid since given to another process (this one)
        ("abc", None),  # a row written by hand: no process to wait for
        (0, None),
    ]
    for pid, started in holders:
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO run_locks VALUES (?, ?, ?, ?, 'crashed', '2026-01-01')",
                (run_id, host, pid, started),
            )
            conn.execute("DELETE FROM results WHERE id % 2")
            conn.execute("UPDATE experiments SET status = 'interrupted'")
        resumed = invoke("run", spec, "--resume", "--store", db)
        assert resumed.exit_code == 0, resumed.output
        assert len(keys(db)) == 2 * N
        assert lock_rows(db) == []


def test_a_lock_held_on_another_host_is_refused_with_how_to_remove_it(tmp_path, invoke):
    spec, db = interrupted_run(invoke, tmp_path)
    run_id = run_id_of(db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO run_locks VALUES (?, 'build-7', 4242, NULL, 't', '2026-01-01T00:00:00')",
            (run_id,),
        )
    before = keys(db)
    refused = invoke("run", spec, "--resume", "--store", db)
    assert refused.exit_code == 2
    assert refused.output.strip().endswith(
        "already being run by process 4242 on build-7 since 2026-01-01T00:00:00 (store "
        f"{db}); a second run at the same time would call the same examples again (wait for "
        "it to finish; nothing was called; if it is no longer running on build-7, remove its "
        f"lock: sqlite3 {db} \"DELETE FROM run_locks WHERE run_id = '{run_id}'\")"
    )
    assert keys(db) == before
    with sqlite3.connect(db) as conn:
        conn.execute(f"DELETE FROM run_locks WHERE run_id = '{run_id}'")  # as the hint says
    assert invoke("run", spec, "--resume", "--store", db).exit_code == 0


def test_a_lock_is_held_by_one_store_until_it_closes(tmp_path):
    import os

    import pytest

    from agenteval_cli.store.tx import StoreError

    path = tmp_path / "s.db"
    with Store(path) as one:
        one.lock_run("r1", "run one")
        one.lock_run("r1", "run one")  # again by its holder: nothing changes
        with Store(path) as other:  # another holder, in this same process
            with pytest.raises(StoreError, match=r"^run one: already being run by process "):
                other.lock_run("r1", "run one")
            other.lock_run("r2", "run two")  # another run is free
            assert sorted(lock_rows(path)) == [("r1", os.getpid()), ("r2", os.getpid())]
        assert lock_rows(path) == [("r1", os.getpid())]
    assert lock_rows(path) == []


LOGGING = """
import json
from pathlib import Path

def answer(inputs):
    with open(Path(__file__).parent / "calls.log", "a") as log:
        log.write(json.dumps(inputs) + "\\n")
    return {"final_response": "noted"}
"""


def test_a_stored_conversation_is_skipped_by_resume_and_redone_whole_by_retry_errors(
    tmp_path, invoke
):
    """A conversation is one pair, as a single-turn row is: resume leaves a stored one as it
    is, errored or not; --retry-errors replaces an errored one, every turn of it."""
    data = [
        {"id": f"c{i}", "inputs": {"turns": [f"refund order {i}", f"and order {i}'s plan?"]}}
        for i in range(3)
    ]
    spec = project(tmp_path / "p", LOGGING, data=data, prefix="conv")
    log = tmp_path / "p" / "calls.log"
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    answered = conversation("c0")
    errored = conversation(
        "c1",
        turn("billing", "refund order 1", "refunded"),
        turn("account", "and order 1's plan?", "", error="ValueError: no plan"),
    )
    with Store(db) as store:
        [exp] = store.experiments()
        rows = {s.result.example_id: s for s in store.results(exp.id)}
        for result in (answered, errored):
            stored = rows[result.example_id]
            example = Example(result.example_id, stored.inputs, stored.reference_outputs)
            store.add_result(exp.id, example, result, replace=True)
        store.db.execute("DELETE FROM results WHERE example_id = 'c2'")
        store.reopen_experiment(exp.id)  # as after a crash
    log.unlink()

    def stored_turns() -> dict[str, list]:
        with Store(db) as store:
            return {s.result.example_id: s.result.turns for s in store.results(exp.id)}

    resumed = invoke("run", spec, "--resume", "--store", db)
    assert resumed.exit_code == 3, resumed.output  # the stored conversation's error stays
    assert "1 call(s) left" in resumed.text and "1 × ValueError: no plan" in resumed.text
    assert log.read_text() and all("order 2" in line for line in log.read_text().splitlines())
    after = stored_turns()
    assert sorted(after) == ["c0", "c1", "c2"]
    assert (after["c0"], after["c1"]) == (answered.turns, errored.turns)

    log.unlink()
    retried = invoke("run", spec, "--resume", "--retry-errors", "--store", db)
    assert retried.exit_code == 0, retried.output
    assert "1 call(s) left" in retried.text
    assert log.read_text() and all("order 1" in line for line in log.read_text().splitlines())
    assert [key[1:] for key in keys(db)].count(("c1", 0)) == 1  # replaced, not doubled
    with Store(db) as store:
        again = {s.result.example_id: s.result for s in store.results(exp.id)}
    assert again["c1"].error is None and again["c1"].turns != errored.turns
    assert again["c0"].turns == answered.turns
