"""Processes a target starts that detach themselves (a double fork: ``sh -c "sleep 41 &"``,
``setsid sleep 42 &``, a Python daemon forking twice) are ended at the end of the run like
any other it left running: for the run, agenteval adopts orphans (Linux's child
subreaper), so they stay below it where the sweep sees them, and a pipe reader sees EOF
when agenteval exits, not when they do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from projects import project

ROOT = Path(__file__).resolve().parent.parent

DAEMON = (  # the classic daemon: fork, setsid, fork again, the grandchild sleeps
    "import os, time\n"
    "if os.fork(): os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): os._exit(0)\n"
    "time.sleep(43)\n"
)

TARGET = f"""
import os, subprocess, sys

def answer(inputs):
    if inputs["question"] == "q0":
        subprocess.Popen(["sh", "-c", "sleep 41 &"]).wait()
        os.system("setsid sleep 42 &")
        subprocess.Popen([sys.executable, "-c", {DAEMON!r}]).wait()
    return {{"final_response": inputs["question"]}}
"""

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="child subreapers are Linux's"
)


def sleeping(seconds: int) -> list[int]:
    """The pids of running ``sleep N`` processes (and the daemon's python) on the machine."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            command = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and (
            command[:2] == [b"sleep", str(seconds).encode()]
            or any(f"time.sleep({seconds})".encode() in part for part in command)
        ):
            found.append(int(entry.name))
    return found


@linux_only
@pytest.mark.slow
def test_processes_that_detach_by_a_double_fork_are_ended_and_the_pipe_closes(tmp_path):
    spec = project(tmp_path, TARGET, dataset="rows.jsonl", data=2, concurrency=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    env.pop("AGENTEVAL_STORE", None)
    started = time.monotonic()
    run = subprocess.Popen(  # `agenteval run ... | cat`: read until EOF
        [sys.executable, "-m", "agenteval_cli.cli", "run", spec.name, "--store", "s.db", "-q"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = run.communicate(timeout=60)
        took = time.monotonic() - started
        left = sleeping(41) + sleeping(42) + sleeping(43)
    finally:
        for pid in sleeping(41) + sleeping(42) + sleeping(43):  # a failed run's leftovers
            os.kill(pid, 9)
    assert left == [], out  # ended, not merely disowned
    assert run.returncode == 0, out
    assert took < 20, f"the pipe stayed open {took:.0f} s: {out}"  # not the 41 s they sleep
    warnings = [line for line in out.splitlines() if "a target left" in line]
    assert len(warnings) == 1, out  # one line naming every process it ended
    text = " ".join(out.split())
    # the two sleeps and the daemon's grandchild; and its middle process, when the sweep
    # finds it between its fork and its exit (the target returns once the first one exits)
    found = re.search(r"a target left (\d+) process\(es\) running after the run: ", text)
    assert found is not None and found.group(1) in ("3", "4"), text
    for command in ("(sleep 41)", "(sleep 42)", "-c import os, time"):
        assert command in text, text


@linux_only
def test_orphans_are_adopted_only_for_the_run(tmp_path, monkeypatch):
    from agenteval_cli import api
    from agenteval_cli.core.children import adopt_orphans

    monkeypatch.chdir(tmp_path)
    spec = project(
        tmp_path,
        "from agenteval_cli.core.children import adopt_orphans\n"
        "SEEN = []\n"
        "def answer(inputs):\n"
        "    was = adopt_orphans(True)\n"
        "    SEEN.append(was)\n"
        "    return {'final_response': str(was)}\n",
        dataset="rows.jsonl",
        data=[{"id": "e0", "inputs": {"question": "q"}}],
    )
    assert adopt_orphans(False) is False  # this test process is no subreaper
    report = api.run(spec, store=tmp_path / "s.db")
    assert report.status == "finished"
    import sqlite3

    db = sqlite3.connect(tmp_path / "s.db")
    (outputs,) = db.execute("SELECT outputs_json FROM results").fetchone()
    assert '"True"' in outputs  # during the run, orphans came to this process
    assert adopt_orphans(False) is False  # and after it, no longer
