"""Processes a run's targets started and left running.

A target that starts ``sleep 25`` (a server, a watcher, a tool's helper) and returns leaves a
process that inherited this one's stdout and stderr: a pipe reader (``agenteval run ... |
tee log``, a CI step) then waits for it long after ``agenteval`` has exited. At the end of a
run every process started during it that is still running below this one is ended (SIGTERM,
then SIGKILL after :data:`GRACE_S`) and named in a warning. What is seen: this process's
descendants, from ``/proc`` (Linux) or ``ps`` (elsewhere). A process that detaches itself
(a double fork: ``sh -c "sleep 25 &"``, ``setsid``, a daemon) leaves them when its parent
exits, and is re-parented to the nearest "child subreaper" above it: on Linux the run makes
this process one (:func:`adopt_orphans`), so such a process stays below it, is seen and
ended too. Elsewhere it goes to init, unseen, and keeps running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GRACE_S", "Child", "adopt_orphans", "descendants", "end_leftovers", "proc_stat"]

GRACE_S = 2.0  # from SIGTERM to SIGKILL
_SHOWN_COMMAND = 80  # characters of a command line in a warning
_SHOWN_PROCESSES = 3  # processes named in the warning; the others are counted


@dataclass(frozen=True)
class Child:
    pid: int
    command: str


def descendants() -> dict[int, Child]:
    """This process's running descendants (zombies left out), by pid. A zombie's children
    are still its descendants: a double fork's middle process that exited (and that no one
    reaped yet) does not hide the process it started."""
    below: dict[int, list[int]] = {}
    table = _process_table()
    for pid, (ppid, _, _) in table.items():
        below.setdefault(ppid, []).append(pid)
    found: dict[int, Child] = {}
    seen: set[int] = set()
    parents = [os.getpid()]
    while parents:
        for pid in below.get(parents.pop(), []):
            if pid not in seen:
                seen.add(pid)
                _, command, running = table[pid]
                if running:
                    found[pid] = Child(pid, command)
                parents.append(pid)
    return found


def end_leftovers(before: set[int]) -> list[str]:
    """End the descendants that are not in ``before`` (those running when the run started),
    and those they start meanwhile (a double fork under way); a warning line naming them,
    or none."""
    left: dict[int, Child] = {}

    def sweep() -> set[int]:
        """SIGTERM to the descendants not seen yet; the ones still running."""
        now = descendants()
        for pid, child in now.items():
            if pid not in before and pid not in left:
                left[pid] = child
                _signal(pid, signal.SIGTERM)
        return set(left) & set(now)

    running = sweep()
    if not left:
        return []
    deadline = time.monotonic() + GRACE_S
    while running and time.monotonic() < deadline:
        time.sleep(0.05)
        running = sweep()
    for pid in running:
        _signal(pid, signal.SIGKILL)
    named = [f"{pid} ({child.command})" for pid, child in sorted(left.items())]
    shown = ", ".join(named[:_SHOWN_PROCESSES])
    if len(named) > _SHOWN_PROCESSES:
        shown += f" and {len(named) - _SHOWN_PROCESSES} more"
    how = f"{len(running)} of them by SIGKILL" if running else "by SIGTERM"
    return [
        f"a target left {len(left)} process(es) running after the run: {shown}; ended {how}, "
        "so that nothing holds the output open (a process a target starts should end before "
        "the target returns)"
    ]


# prctl(2) options (linux/prctl.h)
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def adopt_orphans(adopt: bool = True) -> bool | None:
    """Linux: whether processes orphaned below this one are re-parented to it (it is a
    "child subreaper", prctl(2)) rather than to init, set to ``adopt``. Returns what it was
    before, to set back; None where it cannot be set (not Linux, no prctl)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        was = ctypes.c_int(0)
        if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
            return None
        if prctl(_PR_SET_CHILD_SUBREAPER, int(adopt), 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return bool(was.value)


def _signal(pid: int, number: signal.Signals) -> None:
    with contextlib.suppress(OSError):  # gone already, or not ours to end
        os.kill(pid, number)


def _process_table() -> dict[int, tuple[int, str, bool]]:
    """pid -> (parent pid, command line, running: not a zombie) of every process that can
    be seen."""
    proc = Path("/proc")
    if (proc / "self" / "stat").exists():
        return _from_proc(proc)
    return _from_ps()


def proc_stat(pid: int | str, proc: Path = Path("/proc")) -> tuple[str, list[str]] | None:
    """The command name and the fields after it (state, parent pid, ...) of
    ``/proc/PID/stat`` (Linux), or None when there is no such process."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
    except (OSError, ValueError):
        return None
    return name, stat[stat.rindex(")") + 1 :].split()


def _from_proc(proc: Path) -> dict[int, tuple[int, str, bool]]:
    table: dict[int, tuple[int, str, bool]] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        stat = proc_stat(entry.name, proc)
        if stat is None or len(stat[1]) < 2:
            continue
        name, fields = stat
        if fields[0] in ("Z", "X"):  # exited, unreaped: no command line left
            table[int(entry.name)] = (int(fields[1]), name, False)
            continue
        try:
            raw = (proc / entry.name / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        command = raw.replace(b"\0", b" ").decode(errors="replace").strip() or name
        table[int(entry.name)] = (int(fields[1]), _short(command), True)
    return table


def _from_ps() -> dict[int, tuple[int, str, bool]]:
    import subprocess  # only where there is no /proc

    try:
        listing = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid=,stat=,command="],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    table: dict[int, tuple[int, str, bool]] = {}
    for line in listing.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        command = _short(parts[3] if len(parts) > 3 else "")
        table[int(parts[0])] = (int(parts[1]), command, not parts[2].startswith("Z"))
    return table


def _short(command: str) -> str:
    return command if len(command) <= _SHOWN_COMMAND else command[: _SHOWN_COMMAND - 3] + "..."
