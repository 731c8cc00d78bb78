"""``python -m bench.trace_parts [REPEATS]``: what each part of W5's trace capture costs.

The demo supervisor runs W5's 200 examples once with a recorder that keeps every event it
is sent (the very objects LangChain passed); the events are then replayed into fresh
recorders, ``REPEATS`` times, each event method and ``trace()`` timed in the thread's CPU
time with the heap frozen. The figures are the recorder's own work without LangChain's
dispatch around it, per example: the least of the repeats, the part a busy machine adds
least to. A live call pays more for the same work (its caches hold LangChain's code and
data between events); compare the figures between trees, not with the bench's ratios.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench import workload
from bench.cases_misc import _graph_rows
from bench.child import _gather, load_target, read_rows

EVENTS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
)
Event = tuple[str, tuple[Any, ...], dict[str, Any]]


def record(count: int = 200) -> list[list[Event]]:
    """Every example's events, as the recorder was sent them in a live run."""
    from agenteval_cli.trace.recorder import TraceRecorder, capture

    class Keeping(TraceRecorder):
        """A recorder that also keeps what each event method was given."""

        def __init__(self) -> None:
            super().__init__()
            self.events: list[Event] = []

    def keeping(name: str) -> Any:
        method = getattr(TraceRecorder, name)

        def kept(self: Keeping, *args: Any, **kwargs: Any) -> Any:
            self.events.append((name, args, kwargs))
            return method(self, *args, **kwargs)

        return kept

    for name in EVENTS:
        setattr(Keeping, name, keeping(name))
    with tempfile.TemporaryDirectory(prefix="agenteval-trace-parts-") as tmp:
        graph = "agenteval_cli.demo.supervisor:graph"
        work = workload.make(Path(tmp), count, 4, target=graph, dataset_rows=False)
        _graph_rows(Path(work.dir) / work.dataset, count)
        rows, target = read_rows(work), load_target(work)
    logs: list[list[Event]] = []

    async def traced(row: dict[str, Any]) -> None:
        recorder = Keeping()
        with capture(recorder):
            await target(row["inputs"], [recorder])
        logs.append(recorder.events)

    asyncio.run(_gather(rows, 4, traced))
    return logs


def replay(logs: list[list[Event]], repeats: int) -> dict[str, tuple[float, float]]:
    """Per part: (calls per example, least CPU µs per example over the repeats)."""
    from agenteval_cli.trace.recorder import TraceRecorder

    gc.collect()
    gc.freeze()
    least: dict[str, float] = {}
    calls: dict[str, int] = defaultdict(int)
    for repeat in range(repeats):
        spent: dict[str, int] = defaultdict(int)
        for events in logs:
            recorder = TraceRecorder()
            recorder.start()
            for name, args, kwargs in events:
                method = getattr(recorder, name)
                started = time.thread_time_ns()
                method(*args, **kwargs)
                spent[name] += time.thread_time_ns() - started
                calls[name] += repeat == 0
            recorder.finish()
            started = time.thread_time_ns()
            recorder.trace()
            spent["trace()"] += time.thread_time_ns() - started
            calls["trace()"] += repeat == 0
        for name, ns in spent.items():
            least[name] = min(least.get(name, ns), ns)
    return {name: (calls[name] / len(logs), least[name] / len(logs) / 1000) for name in least}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    parts = replay(record(), repeats)
    print(f"{'part':<22} {'calls/example':>13} {'µs/call':>8} {'µs/example':>10}")
    for name, (per_example, micros) in parts.items():
        print(f"{name:<22} {per_example:>13.2f} {micros / per_example:>8.1f} {micros:>10.1f}")
    events = sum(micros for name, (_, micros) in parts.items() if name != "trace()")
    print(f"{'events':<22} {'':>13} {'':>8} {events:>10.1f}")
    print(f"{'all':<22} {'':>13} {'':>8} {events + parts['trace()'][1]:>10.1f}")


if __name__ == "__main__":
    main()
