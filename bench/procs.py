"""Child processes measured whole: wall time, CPU time and peak RSS from ``wait4``."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.workload import Workload

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Measured:
    """One child process: whole-process figures, plus what the child reported, if any."""

    label: str
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    in_loop_s: float | None = None
    in_loop_cpu_s: float | None = None
    results: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def closed_port() -> int:
    """A local port nobody listens on: connections to it are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_ENDPOINT = f"http://127.0.0.1:{closed_port()}"


def child_env(latency_s: float = 0.0) -> dict[str, str]:
    """Offline: langsmith's client and any tracer point at a closed local port."""
    env = dict(os.environ)
    env.update(
        BENCH_TARGET_LATENCY_S=repr(latency_s),
        LANGSMITH_TRACING="false",
        LANGSMITH_ENDPOINT=_ENDPOINT,
        LANGSMITH_API_KEY="bench",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
    )
    return env


def agenteval_command() -> list[str]:
    """The installed console script beside this interpreter, as a user would run it."""
    script = Path(sys.executable).parent / "agenteval"
    if script.exists():
        return [str(script)]
    found = shutil.which("agenteval")
    return [found] if found else [sys.executable, "-m", "agenteval_cli.cli"]


def measure(
    label: str, command: list[str], *, env: dict[str, str], cwd: Path = ROOT
) -> tuple[Measured, str]:
    """Run ``command`` to the end; its output goes to files so no pipe can stall it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{label}: {' '.join(command)} exited {proc.returncode}\n{tail}")
    measured = Measured(
        label=label,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        maxrss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
    )
    return measured, stdout


def run_child(runner: str, work: Workload) -> Measured:
    """``bench.child`` running ``runner`` on ``work``, with its in-loop time."""
    command = [sys.executable, "-m", "bench.child", runner, work.to_json()]
    measured, stdout = measure(runner, command, env=child_env(work.latency_s))
    report = json.loads(stdout.strip().splitlines()[-1])
    measured.in_loop_s, measured.in_loop_cpu_s = report["in_loop_s"], report["in_loop_cpu_s"]
    measured.results = report["results"]
    if measured.results != work.examples:
        raise RuntimeError(f"{runner}: {measured.results} results for {work.examples} examples")
    return measured


def run_cli(work: Workload, store: Path, label: str = "agenteval run") -> Measured:
    """``agenteval run SPEC --store STORE``, the whole process."""
    command = [*agenteval_command(), "run", str(work.spec_path), "--store", str(store)]
    measured, _ = measure(label, command, env=child_env(work.latency_s), cwd=Path(work.dir))
    return measured


def interleaved_walls(
    commands: dict[str, list[str]], rounds: int, *, env: dict[str, str]
) -> dict[str, list[float]]:
    """Each command's whole-process wall time, ``rounds`` times, the commands interleaved so
    that a busy moment hits every one of them alike."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            measured, _ = measure(name, command, env=env)
            walls[name].append(measured.wall_s)
    return walls
