"""--resume: only missing pairs run, nothing is doubled, changed inputs are refused; Ctrl-C
stops dispatching, lets calls in flight finish and prints the resume command."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.metrics import summarize
from agenteval_cli.records import Example
from agenteval_cli.runner import Runner, RunSettings
from agenteval_cli.store import Store
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


def project(folder: Path, target: str = "answer", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "targets.py").write_text(TARGETS)
    (folder / "data.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": f"e{i}",
                    "inputs": {"question": f"q {i}"},
                    "outputs": {"must_mention": ["refund"]},
                }
            )
            + "\n"
            for i in range(N)
        )
    )
    spec = folder / "spec.yaml"
    spec.write_text(
        f"experiment_prefix: resume\ndataset: data.jsonl\ntargets:\n  a: targets.py:{target}\n"
        f"  b: targets.py:answer\nevaluators: [resolution_coverage]\nconcurrency: 3\n{extra}"
    )
    return spec


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def metrics(db: Path) -> dict[str, dict]:
    with Store(db) as store:
        return {
            e.target: {
                k: v
                for k, v in summarize(s.result for s in store.results(e.id)).metrics().items()
                if "latency" not in k
            }
            for e in store.experiments()
        }


def keys(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT experiment_id, example_id, repetition FROM results").fetchall()


def test_ctrl_c_saves_in_flight_calls_and_resume_finishes_the_same_table(tmp_path):
    spec = project(tmp_path / "p", target="interrupting")
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

    clean = project(tmp_path / "clean")
    assert invoke("run", clean, "--store", tmp_path / "clean.db").exit_code == 0
    assert metrics(db) == metrics(tmp_path / "clean.db")


def test_resume_with_nothing_unfinished_is_a_clear_error(tmp_path):
    spec = project(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    again = invoke("run", spec, "--resume", "--store", db)
    assert again.exit_code == 2
    assert "no unfinished experiment of" in again.output
    assert "Traceback" not in again.output


def interrupted_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run whose experiments hold only half the results, as after a crash."""
    spec = project(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE id % 2")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    return spec, db


def test_resume_runs_only_the_missing_pairs(tmp_path):
    spec, db = interrupted_run(tmp_path)
    before = set(keys(db))
    resumed = invoke("run", spec, "--resume", "--store", db)
    assert resumed.exit_code == 0, resumed.output
    assert f"{2 * N - len(before)} call(s) left" in resumed.output
    after = keys(db)
    assert len(after) == len(set(after)) == 2 * N
    assert before <= set(after)


def test_a_changed_spec_is_refused(tmp_path):
    spec, db = interrupted_run(tmp_path)
    spec.write_text(spec.read_text().replace("concurrency: 3", "concurrency: 2"))
    refused = invoke("run", spec, "--resume", "--store", db)
    assert refused.exit_code == 2
    line = refused.output.strip()
    assert line.startswith(f"error: {spec}: the spec changed since resume-a-")
    assert "run without --resume" in line and "\n" not in line


def test_a_changed_dataset_is_refused(tmp_path):
    spec, db = interrupted_run(tmp_path)
    data = spec.parent / "data.jsonl"
    data.write_text(data.read_text().replace('"q 3"', '"q 3 changed"'))
    refused = invoke("run", spec, "--resume", "--store", db)
    assert refused.exit_code == 2
    assert refused.output.startswith(f"error: {data}: the dataset changed since")


def test_resume_options_that_make_no_sense_are_refused(tmp_path):
    spec, db = interrupted_run(tmp_path)
    assert "leave out --target" in invoke("run", spec, "--resume", "-n", "3", "--store", db).output
    stray = invoke("run", spec, "some-name", "--store", db)
    assert stray.exit_code == 2 and "read only after --resume" in stray.output
    unknown = invoke("run", spec, "--resume", "nope", "--store", db)
    assert unknown.exit_code == 2 and "no experiment named 'nope'" in unknown.output


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
