"""Proof under faults: kill -9 at random points then --resume, flaky and rate-limited targets,
two processes writing to one store at once."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import projects
import pytest
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.results.figures import from_results
from agenteval_cli.store.db import Store

pytestmark = pytest.mark.slow  # kill -9, signals and two processes: seconds per test

ROOT = Path(__file__).resolve().parent.parent
N = 200
TRIALS = 10

TARGETS = """
import asyncio, random

import httpx

async def fast(inputs):
    await asyncio.sleep(0.004)
    q = inputs["question"]
    return {"final_response": q + (" billing refund" if int(q.split()[1]) % 3 else " billing")}

async def slow(inputs):
    await asyncio.sleep(0.02)
    return await fast(inputs)

_rng = random.Random()

async def flaky(inputs):
    if _rng.random() < 0.10:
        raise RuntimeError("random failure")
    return await fast(inputs)

_calls = {}

async def limited(inputs):
    q = inputs["question"]
    _calls[q] = _calls.get(q, 0) + 1
    if _calls[q] <= 3:
        request = httpx.Request("POST", "https://api.example.com/v1/chat")
        response = httpx.Response(429, headers={"retry-after-ms": "1"}, request=request)
        raise httpx.HTTPStatusError("429 Too Many Requests", request=request, response=response)
    return await fast(inputs)
"""


MENTION = {"must_mention": ["billing", "refund"]}


def faulty(
    folder: Path,
    targets: dict[str, str],
    extra: str = "",
    *,
    code: str = TARGETS,
    concurrency: int = 4,
) -> Path:
    """``targets`` (a name to a function of ``code``) on N rows."""
    return projects.project(
        folder,
        code,
        module="targets.py",
        targets=targets,
        data=projects.rows(N, ids="e{i:03d}", question="question {i}", outputs=MENTION),
        prefix="faults",
        evaluators="[resolution_coverage]",
        concurrency=concurrency,
        extra=extra,
    )


def agenteval(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "agenteval_cli.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"},
        **kwargs,
    )


def result_count(db: Path, conn: sqlite3.Connection | None = None) -> int:
    if conn is None and not db.exists():
        return 0
    try:
        if conn is not None:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        with sqlite3.connect(db, timeout=5) as fresh:
            return fresh.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def metrics_by_target(db: Path) -> dict[str, dict]:
    """Each experiment's metrics, latency left out (it is the one thing that may differ)."""
    with Store(db) as store:
        out = {}
        for experiment in store.experiments():
            metrics = from_results(s.result for s in store.results(experiment.id)).metrics()
            out[experiment.target] = {k: v for k, v in metrics.items() if "latency" not in k}
        return out


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT e.target, r.example_id, r.repetition, r.error FROM results r"
            " JOIN experiments e ON e.id = r.experiment_id"
        ).fetchall()


def assert_complete(db: Path, targets: int) -> None:
    found = rows(db)
    keys = [(t, e, r) for t, e, r, _ in found]
    assert len(keys) == N * targets
    assert len(set(keys)) == len(keys), "a result was stored twice"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def run_in_process(*args: str):
    return CliRunner().invoke(app, list(args))


def kill_when(folder: Path, kill_at: int) -> tuple[int, str]:
    """Start ``agenteval run`` and kill -9 it once ``kill_at`` results are stored.

    Returns the results stored at the kill, and the run's stderr if it ended before the kill.
    The 20 ms target keeps a group commit to a handful of results, so a kill lands near
    ``kill_at`` even when a loaded machine delays the polling.
    """
    spec = faulty(folder, {"a": "slow", "b": "slow"})
    db = folder / "db"
    process = agenteval("run", str(spec), "--store", str(db))
    deadline = time.monotonic() + 120
    while result_count(db) == 0 and process.poll() is None:  # starting up: poll gently
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    with sqlite3.connect(db, timeout=5) as conn:
        while result_count(db, conn) < kill_at and process.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.002)
    ended_early = process.poll() is not None
    os.kill(process.pid, signal.SIGKILL)
    _, stderr = process.communicate()
    return result_count(db), stderr if ended_early else ""


