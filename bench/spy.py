"""``python -m bench.spy [N] [RUNS]``: where a whole ``agenteval run`` of the W1 workload
spends its time, sampled by py-spy from outside the process (nothing instrumented, start-up
and exit included). Prints each phase's share of the samples, summed over ``RUNS`` runs,
and the frames that hold the most samples themselves.

Needs py-spy (in the dev extra) and permission to read another process's memory, which
py-spy gets for a child it starts unless ptrace is forbidden outright.
"""

from __future__ import annotations

import collections
import compileall
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import workload
from bench.procs import ROOT, agenteval_command, child_env

RATE_HZ = 500
# A sample belongs to the first phase one of whose function names is on its stack, so an
# import made during the run loop counts as an import.
PHASES = (
    ("imports", ("_find_and_load",)),
    ("end-of-run table (metrics read back, drawn)", ("print_comparison",)),
    ("storing results", ("persist", "ResultWriter.flush", "ResultWriter.add")),
    ("scoring", ("score",)),
    ("calling the target", ("Runner._call", "call_with_retries")),
    ("run loop, the rest (asyncio, progress)", ("execute",)),
    ("spec", ("load_spec",)),
    ("dataset check", ("open_examples", "StreamedExamples.__init__")),
    ("store open, experiment rows, close", ("Store.__init__", "Store.close", "start_experiments")),
    # Typer's frames hold every command, so this is what no phase above took: Typer's
    # command tree and parameter coercion, and the command's remaining steps.
    ("Typer and the rest of the command", ("TyperGroup.main", "Typer.__call__")),
)
NATIVE = "no Python frame (interpreter start-up and exit)"


def record(n: int, runs: int, tmp: Path) -> list[Path]:
    """Run ``agenteval run`` on an ``n``-example W1 workload under py-spy, ``runs`` times."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("py-spy not found: pip install py-spy (it is in the dev extra)")
    work = workload.make(tmp / "w1", n, 16)
    outputs = []
    for i in range(runs):
        out = tmp / f"spy-{i}.txt"
        command = [*agenteval_command(), "run", str(work.spec_path), "--store"]
        command.append(str(tmp / f"spy-{i}.db"))
        spy_command = [spy, "record", "--nonblocking", "-r", str(RATE_HZ), "-f", "raw"]
        subprocess.run(
            [*spy_command, "-o", str(out), "--", *command],
            env=child_env(),
            check=True,
            capture_output=True,
        )
        outputs.append(out)
    return outputs


def stacks(paths: list[Path]) -> collections.Counter[tuple[str, ...]]:
    """Samples per stack (outermost frame first), frames as ``function (file:line)``."""
    counts: collections.Counter[tuple[str, ...]] = collections.Counter()
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            stack, _, count = line.rpartition(" ")
            if count.isdigit():
                counts[tuple(f for f in stack.split(";") if f)] += int(count)
    return counts


def phase_of(frames: tuple[str, ...]) -> str:
    names = [frame.split(" (", 1)[0] for frame in frames]
    if not names:
        return NATIVE
    for phase, markers in PHASES:
        if any(name == m or name.endswith("." + m) for name in names for m in markers):
            return phase
    return "other"


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    compileall.compile_dir(ROOT / "agenteval_cli", quiet=1)
    with tempfile.TemporaryDirectory(prefix="agenteval-spy-") as tmp:
        counts = stacks(record(n, runs, Path(tmp)))
    total = sum(counts.values())
    seconds = total / RATE_HZ / runs
    print(f"agenteval run, {n:,} examples: {total:,} samples at {RATE_HZ} Hz over {runs} runs")
    print(f"({seconds:.2f} s of samples per run)\n")
    phases: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for frames, count in counts.items():
        phases[phase_of(frames)] += count
        own[frames[-1] if frames else NATIVE] += count
    print(f"{'phase':<48} {'share':>6} {'s/run':>6}")
    for phase, count in phases.most_common():
        print(f"{phase:<48} {count / total:6.1%} {count / RATE_HZ / runs:6.3f}")
    print("\ntop frames by own samples")
    for frame, count in own.most_common(15):
        print(f"{count / total:6.1%}  {frame}")


if __name__ == "__main__":
    main()
