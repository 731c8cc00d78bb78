"""One run through the library, alone in its process, in-process or on Ray:

    python -m bench.ray_child SPEC STORE local|ray [WORKERS]  ->  {"loop_s", "startup_s", ...}

``loop_s`` runs from the moment calls can start (the run's start in-process; the workers
ready on Ray) to the last result saved, so it is the run's throughput; ``startup_s`` is
everything before it (imports, the spec, and on Ray the instance and its workers).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import agenteval_cli as agenteval
from agenteval_cli.spec.model import load_spec


def main(spec_path: str, store: str, executor: str, workers: str | None = None) -> None:
    began = time.perf_counter()
    marks: dict[str, float] = {}
    results = [0]

    def note(text: str) -> None:
        if text.startswith("ray:"):  # the workers are ready
            marks["ready"] = time.perf_counter()
            marks["ready_cpu"] = time.process_time()

    def started(plan: Any) -> None:
        marks["start"] = time.perf_counter()
        marks["start_cpu"] = time.process_time()

    def saved(target: str, result: Any) -> None:
        marks["last"] = time.perf_counter()
        marks["last_cpu"] = time.process_time()
        results[0] += 1

    spec = load_spec(spec_path)
    if workers:
        spec.ray.workers = int(workers)
    report = agenteval.run(
        spec,
        store=store,
        executor="ray" if executor == "ray" else "local",
        on_note=note,
        on_start=started,
        on_result=saved,
    )
    ready = marks.get("ready", marks["start"])
    print(
        json.dumps(
            {
                "loop_s": marks["last"] - ready,
                "startup_s": ready - began,
                "total_s": time.perf_counter() - began,
                "results": results[0],
                "loop_cpu_s": marks["last_cpu"] - marks.get("ready_cpu", marks["start_cpu"]),
                "status": report.status,
                "metrics": {e.target: e.metrics for e in report.experiments},
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
