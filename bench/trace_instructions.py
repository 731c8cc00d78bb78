"""``python -m bench.trace_instructions [SIDE ...]``: W5's trace capture in instructions an
example, counted by valgrind (``cachegrind``, no cache simulation).

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
here. Compare trees with this; take the goal's figure from ``python -m bench w5``. Needs
``valgrind``; about two minutes for the four sides on two cores.
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
from bench.loop_instructions import counted

SIDES = ("untraced", "noop", "events", "full")
SMALL, LARGE = 20, 60
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


def instructions(side: str, count: int) -> int:
    """The instructions the child process executes for ``side`` on ``count`` examples."""
    return counted(["-m", "bench.trace_instructions", "--child", side, str(count)])


def per_example(sides: tuple[str, ...]) -> dict[str, float]:
    """Each side's instructions for one more example, two counts at a time."""
    jobs = [(side, count) for side in sides for count in (SMALL, LARGE)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: instructions(*job), jobs), strict=True))
    return {side: (counts[side, LARGE] - counts[side, SMALL]) / (LARGE - SMALL) for side in sides}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    sides = tuple(argv) or SIDES
    unknown = [side for side in sides if side not in SIDES]
    if unknown:
        print(f"unknown side {unknown[0]!r}: choose from {', '.join(SIDES)}", file=sys.stderr)
        return 2
    found = per_example(sides if "untraced" in sides else ("untraced", *sides))
    base = found["untraced"]
    for side, count in found.items():
        print(f"{side:>9}: {count:12,.0f} instructions an example  {count / base:.4f}")
    if "events" in found and "full" in found:
        print(f"{'trace()':>9}: {found['full'] - found['events']:12,.0f}")
    if "events" in found and "noop" in found:
        print(f"{'events':>9}: {found['events'] - found['noop']:12,.0f} (over the no-op handler)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
