"""``python -m bench.loop_instructions [SMALL LARGE]``: W1's loop in instructions an example,
for the limit and for agenteval, counted by valgrind (``cachegrind``, no cache simulation).

W1's wall and CPU times move with whatever else the machine runs; a count of the
instructions the process executes does not (two runs of one tree agree within about
0.3 %). Each runner's child process (``bench.child``, as W1 runs it) is counted on an
instant target's workload of ``SMALL`` and of ``LARGE`` examples (200 and 2,200 by
default), and the difference is divided by ``LARGE - SMALL``: what one more example costs,
start-up and imports cancelled out. It counts what the process does for each example
outside the timed loop too (agenteval's check of the dataset before the run, the limit's
reading of its rows), so the ratio it prints is not W1's; it tells whether a change to the
loop does less work, on a machine too busy to time it. Needs ``valgrind``; about a minute.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import workload
from bench.procs import child_env

RUNNERS = ("limit", "agenteval")
# valgrind's summary lines: "==123== I   refs:      2,943,866,886", "==123== D1  misses: ..."
_COUNT = re.compile(r"==\d+== (I|D|I1|D1|LLi|LLd|LL)\s+(refs|misses):\s+([\d,]+)")


def counts(args: list[str], *, cache: bool = False) -> dict[str, int]:
    """What ``python ARGS`` executes, whole, counted by valgrind: its instructions, and with
    ``cache`` the misses of cachegrind's simulated caches (first-level data and instruction
    caches, last-level cache), each under the name valgrind prints it by."""
    env = child_env() | {"PYTHONHASHSEED": "0"}  # the same hashes, the same dict probes
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            f"--cache-sim={'yes' if cache else 'no'}",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = _COUNT.findall(done.stderr)
    found = {f"{name} {kind}": int(n.replace(",", "")) for name, kind, n in lines}
    if "I refs" not in found:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return found


def instructions(runner: str, work: workload.Workload) -> int:
    """The instructions ``python -m bench.child RUNNER`` executes on ``work``, whole."""
    return counts(["-m", "bench.child", runner, work.to_json()])["I refs"]


def per_example(small: int, large: int) -> dict[str, float]:
    """Each runner's instructions for one more example (see the module's docstring)."""
    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        works = {n: workload.make(Path(tmp) / f"w{n}", n, 16) for n in (small, large)}
        for runner in RUNNERS:
            counts = {n: instructions(runner, work) for n, work in works.items()}
            found[runner] = (counts[large] - counts[small]) / (large - small)
    return found


def main(argv: list[str]) -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    small, large = (int(arg) for arg in argv) if argv else (200, 2200)
    found = per_example(small, large)
    for runner, count in found.items():
        print(f"{runner:>10}: {count:10,.0f} instructions an example")
    print(f"{'ratio':>10}: {found['agenteval'] / found['limit']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
