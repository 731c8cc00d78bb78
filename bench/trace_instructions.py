"""``python -m bench.trace_instructions [--cache] [SIDE ...]``: W5's trace capture in
instructions an example, counted by valgrind (``cachegrind``; with ``--cache``, the misses
of its simulated caches as well).

W5's CPU ratios move by 0.02–0.05 from one run to the next on a shared machine; the
instructions a process executes do not (two runs of one side agree within about 0.1 %).
Each side runs the demo supervisor on W5's examples in a child process of its own, as
W5's bench runs them (concurrency 4, chunks of 20, each after a full collection), on
``SMALL`` and on ``LARGE`` examples after the same warm-up; the difference divided by
``LARGE - SMALL`` is what one more example costs, start-up and imports cancelled out.

Sides: ``untraced`` (``graph.ainvoke`` with no callbacks), ``noop`` (a handler that
receives the recorder's events and ignores them: LangChain's dispatch), ``events`` (the
recorder, ``trace()`` not called) and ``full`` (the recorder and ``trace()``, as W5 runs
it). Instructions leave out what the caches add: a live traced call pays more per
instruction than an untraced one, so the CPU ratio W5 prints is higher than the ratio
here. ``--cache`` tells whether that is the caches valgrind models (first-level
instruction and data caches and a last-level cache the size of the machine's): it prints
each side's misses an example beside its instructions. Compare trees with this; take the
goal's figure from ``python -m bench w5``. Needs ``valgrind``; about two minutes for the
four sides on two cores, about twice as long with ``--cache``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import workload
from bench.cases_misc import _graph_rows
from bench.child import _gather, load_target, read_rows
from bench.loop_instructions import counts

SIDES = ("untraced", "noop", "events", "full")
SMALL, LARGE = 20, 60
_MISSES = ("I1 misses", "D1 misses", "LL misses")  # cachegrind's simulated caches
WARMUP, CHUNK = 20, 20


def _caller(side: str, target: Any) -> Any:
    """One example's call on ``side``."""
    from langchain_core.callbacks import BaseCallbackHandler

    from agenteval_cli.trace.recorder import TraceRecorder, capture

    class Noop(BaseCallbackHandler):
        run_inline = True
        ignore_retry = ignore_retriever = ignore_custom_event = True

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            """Defined, as in TraceRecorder (else LangChain renders prompts as text)."""

    async def untraced(row: dict[str, Any]) -> None:
        await target(row["inputs"])

    async def noop(row: dict[str, Any]) -> None:
        await target(row["inputs"], [Noop()])

    async def recorded(row: dict[str, Any]) -> None:
        with capture(TraceRecorder()) as recorder:
            await target(row["inputs"], [recorder])
        if side == "full":
            recorder.trace()

    return {"untraced": untraced, "noop": noop}.get(side, recorded)


def child(side: str, count: int) -> None:
    """Run ``count`` examples on ``side`` after the warm-up (the counted process)."""
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    with tempfile.TemporaryDirectory(prefix="agenteval-trace-instr-") as tmp:
        graph = "agenteval_cli.demo.supervisor:graph"
        total = WARMUP + max(count, LARGE)
        work = workload.make(Path(tmp), total, 4, target=graph, dataset_rows=False)
        _graph_rows(Path(work.dir) / work.dataset, total)
        rows, target = read_rows(work), load_target(work)
    one = _caller(side, target)
    asyncio.run(_gather(rows[:WARMUP], 4, one))
    for first in range(WARMUP, WARMUP + count, CHUNK):
        gc.collect()
        asyncio.run(_gather(rows[first : min(first + CHUNK, WARMUP + count)], 4, one))


def counted(side: str, count: int, cache: bool) -> dict[str, int]:
    """What the child process executes for ``side`` on ``count`` examples (see
    :func:`bench.loop_instructions.counts`)."""
    args = ["-m", "bench.trace_instructions", "--child", side, str(count)]
    return counts(args, cache=cache)


def per_example(sides: tuple[str, ...], cache: bool = False) -> dict[str, dict[str, float]]:
    """Each side's counts for one more example, two processes at a time."""
    jobs = [(side, count) for side in sides for count in (SMALL, LARGE)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda job: counted(job[0], job[1], cache), jobs)
        found = dict(zip(jobs, done, strict=True))
    return {
        side: {
            name: (found[side, LARGE][name] - found[side, SMALL][name]) / (LARGE - SMALL)
            for name in found[side, LARGE]
        }
        for side in sides
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    cache = "--cache" in argv
    sides = tuple(arg for arg in argv if arg != "--cache") or SIDES
    unknown = [side for side in sides if side not in SIDES]
    if unknown:
        print(f"unknown side {unknown[0]!r}: choose from {', '.join(SIDES)}", file=sys.stderr)
        return 2
    found = per_example(sides if "untraced" in sides else ("untraced", *sides), cache)
    base = found["untraced"]
    for side, side_counts in found.items():
        count = side_counts["I refs"]
        print(f"{side:>9}: {count:12,.0f} instructions an example  {count / base['I refs']:.4f}")
        for name in _MISSES if cache else ():
            misses, of_base = side_counts[name], base[name]
            ratio = f"{misses / of_base:.4f}" if of_base > 0 else "-"
            print(f"{'':>9}  {misses:12,.0f} {name} an example  {ratio}")
    instructions = {side: side_counts["I refs"] for side, side_counts in found.items()}
    if "events" in found and "full" in found:
        print(f"{'trace()':>9}: {instructions['full'] - instructions['events']:12,.0f}")
    if "events" in found and "noop" in found:
        events = instructions["events"] - instructions["noop"]
        print(f"{'events':>9}: {events:12,.0f} (over the no-op handler)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
