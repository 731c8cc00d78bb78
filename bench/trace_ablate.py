"""``python -m bench.trace_ablate [ROUNDS] [EXAMPLES]``: W5's trace capture with parts of the
recorder switched off, live, against the untraced graph call.

``bench.trace_parts`` times the recorder's own work hot (its events replayed back to back);
a live call pays more for the same work. Here every side runs inside live graph calls, the
way ``bench.child trace_ab`` runs W5 (rotating chunks of 20 examples, each after a full
collection, CPU time per round), and prints each side's CPU over the untraced side's:

- ``noop``: a handler that receives the recorder's events and ignores them (LangChain's
  dispatch to any handler);
- ``keep``: a handler that only keeps each event's arguments to the end of the call (what
  holding LangChain's objects costs any capture that reads them late);
- ``no chains``: a no-op handler that turns the chain events off (``ignore_chain``);
- ``stream``: no chain events either, the graph run through ``astream`` with its tasks and
  values streamed from every subgraph instead (what a capture built on LangGraph's own
  stream pays before reading anything);
- ``no events``: the recorder, every event method doing nothing (and so ``trace()`` too);
- ``no trace()``: the recorder's events, ``trace()`` not called;
- ``no conversation``: the recorder with the conversation's merges skipped (its trace lacks
  the messages and what only they give: a cost probe, not a trace);
- ``merges in trace()``: each sequence kept as a copy of its list at the event and merged
  in ``trace()`` (the graph-written tool calls a merge finds are lost: a probe too);
- ``in-task runs skipped``: the recorder without the chain runs that start in their parent
  chain's task (a node's own runnables, a subgraph's root: about half the chain runs of
  W5's graph), their children hung from the parent and their ends dropped (the names of
  subgraphs and the messages only those ends carry are lost: a probe too);
- ``full``: the recorder and ``trace()``, as W5 runs it.

It also prints the time the collector took on each side (gen 0 and 1; a full collection
never ran inside a batch here). Medians of a few rounds on a busy machine move by 0.02–0.05
from one run to the next: compare sides of one run, and repeat.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import workload
from bench.cases_misc import _graph_rows
from bench.child import _gather, load_target, read_rows
from bench.trace_parts import EVENTS


def sides() -> dict[str, Callable[[], Any] | None]:
    """Each side's handler factory (``None``: untraced)."""
    from langchain_core.callbacks import BaseCallbackHandler

    from agenteval_cli.trace.conversation import Conversation
    from agenteval_cli.trace.recorder import TraceRecorder

    class Noop(BaseCallbackHandler):
        run_inline = True
        ignore_retry = ignore_retriever = ignore_custom_event = True

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            """Defined, as in TraceRecorder (else LangChain renders prompts for on_llm_start)."""

    class Keep(Noop):
        def __init__(self) -> None:
            self.kept: list[Any] = []

    def keeping(self: Any, *args: Any, **kwargs: Any) -> None:
        self.kept.append((args, kwargs))

    class NoChains(Noop):
        ignore_chain = True

    class Streamed(NoChains):
        streams = True  # this side's graph is streamed, not invoked

    class NoEvents(TraceRecorder):
        pass

    for name in EVENTS:
        setattr(NoEvents, name, lambda self, *args, **kwargs: None)
        setattr(Keep, name, keeping)

    class NoTrace(TraceRecorder):
        def trace(self) -> Any:
            return None

    class Unmerged(Conversation):
        def merge(self, messages: Any, *, fresh: Any = ()) -> list[Any]:
            return []

    class NoConversation(TraceRecorder):
        def __init__(self) -> None:
            super().__init__()
            self._conversation = Unmerged()

    class Journal(Conversation):
        def __init__(self) -> None:
            super().__init__()
            self.kept: list[tuple[list[Any], Any]] = []

        def merge(self, messages: Any, *, fresh: Any = ()) -> list[Any]:
            self.kept.append((list(messages), fresh))
            return []

        def replay(self) -> None:
            for messages, fresh in self.kept:
                Conversation.merge(self, messages, fresh=fresh)

    class MergedLate(TraceRecorder):
        def __init__(self) -> None:
            super().__init__()
            self._conversation = self._journal = Journal()

        def trace(self) -> Any:
            self._journal.replay()
            return super().trace()

    class InTaskSkipped(TraceRecorder):
        """Chain runs that start in their parent chain's task (a node's own runnables, a
        subgraph's root) not recorded: what runs below one hangs from its parent, its end
        and error are dropped."""

        def __init__(self) -> None:
            super().__init__()
            self._skipped: set[int] = set()

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            parent, metadata = kwargs.get("parent_run_id"), kwargs.get("metadata")
            above = self._runs.get(parent.int) if parent is not None else None
            if (
                above is not None
                and above.kind == "chain"
                and metadata
                and metadata.get("langgraph_checkpoint_ns") == above.namespace
            ):
                self._runs[kwargs["run_id"].int] = above
                self._skipped.add(kwargs["run_id"].int)
                return
            super().on_chain_start(serialized, inputs, **kwargs)

        def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
            if kwargs["run_id"].int not in self._skipped:
                super().on_chain_end(outputs, **kwargs)

        def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
            if kwargs["run_id"].int not in self._skipped:
                super().on_chain_error(error, **kwargs)

    return {
        "untraced": None,
        "noop": Noop,
        "keep": Keep,
        "no chains": NoChains,
        "stream": Streamed,
        "no events": NoEvents,
        "no trace()": NoTrace,
        "no conversation": NoConversation,
        "merges in trace()": MergedLate,
        "in-task runs skipped": InTaskSkipped,
        "full": TraceRecorder,
    }


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    chunk = 20
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    from agenteval_cli.trace.recorder import TraceRecorder, capture

    with tempfile.TemporaryDirectory(prefix="agenteval-trace-ablate-") as tmp:
        graph = "agenteval_cli.demo.supervisor:graph"
        work = workload.make(Path(tmp), count, 4, target=graph, dataset_rows=False)
        _graph_rows(Path(work.dir) / work.dataset, count)
        rows, target = read_rows(work), load_target(work)
    from langchain_core.messages import HumanMessage

    module, attr = work.target.split(":")
    compiled = getattr(importlib.import_module(module), attr)  # the graph ``target`` calls

    def caller(factory: Callable[[], Any] | None) -> Callable[[dict[str, Any]], Any]:
        async def plain(row: dict[str, Any]) -> None:
            await target(row["inputs"])

        async def handled(row: dict[str, Any]) -> None:
            assert factory is not None
            await target(row["inputs"], [factory()])

        async def recorded(row: dict[str, Any]) -> None:
            assert factory is not None
            with capture(factory()) as recorder:
                await target(row["inputs"], [recorder])
            recorder.trace()

        async def streamed(row: dict[str, Any]) -> None:
            assert factory is not None
            state = {"messages": [HumanMessage(row["inputs"]["question"])]}
            config: Any = {"callbacks": [factory()]}
            modes: Any = ["tasks", "values"]
            async for _ in compiled.astream(state, config, stream_mode=modes, subgraphs=True):
                pass

        if factory is None:
            return plain
        if getattr(factory, "streams", False):
            return streamed
        return recorded if issubclass(factory, TraceRecorder) else handled

    order = [(side, caller(factory)) for side, factory in sides().items()]
    collector: dict[str, float] = dict.fromkeys([side for side, _ in order], 0.0)
    current: list[Any] = [None, 0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            current[1] = time.process_time()
        elif current[0] is not None:
            collector[current[0]] += time.process_time() - current[1]

    def batch(side: str | None, one: Callable, chosen: list[dict[str, Any]]) -> float:
        gc.collect()
        current[0] = side
        started = time.process_time()
        asyncio.run(_gather(chosen, 4, one))
        spent = time.process_time() - started
        current[0] = None
        return spent

    gc.callbacks.append(timed)
    for _, one in order:
        batch(None, one, rows[:chunk])
    ratios: dict[str, list[float]] = {side: [] for side, _ in order[1:]}
    turn = 0
    for _ in range(rounds):
        sums = dict.fromkeys([side for side, _ in order], 0.0)
        for first in range(0, len(rows), chunk):
            shift = turn % len(order)
            for side, one in order[shift:] + order[:shift]:
                sums[side] += batch(side, one, rows[first : first + chunk])
            turn += 1
        for side in ratios:
            ratios[side].append(sums[side] / sums["untraced"])
    gc.callbacks.remove(timed)
    calls = rounds * len(rows)
    print(f"{'side':<21} {'CPU / untraced':>14} {'range':>13} {'collector µs/call':>18}")
    print(f"{'untraced':<21} {'':>14} {'':>13} {collector['untraced'] / calls * 1e6:>18.0f}")
    for side, values in ratios.items():
        spread = f"{min(values):.3f}–{max(values):.3f}"
        gc_us = collector[side] / calls * 1e6
        print(f"{side:<21} {statistics.median(values):>14.3f} {spread:>13} {gc_us:>18.0f}")


if __name__ == "__main__":
    main()
