"""How every command ends, whichever it is: a reader of stdout that went away (EPIPE,
``agenteval ... | head -c 10``) is exit 4 with one line, never Click's exit 1 (which means
the gate failed); a stop (Ctrl-C, SIGTERM, SIGHUP) is exit 130 with one line saying what
stays, never a traceback nor silence. Each in its own process, as a shell runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import projects
import pytest

ROOT = Path(__file__).resolve().parent.parent
READER_GONE = "error: the reader of stdout closed the pipe before the output was written"
STOPPED = "what was written before stays written"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A folder with a dataset, a spec and a store holding one finished run of target t."""
    import agenteval_cli as agenteval

    base = tmp_path_factory.mktemp("endings")
    spec = projects.project(
        base,
        "def answer(inputs):\n    return {'final_response': 'x'}\n",
        targets={"t": "answer", "u": "answer"},
        dataset="rows.jsonl",
    )
    assert agenteval.run(spec, store=base / "s.db").status == "finished"
    return base


def environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("AGENTEVAL_STORE", None)
    return env


COMMANDS = [
    ["--help"],
    ["run", "--help"],
    ["evaluators", "list"],
    ["evaluators", "show", "routing_accuracy"],
    ["dataset", "validate", "rows.jsonl"],
    ["experiments", "--store", "s.db"],
    ["experiments", "--json", "--store", "s.db"],
    ["compare", "t", "u", "--store", "s.db"],
    ["cache", "info", "--store", "s.db"],
    ["view", "--no-open", "--store", "s.db"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_reader_gone_is_exit_4_with_one_line_for_every_command(project, args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written: `| head -c 0`
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agenteval_cli.cli", *args],
            cwd=project,
            env=environment(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines()[-1] == READER_GONE, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.count(READER_GONE) == 1


def test_a_command_that_already_failed_keeps_its_exit_code(project):
    """A bad input (exit 2) whose reader is gone too is still a bad input."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agenteval_cli.cli", "compare", "nobody", "--store", "s.db"],
            cwd=project,
            env=environment(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr


# A command held where it opens the store (or the dataset), so that a stop lands inside it;
# "ready" on stderr says it is there. Everything else is the real command in its process.
HELD = """
import sys, time
import agenteval_cli.store.db as db
import agenteval_cli.data.examples as examples

def held(original):
    def wait(*args, **kwargs):
        sys.stderr.write("ready\\n"); sys.stderr.flush()
        time.sleep(60)
        return original(*args, **kwargs)
    return wait

db.Store.__init__ = held(db.Store.__init__)
examples.check_file = held(examples.check_file)
sys.argv = ["agenteval", *sys.argv[1:]]
from agenteval_cli.cli import main
main()
"""

STOPPED_COMMANDS = [
    ["experiments", "--store", "s.db"],
    ["compare", "t", "u", "--store", "s.db"],
    ["report", "t", "-o", "r.html", "--store", "s.db"],
    ["cache", "info", "--store", "s.db"],
    ["view", "--no-open", "--store", "s.db"],
    ["dataset", "validate", "rows.jsonl"],
]


def stopped(project: Path, args: list[str], signum: int) -> tuple[int, list[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", HELD, *args],
        cwd=project,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    assert first == "ready\n", first + process.communicate(timeout=60)[1]
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    return process.returncode, err.splitlines()


@pytest.mark.parametrize("args", STOPPED_COMMANDS, ids=" ".join)
def test_ctrl_c_is_one_line_and_exit_130_for_every_command(project, args):
    code, lines = stopped(project, args, signal.SIGINT)
    assert code == 130, lines
    assert lines == [f"interrupted (Ctrl-C); {STOPPED}"]


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_take_the_same_route(project, name):
    code, lines = stopped(project, ["experiments", "--store", "s.db"], getattr(signal, name))
    assert code == 130, lines
    assert lines == [f"interrupted ({name}); {STOPPED}"]


def test_ctrl_c_in_process_is_the_same_line(project, invoke, monkeypatch):
    """Through Typer's runner too (a command the API's callers embed)."""
    from agenteval_cli.store import db

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(db.Store, "__init__", interrupted)
    result = invoke("experiments", "--store", project / "s.db")
    assert result.exit_code == 130
    assert f"interrupted (Ctrl-C); {STOPPED}" in result.output
    assert "Traceback" not in result.output and "Aborted" not in result.output


def test_ctrl_c_while_a_command_makes_a_class_is_one_line_and_exit_130(project, monkeypatch):
    # Python 3.11 turns a KeyboardInterrupt raised while a class is being made (a dataclass's
    # fields, as a command imports a module) into a RuntimeError caused by it
    from typer.testing import CliRunner

    from agenteval_cli import api
    from agenteval_cli.cli import app

    class Stopped:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt("Ctrl-C")

    def listing(**_: object) -> list:
        type("Listed", (), {"run_id": Stopped()})  # as the signal lands mid-definition
        return []

    monkeypatch.setattr(api, "list_experiments", listing)
    result = CliRunner().invoke(app, ["experiments", "--store", str(project / "s.db")])
    assert result.exit_code == 130, result.output
    assert f"interrupted (Ctrl-C); {STOPPED}" in result.output
    assert "Traceback" not in result.output and "RuntimeError" not in result.output
