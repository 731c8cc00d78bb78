"""``python -m bench.profile W1|W5 [N]``: cProfile of agenteval's loop on a bench workload,
top frames by own and by cumulative time, to find what the runner spends per example."""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

from bench import workload
from bench.cases_misc import _graph_rows


def _profile_execute(work: workload.Workload) -> cProfile.Profile:
    """Set-up (spec, dataset, imports) unprofiled and timed; then the loop, profiled."""
    import time

    from agenteval_cli.execution import experiment
    from agenteval_cli.spec.model import load_spec
    from agenteval_cli.store.db import Store

    started = time.perf_counter()
    prepared = experiment.prepare(load_spec(work.spec_path))
    print(
        f"prepare (spec, dataset, target and evaluator imports): "
        f"{time.perf_counter() - started:.2f} s"
    )
    profiler = cProfile.Profile()
    with Store(Path(work.dir) / "profile.db") as store:
        experiment.start_experiments(prepared, store)
        profiler.enable()
        experiment.execute(prepared, store)
        profiler.disable()
    return profiler


def main() -> None:
    case = (sys.argv[1] if len(sys.argv) > 1 else "w1").lower()
    count = int(sys.argv[2]) if len(sys.argv) > 2 else (5000 if case == "w1" else 100)
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    with tempfile.TemporaryDirectory(prefix="agenteval-profile-") as tmp:
        if case == "w5":
            graph = "agenteval_cli.demo.supervisor:graph"
            work = workload.make(Path(tmp), count, 4, target=graph, dataset_rows=False)
            _graph_rows(Path(work.dir) / work.dataset, count)
        else:
            work = workload.make(Path(tmp), count, 16)
        profiler = _profile_execute(work)
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
