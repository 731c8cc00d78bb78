"""One runner on one workload, alone in its process, so the parent can measure the whole
process (wall, CPU, peak RSS) around it:

    python -m bench.child RUNNER WORKLOAD_JSON  ->  {"in_loop_s", "in_loop_cpu_s", "results"}
    python -m bench.child trace-ab WORKLOAD_JSON ROUNDS WARMUP CHUNK  ->  per-round figures (W5)

The in-loop figures cover the evaluation loop only: imports, dataset reading and set-up are
left out. CPU is the process's (every thread's) CPU time over the same span.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.workload import Workload

Target = Callable[..., Awaitable[dict[str, Any]]]
RUNNERS: dict[str, Callable[[Workload], tuple[float, float, int]]] = {}


def runner(name: str) -> Callable[[Callable[[Workload], tuple[float, float, int]]], Any]:
    def register(fn: Callable[[Workload], tuple[float, float, int]]) -> Any:
        RUNNERS[name] = fn
        return fn

    return register


def read_rows(work: Workload) -> list[dict[str, Any]]:
    with (Path(work.dir) / work.dataset).open(encoding="utf-8") as rows:
        return [json.loads(line) for line in rows if line.strip()]


def load_target(work: Workload) -> Target:
    """The workload's target as ``async (inputs, callbacks=None) -> outputs``, without
    agenteval's adapter. A graph is called the way a user would call it, ``callbacks`` in
    its run config; a plain function ignores them."""
    module_part, attr = work.target.split(":")
    if module_part.endswith(".py"):
        path = Path(work.dir) / module_part
        spec = importlib.util.spec_from_file_location("bench_target", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    obj = getattr(module, attr)
    if not hasattr(obj, "ainvoke"):

        async def call_function(inputs: dict[str, Any], callbacks: Any = None) -> dict[str, Any]:
            return await obj(inputs)

        return call_function
    from langchain_core.messages import HumanMessage

    async def call_graph(inputs: dict[str, Any], callbacks: Any = None) -> dict[str, Any]:
        state = {"messages": [HumanMessage(inputs["question"])]}
        config = {"callbacks": list(callbacks)} if callbacks is not None else None
        final = await obj.ainvoke(state, config=config)
        return {
            "final_response": final["messages"][-1].content,
            "resolution_notes": final.get("resolution_notes", []),
        }

    return call_graph


def load_evaluator(work: Workload) -> Callable[..., dict[str, Any]]:
    from agenteval_cli.evaluators import build_evaluator

    return build_evaluator(work.evaluator)


async def _gather(rows: list[dict[str, Any]], concurrency: int, one: Callable) -> list[Any]:
    semaphore = asyncio.Semaphore(concurrency)

    async def bounded(row: dict[str, Any]) -> Any:
        async with semaphore:
            return await one(row)

    return await asyncio.gather(*(bounded(row) for row in rows))


@runner("limit")
def run_limit(work: Workload) -> tuple[float, float, int]:
    """The physical limit: semaphore + gather + the same evaluator, nothing kept."""
    rows, target, evaluate = read_rows(work), load_target(work), load_evaluator(work)

    async def one(row: dict[str, Any]) -> Any:
        outputs = await target(row["inputs"])
        return evaluate(outputs=outputs, reference_outputs=row["outputs"])

    started, cpu = time.perf_counter(), time.process_time()
    results = asyncio.run(_gather(rows, work.concurrency, one))
    return time.perf_counter() - started, time.process_time() - cpu, len(results)


def trace_ab(work: Workload, rounds: int, warmup: int, chunk: int) -> dict[str, Any]:
    """W5: the limit loop without and with agenteval's trace callback, and with a no-op
    LangChain handler (what any callback costs), interleaved in one process on the same
    examples: ``rounds`` rounds, after ``warmup`` examples each way.

    A round runs every example once each way, ``chunk`` examples at a time: a chunk
    untraced, the same chunk traced and with the no-op handler, the next chunk in a rotated
    order, and so on, so the sides of a round are never more than a second or so apart and
    a steady drift in machine speed favours none. Every batch starts after a full garbage
    collection and gets an event loop of its own, so no batch pays for the previous one's
    garbage. Returns each round's wall and CPU seconds, summed over its chunks, per side.
    """
    import gc

    from langchain_core.callbacks import BaseCallbackHandler

    from agenteval_cli.trace.recorder import TraceRecorder, capture

    class NoopHandler(BaseCallbackHandler):
        """Receives the very events TraceRecorder does, and does nothing with them."""

        run_inline = True
        ignore_retry = ignore_retriever = ignore_custom_event = True

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            """Defined, as in TraceRecorder: the base class's raises NotImplementedError,
            and LangChain then renders every prompt to text for on_llm_start instead."""

    rows, target, evaluate = read_rows(work), load_target(work), load_evaluator(work)

    async def plain(row: dict[str, Any]) -> Any:
        outputs = await target(row["inputs"])
        return evaluate(outputs=outputs, reference_outputs=row["outputs"])

    async def traced(row: dict[str, Any]) -> Any:
        with capture(TraceRecorder()) as recorder:
            outputs = await target(row["inputs"], [recorder])
        recorder.trace()
        return evaluate(outputs=outputs, reference_outputs=row["outputs"])

    async def noop(row: dict[str, Any]) -> Any:
        outputs = await target(row["inputs"], [NoopHandler()])
        return evaluate(outputs=outputs, reference_outputs=row["outputs"])

    def batch(one: Callable, chosen: list[dict[str, Any]]) -> tuple[float, float]:
        gc.collect()
        started, cpu = time.perf_counter(), time.process_time()
        results = asyncio.run(_gather(chosen, work.concurrency, one))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        if len(results) != len(chosen):
            raise RuntimeError(f"{len(results)} results for {len(chosen)} examples")
        return wall, cpu

    order = [("untraced", plain), ("traced", traced), ("noop-handler", noop)]
    for _, one in order:
        batch(one, rows[:warmup])
    sides: dict[str, dict[str, list[float]]] = {
        side: {"wall_s": [], "cpu_s": []} for side, _ in order
    }
    turn = 0
    for _ in range(rounds):
        sums = {side: [0.0, 0.0] for side in sides}
        for first in range(0, len(rows), chunk):
            shift = turn % len(order)
            for side, one in order[shift:] + order[:shift]:
                wall, cpu = batch(one, rows[first : first + chunk])
                sums[side][0] += wall
                sums[side][1] += cpu
            turn += 1
        for side, (wall, cpu) in sums.items():
            sides[side]["wall_s"].append(wall)
            sides[side]["cpu_s"].append(cpu)
    return {"examples": len(rows), "rounds": rounds, "warmup": warmup, "chunk": chunk, **sides}


@runner("langsmith")
def run_langsmith(work: Workload) -> tuple[float, float, int]:
    """``langsmith.aevaluate(..., upload_results=False)`` with a client on a closed port."""
    import os
    import uuid

    from langsmith import Client, aevaluate
    from langsmith.schemas import Example

    rows, target, evaluate = read_rows(work), load_target(work), load_evaluator(work)
    dataset_id = uuid.uuid4()
    examples = [
        Example(id=uuid.uuid4(), dataset_id=dataset_id, inputs=r["inputs"], outputs=r["outputs"])
        for r in rows
    ]
    client = Client(api_key="bench", api_url=os.environ["LANGSMITH_ENDPOINT"])

    async def main() -> int:
        results = await aevaluate(
            target,
            data=examples,
            evaluators=[evaluate],
            max_concurrency=work.concurrency,
            client=client,
            upload_results=False,
        )
        return len([r async for r in results])

    started, cpu = time.perf_counter(), time.process_time()
    count = asyncio.run(main())
    return time.perf_counter() - started, time.process_time() - cpu, count


@runner("agenteval")
def run_agenteval(work: Workload) -> tuple[float, float, int]:
    """agenteval as a library: the spec's run, every result persisted in a fresh store."""
    from agenteval_cli.execution import experiment
    from agenteval_cli.spec.model import load_spec
    from agenteval_cli.store.db import Store

    spec = load_spec(work.spec_path)
    prepared = experiment.prepare(spec)
    with Store(Path(work.dir) / f"lib-{time.time_ns()}.db") as store:
        experiment.start_experiments(prepared, store)
        started, cpu = time.perf_counter(), time.process_time()
        experiment.execute(prepared, store)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        count = sum(store.result_count(e.id) for e in prepared.experiments.values())
    return elapsed, cpu, count


def main() -> None:
    name, work = sys.argv[1], Workload.from_json(sys.argv[2])
    if name == "trace-ab":  # python -m bench.child trace-ab WORKLOAD_JSON ROUNDS WARMUP CHUNK
        report = trace_ab(work, *(int(arg) for arg in sys.argv[3:6]))
        print(json.dumps(report), flush=True)
        return
    elapsed, cpu, count = RUNNERS[name](work)
    print(json.dumps({"in_loop_s": elapsed, "in_loop_cpu_s": cpu, "results": count}), flush=True)
    if name == "langsmith":
        # With a graph target langsmith queues the graph's child runs for upload even with
        # upload_results=False; at exit its client retries them against the closed port
        # for minutes. The measurement is taken, so leave without that flush.
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