# the kill points, drawn once; the trials run in pairs (the killed runs two at a time), one
# test per pair, so that test workers share them
_rng = random.Random(6)
POINTS = [_rng.randint(1, 2 * N - 20) for _ in range(TRIALS)]
PAIRS = [range(i, min(i + 2, TRIALS)) for i in range(0, TRIALS, 2)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The metrics of the run the killed runs stand for, run once without a kill."""
    folder = tmp_path_factory.mktemp("baseline")
    spec = faulty(folder, {"a": "fast", "b": "fast"})
    result = run_in_process("run", str(spec), "--store", str(folder / "db"))
    assert result.exit_code == 0, result.output
    return metrics_by_target(folder / "db")


def test_the_kill_points_are_ten_trials_in_pairs():
    assert [i for pair in PAIRS for i in pair] == list(range(TRIALS)) and TRIALS == 10


@pytest.mark.parametrize("trials", PAIRS, ids=[f"trials {p.start}-{p.stop - 1}" for p in PAIRS])
def test_kill_9_at_random_points_then_resume_gives_the_uninterrupted_result(
    trials, tmp_path, uninterrupted
):
    points = [POINTS[i] for i in trials]
    folders = [tmp_path / f"trial{i}" for i in trials]
    with ThreadPoolExecutor(max_workers=2) as pool:  # the killed runs, two at a time
        outcomes = list(pool.map(kill_when, folders, points))
    killed = [stored for stored, _ in outcomes]
    # every kill landed mid-run, with some results saved and some missing
    assert all(0 < k < 2 * N for k in killed), (points, outcomes)
    print(f"\nkill -9 after {points} results requested; stored at the kill: {killed}")
    for folder, killed_at in zip(folders, killed, strict=True):
        db = folder / "db"
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        resumed = run_in_process("run", str(folder / "spec.yaml"), "--resume", "--store", str(db))
        assert resumed.exit_code == 0, resumed.output
        assert f"{2 * N - killed_at} call(s) left" in resumed.output.replace("\n", " ")
        assert_complete(db, targets=2)
        assert metrics_by_target(db) == uninterrupted


def test_a_target_failing_10_percent_completes_with_the_errors_recorded(tmp_path):
    spec = faulty(tmp_path, {"flaky": "flaky"}, "retries: {max: 0}\nmax_error_rate: 0.25\n")
    result = CliRunner().invoke(
        app, ["run", str(spec), "--store", str(tmp_path / "db"), "--json", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 0, result.output  # the errors stay under max_error_rate
    [experiment] = json.loads((tmp_path / "r.json").read_text())["experiments"]
    results = experiment["results"]
    failed = [r for r in results if r["error"]]
    assert len(results) == N
    assert 2 <= len(failed) <= 45  # 10% of 200, with a wide margin for chance
    assert {r["error"] for r in failed} == {"RuntimeError: random failure"}
    # coverage needs the answer a failed call never gave: null, saying why
    assert all(r["scores"] == {"resolution_coverage": None} for r in failed)
    assert all(
        r["comments"]["resolution_coverage"].startswith("no answer: the target raised")
        for r in failed
    )
    ok = [r for r in results if not r["error"]]
    expected = sum(1.0 if int(r["example_id"][1:]) % 3 else 0.5 for r in ok) / len(ok)
    assert experiment["metrics"]["resolution_coverage"] == pytest.approx(expected)
    assert experiment["metrics"]["error_rate"] == pytest.approx(len(failed) / N)

    # --retry-errors runs only the failed pairs again, replacing their rows
    again = CliRunner().invoke(
        app, ["run", str(spec), "--resume", "--retry-errors", "--store", str(tmp_path / "db")]
    )
    assert again.exit_code == 0, again.output
    assert f"{len(failed)} call(s) left" in again.output.replace("\n", " ")
    found = rows(tmp_path / "db")
    assert len(found) == N and len({(e, r) for _, e, r, _ in found}) == N
    assert sum(1 for *_, error in found if error) < len(failed)


def test_a_target_answering_429_three_times_succeeds_with_retries(tmp_path):
    spec = faulty(
        tmp_path,
        {"limited": "limited"},
        "retries: {max: 5, backoff: exponential, on: [rate_limit, timeout, connection]}\n",
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--store", str(tmp_path / "db")])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "db") as conn:
        found = conn.execute("SELECT error, attempts, COUNT(*) FROM results GROUP BY 1, 2")
        assert found.fetchall() == [(None, 4, N)]


def test_two_processes_writing_to_one_store_lose_nothing(tmp_path):
    """A subprocess and this test process run at the same time into one store."""
    first = faulty(tmp_path / "one", {"a": "slow", "b": "slow"})
    second = faulty(tmp_path / "two", {"c": "fast"})
    db = tmp_path / "shared.db"
    process = agenteval("run", str(first), "--store", str(db))
    deadline = time.monotonic() + 120
    while result_count(db) == 0:
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.005)
    here = run_in_process("run", str(second), "--store", str(db))
    still_running = process.poll() is None
    _, err = process.communicate(timeout=120)
    assert here.exit_code == 0, here.output
    assert process.returncode == 0, err
    assert still_running, "the two runs did not overlap"
    assert_complete(db, targets=3)
    with Store(db) as store:
        assert sorted(e.status for e in store.experiments()) == ["finished"] * 3


STUCK_TARGETS = """
import asyncio, os, pathlib

def _stuck_here(inputs):
    if inputs["question"] == "question 5" and os.environ.get("STUCK") == "1":
        pathlib.Path(os.environ["MARK"]).touch()
        return True
    return False

async def busy(inputs):
    if _stuck_here(inputs):
        while True:  # never awaits: the event loop never runs again
            pass
    await asyncio.sleep(0.001)
    return {"final_response": "billing refund"}

async def swallow(inputs):
    if _stuck_here(inputs):
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                pass  # never lets itself be cancelled
    await asyncio.sleep(0.001)
    return {"final_response": "billing refund"}
"""


def stuck_run(folder: Path, target: str, signals: list[str]) -> tuple[int, str, float, Path]:
    """Run ``target`` (concurrency 1) until it is stuck at example 5, send ``signals`` 0.3 s
    apart, and return the exit code, stderr, seconds from the first signal to the exit, and
    the store."""
    spec = faulty(folder, {target: target}, code=STUCK_TARGETS, concurrency=1)
    mark, db = folder / "stuck", folder / "db"
    process = subprocess.Popen(
        [sys.executable, "-m", "agenteval_cli.cli", "run", str(spec), "--store", str(db)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300", "STUCK": "1", "MARK": str(mark)},
    )
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached the stuck example"
        time.sleep(0.01)
    time.sleep(0.3)  # stuck for good
    first = time.monotonic()
    for name in signals:
        process.send_signal(getattr(signal, name))
        time.sleep(0.3)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the run survived " + ", ".join(signals)) from None
    return process.returncode, err, time.monotonic() - first, db


def assert_saved_and_interrupted(db: Path, err: str) -> None:
    """The five results before the stuck call are kept, the experiment is interrupted."""
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT example_id FROM results ORDER BY example_id").fetchall()
        status = conn.execute("SELECT status FROM experiments").fetchall()
    assert stored == [(f"e{i:03d}",) for i in range(5)]
    assert status == [("interrupted",)]
    assert "5 results were saved" in err
    assert "resume with: agenteval run" in err
    assert "Traceback" not in err


def test_a_busy_loop_ends_on_a_second_ctrl_c_with_every_finished_result_saved(tmp_path):
    code, err, took, db = stuck_run(tmp_path, "busy", ["SIGINT", "SIGINT"])
    assert code == 130, err
    # one second after the second Ctrl-C (0.3 s after the first), not the 5 s grace
    assert took < 5, took
    assert_saved_and_interrupted(db, err)
    text = " ".join(err.split())
    assert (
        "interrupted by force: target 'busy' (example 'e005') held the event loop and never "
        "gave it back, at targets.py:" in text
    )
    assert text.split("at targets.py:")[1].split()[0] in ("12", "13")  # the busy loop's lines
    assert "(in busy) (blocking code or a busy loop in an async target)" in text
    # the run resumes where it stopped (the target no longer stuck)
    spec = str(tmp_path / "spec.yaml")
    resumed = run_in_process("run", spec, "--resume", "--store", str(db))
    assert resumed.exit_code == 0, resumed.output
    assert "195 call(s) left" in " ".join(resumed.output.split())
    assert_complete(db, targets=1)


def test_a_busy_loop_ends_on_sigterm_after_the_grace_period(tmp_path):
    code, err, took, db = stuck_run(tmp_path, "busy", ["SIGTERM"])
    assert code == 130, err
    assert 5.5 <= took < 20, took  # the 5 s grace, one more for cancelling, then the end
    assert_saved_and_interrupted(db, err)


def test_a_target_swallowing_cancellation_ends_on_ctrl_c_then_sigterm(tmp_path):
    code, err, took, db = stuck_run(tmp_path, "swallow", ["SIGINT", "SIGTERM"])
    assert code == 130, err
    assert took < 5, took
    assert_saved_and_interrupted(db, err)
    text = " ".join(err.split())
    assert "target 'swallow' (example 'e005') did not end when cancelled" in text


LEFTOVER_TARGETS = """
import asyncio


async def stubborn():
    while True:
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            pass  # swallows every cancellation


async def target(inputs):
    asyncio.ensure_future(stubborn())
    return {"final_response": inputs["question"] + " billing refund"}
"""


def test_background_tasks_that_swallow_cancellation_do_not_keep_a_finished_run_alive(tmp_path):
    spec = faulty(tmp_path, {"leaky": "target"}, code=LEFTOVER_TARGETS)
    db = tmp_path / "db"
    started = time.monotonic()
    process = agenteval("run", str(spec), "--store", str(db))
    try:
        out, err = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("the run never ended: the loop waited for its leftovers") from None
    took = time.monotonic() - started
    assert process.returncode == 0, err
    assert_complete(db, targets=1)
    assert {error for *_, error in rows(db)} == {None}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM experiments").fetchall() == [("finished",)]
    text = " ".join(err.split())
    assert text.count("background task") == 1, err  # one warning for all of them
    assert (
        f"warning: {N} background task(s) started by the targets ignored cancellation and "
        "were abandoned 1 s after the run ended (stubborn)" in text
    )
    assert "Task was destroyed but it is pending" not in err and "Traceback" not in err
    assert "resolution coverage" in out  # the table of a normal finished run
    assert took < 45, took  # start-up, 200 instant calls and one second of grace


def test_sighup_ends_a_run_like_sigterm_saving_and_printing_the_resume_command(tmp_path):
    """A closed terminal or a dropped ssh session: the run stops as on Ctrl-C."""
    code, err, took, db = stuck_run(tmp_path, "swallow", ["SIGHUP", "SIGHUP"])
    assert code == 130, err
    assert took < 5, took
    assert_saved_and_interrupted(db, err)
    text = " ".join(err.split())
    assert "interrupted: 5 results were saved in" in text
    assert "resume with: agenteval run" in text and "--resume" in text
    # not locked: it resumes where it stopped (the target no longer stuck)
    resumed = run_in_process("run", str(tmp_path / "spec.yaml"), "--resume", "--store", str(db))
    assert resumed.exit_code == 0, resumed.output
    assert_complete(db, targets=1)


def before_the_handler(err: str) -> bool:
    """A traceback from before agenteval could set a handler: Python's own start, or the
    import of the (standard-library only) module that sets it."""
    import re

    frames = re.findall(r'File "[^"]*/agenteval_cli/([^"]*)", line (\d+)', err)
    # the cli package's lines up to the one that sets the handler (that call included: the
    # signal can land inside signal.signal itself)
    cli_init = (ROOT / "agenteval_cli" / "cli" / "__init__.py").read_text().splitlines()
    setting = next(i for i, text in enumerate(cli_init, 1) if "quiet_while_importing()" in text)
    early = {("__init__.py", None), ("cli/stop_signals.py", None)}
    early |= {("cli/__init__.py", str(line)) for line in range(1, setting + 1)}
    return "init_import_site" in err or (
        "Traceback" in err
        and all((path, line) in early or (path, None) in early for path, line in frames)
    )


def test_ctrl_c_while_the_commands_load_is_one_line_and_no_traceback():
    # Python's own start (site-packages) comes first and is not agenteval's: start after it
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    python_start = time.monotonic() - began
    codes = []
    for delay in (0.0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3):
        delay += python_start
        process = subprocess.Popen(
            [sys.executable, "-m", "agenteval_cli.cli", "experiments", "--store", "/nonexistent"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        if before_the_handler(err):
            continue  # still in Python's start, or loading the module that sets the handler
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err)
        codes.append(process.returncode)
        if process.returncode == 130:
            assert len(err.strip().splitlines()) <= 1, err
    assert 130 in codes, codes
