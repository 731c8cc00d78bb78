"""A run's last second: what a target does to the process (its working directory, its
standard streams, its environment, the processes it starts) does not change where the
outputs go, what is redacted, or how the run ends; an output that cannot be written is
one line and exit 4, never a traceback or exit 1 (which means the gate failed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from projects import answer_after, project

ROOT = Path(__file__).resolve().parent.parent


def first_runs(tmp_path: Path, body: str, *, extra: str = "") -> Path:
    """A project of one target whose ``answer`` runs ``body`` first, on three rows."""
    code = answer_after(
        body,
        imports="os, shutil, subprocess, sys",
        returns="{'final_response': inputs['question'] * 20000}",
    )
    return project(tmp_path, code, dataset="rows.jsonl", concurrency=1, extra=extra)


def agenteval(tmp_path: Path, *args: str, **popen: object) -> subprocess.Popen:
    """``agenteval ARGS`` as a process of its own, in ``tmp_path``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("AGENTEVAL_STORE", None)
    command = [sys.executable, "-m", "agenteval_cli.cli", *args]
    return subprocess.Popen(command, cwd=tmp_path, env=env, **popen)  # type: ignore[call-overload]


def test_a_target_that_changes_folder_moves_no_output(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    spec = first_runs(tmp_path, "os.chdir(HERE / 'elsewhere')", extra="thresholds: {t: {}}\n")
    names = ["r.json", "r.html", "r.md", "r.xml", "b.json"]
    result = invoke(
        "run", spec.name, "--store", "db/s.db", "--json", "r.json", "--html", "r.html",
        "--markdown", "r.md", "--junit", "r.xml", "--save-baseline", "b.json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert Path.cwd() == tmp_path  # put back when the calls ended
    assert [name for name in names if (tmp_path / name).is_file()] == names
    assert not list((tmp_path / "elsewhere").iterdir())
    assert "a target changed the working directory to" in result.text
    assert len(json.loads((tmp_path / "r.json").read_text())["experiments"][0]["results"]) == 3


def test_a_secret_the_target_pops_stays_redacted_everywhere(tmp_path, monkeypatch, invoke):
    secret = "sk-popped-" + os.urandom(8).hex()
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.chdir(tmp_path)
    spec = first_runs(
        tmp_path,
        "key = os.environ.pop('OPENAI_API_KEY', 'gone')\n"
        "raise RuntimeError(f'the provider refused key {key} ({key[:9]}...)')",
    )
    result = invoke(
        "run", spec, "--store", "db/s.db", "--json", "r.json", "--markdown", "r.md"
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "the provider refused key ***" in result.text
    assert "OPENAI_API_KEY" not in os.environ  # the target did pop it
    for text in (
        result.output,
        (tmp_path / "r.json").read_text(),
        (tmp_path / "r.md").read_text(),
        (tmp_path / "db" / "s.db").read_bytes().decode("latin-1"),
    ):
        assert secret not in text and secret[:9] not in text


def test_an_output_folder_removed_mid_run_is_one_line_and_exit_4(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    spec = first_runs(
        tmp_path,
        "if (HERE / 'out').is_dir():\n"
        "    shutil.rmtree(HERE / 'out')\n"
        "    (HERE / 'out').write_text('a file now')",
    )
    result = invoke("run", spec, "--store", "db/s.db", "--json", "out/r.json", "-q")
    assert result.exit_code == 4, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "cannot write the run's output" in errors[0]
    assert "3 results are saved in db/s.db" in result.text
    stored = invoke("experiments", "--store", "db/s.db", "--json")
    assert json.loads(stored.output)["experiments"][0]["results"] == 3


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_output_folder_made_read_only_mid_run_is_exit_4(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    spec = first_runs(tmp_path, "(HERE / 'out').chmod(0o555)")
    try:
        result = invoke("run", spec, "--store", "db/s.db", "--html", "out/r.html", "-q")
    finally:
        (tmp_path / "out").chmod(0o755)
    assert result.exit_code == 4, result.output
    assert "Permission denied" in result.text and "Traceback" not in result.output


def test_a_target_that_closes_stdout_still_gets_its_table_and_json(tmp_path):
    spec = first_runs(tmp_path, "sys.stdout.close()")
    for json_to in ("r.json", "-"):
        run = agenteval(
            tmp_path, "run", spec.name, "--store", "db/s.db", "--json", json_to,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert "Traceback" not in err, err
        document = out if json_to == "-" else (tmp_path / "r.json").read_text()
        assert len(json.loads(document)["experiments"][0]["results"]) == 3
        shown = err if json_to == "-" else out
        assert "error rate" in shown  # the table


@pytest.mark.parametrize("json_to", ["-", None])
def test_a_reader_that_closed_the_pipe_is_exit_4_with_one_line(tmp_path, json_to):
    spec = first_runs(tmp_path, "pass")
    extra = ["--json", json_to] if json_to else []
    run = agenteval(
        tmp_path, "run", spec.name, "--store", "db/s.db", *extra,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    run.stdout.close()  # the reader is gone before a byte is written: `| head -c 0`
    err = run.stderr.read()
    assert run.wait(timeout=120) == 4, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "error: the reader of stdout closed the pipe" in err
    assert "3 results are saved in db/s.db" in " ".join(err.split())


def test_processes_a_target_leaves_running_are_ended_and_named(tmp_path):
    stubborn = (  # ignores SIGTERM, and says so in a file once it does
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "open(sys.argv[1], 'w').close(); time.sleep(25)"
    )
    spec = first_runs(
        tmp_path,
        "subprocess.Popen(['sleep', '25'])\n"
        "if inputs['question'] == 'q0':\n"
        f"    subprocess.Popen([sys.executable, '-c', {stubborn!r}, str(HERE / 'ready')])\n"
        "    while not (HERE / 'ready').exists(): pass",
    )
    started = time.monotonic()
    run = agenteval(
        tmp_path, "run", spec.name, "--store", "db/s.db", "-q",
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    out, _ = run.communicate(timeout=60)  # EOF on the pipe: no process holds it any more
    assert time.monotonic() - started < 20, out
    assert run.returncode == 0, out
    text = " ".join(out.split())
    assert "a target left 4 process(es) running after the run: " in text, text
    assert "(sleep 25)" in text and "and 1 more; ended 1 of them by SIGKILL" in text, text


def test_processes_running_before_the_run_are_left_alone(tmp_path, monkeypatch):
    from agenteval_cli import api

    monkeypatch.chdir(tmp_path)
    spec = first_runs(tmp_path, "subprocess.Popen(['sleep', '25'])")
    before = subprocess.Popen(["sleep", "30"])
    try:
        report = api.run(spec, store=tmp_path / "db" / "s.db")
        assert before.poll() is None  # still running
    finally:
        before.kill()
        before.wait()
    ended = [line for line in report.warnings if "a target left" in line]
    assert len(ended) == 1 and "left 3 process(es)" in ended[0], report.warnings
    assert str(before.pid) not in ended[0]
