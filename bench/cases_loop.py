"""W1–W3: the runner loop on synthetic workloads (overhead, latency-bound, memory); W3b: the
outputs of a large run."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from bench import workload
from bench.procs import (
    Measured,
    agenteval_command,
    child_env,
    interleaved_walls,
    measure,
    run_child,
    run_cli,
)
from bench.report import Row

Runs = dict[str, Any]


def _runs(*measured: Measured) -> Runs:
    return {m.label: m.to_dict() for m in measured}


# What `agenteval run` cannot start without: its CLI (typer, which loads pydantic for its
# parameters), the spec's models (pydantic), the table (rich), YAML, the event loop, SQLite.
IMPORT_FLOOR = "import typer._adapters, pydantic, rich.console, rich.table, yaml, asyncio, sqlite3"
STARTS = 5  # start-up measures, interleaved; the median is reported


def _startup(tmp: Path) -> tuple[Row, Runs]:
    """Whole-process start-up cost: ``agenteval run`` on one example, beside the import of
    the libraries it needs (the floor) and langsmith's ``evaluate``."""
    work = workload.make(tmp / "w1-one", 1, 1)
    run_one = [*agenteval_command(), "run", str(work.spec_path), "--store"]
    commands = {
        "import floor": [sys.executable, "-c", IMPORT_FLOOR],
        "agenteval run, 1 example": [*run_one, str(tmp / "w1-one" / "cli.db")],
        "import langsmith.evaluate": [sys.executable, "-c", "from langsmith import evaluate"],
    }
    walls = interleaved_walls(commands, STARTS, env=child_env())
    floor, one, ls = (statistics.median(values) for values in walls.values())
    row = Row(
        "W1",
        "start-up: run on 1 example (limit: import floor)",
        "s",
        floor,
        one,
        ls,
        notes=[
            f"import floor = a python process doing only `{IMPORT_FLOOR}`; langsmith = "
            "`from langsmith import evaluate`; medians of "
            f"{STARTS}. At 5,000 examples, 100 µs/example is 0.50 s for the whole process"
        ],
    )
    return row, {"start-up walls_s": walls}


def w1(tmp: Path, full: bool) -> tuple[list[Row], Runs]:
    """5,000 examples, instant target, concurrency 16: the runner's own cost."""
    n = 5000
    work = workload.make(tmp / "w1", n, 16)
    limit, lib, ls = (run_child(r, work) for r in ("limit", "agenteval", "langsmith"))
    cli = run_cli(work, tmp / "w1" / "cli.db")
    startup, startup_runs = _startup(tmp)
    per = 1e6 / n
    in_loop = (lib.in_loop_s or 0) * per
    rows = [
        Row(
            "W1",
            "whole process, wall / example",
            "µs",
            limit.wall_s * per,
            cli.wall_s * per,
            ls.wall_s * per,
            goal="≤ 100 µs, ≤ 1/9 langsmith",
            met=cli.wall_s * per <= 100 and cli.wall_s * 9 <= ls.wall_s,
            notes=[
                f"agenteval = `agenteval run` with every result in the store "
                f"({cli.wall_s:.2f} s for {n:,}); limit and langsmith = their whole child process"
            ],
        ),
        Row("W1", "whole process, CPU / example", "µs", *(m.cpu_s * per for m in (limit, cli, ls))),
        Row(
            "W1",
            "in-loop, wall / example",
            "µs",
            (limit.in_loop_s or 0) * per,
            in_loop,
            (ls.in_loop_s or 0) * per,
            goal="≤ 3x limit",
            met=in_loop <= 3 * (limit.in_loop_s or 0) * per,
            notes=["agenteval = experiment.execute() as a library, results persisted"],
        ),
        startup,
    ]
    return rows, {**_runs(limit, lib, ls, cli), **startup_runs}


def w2(tmp: Path, full: bool) -> tuple[list[Row], Runs]:
    """1,000 examples, 50 ms target: wall / ideal at concurrency 16 and 64."""
    n, latency = 1000, 0.05
    rows, runs = [], {}
    for concurrency, goal in ((16, 1.10), (64, 1.25)):
        work = workload.make(tmp / f"w2-c{concurrency}", n, concurrency, latency_s=latency)
        ideal = n * latency / concurrency
        measured = [run_child(r, work) for r in ("limit", "agenteval", "langsmith")]
        limit, lib, ls = ((m.in_loop_s or 0) / ideal for m in measured)
        rows.append(
            Row(
                "W2",
                f"in-loop wall / ideal, c={concurrency} (ideal {ideal:.2f} s)",
                "x",
                limit,
                lib,
                ls,
                goal=f"≤ {goal:.2f}",
                met=lib <= goal,
            )
        )
        runs.update({f"c{concurrency} {k}": v for k, v in _runs(*measured).items()})
    return rows, runs


def w3(tmp: Path, full: bool) -> tuple[list[Row], Runs]:
    """Instant target at 10,000 and 100,000 examples: peak RSS of the whole process."""
    sizes = (10_000, 100_000)
    peak: dict[str, dict[int, float | None]] = {"limit": {}, "agenteval": {}, "langsmith": {}}
    runs: Runs = {}
    walls = {}
    for n in sizes:
        work = workload.make(tmp / f"w3-{n}", n, 16)
        limit = run_child("limit", work)
        cli = run_cli(work, tmp / f"w3-{n}" / "cli.db")
        peak["limit"][n], peak["agenteval"][n] = limit.maxrss_mb, cli.maxrss_mb
        walls[n] = cli.wall_s
        measured = [limit, cli]
        if n < 100_000 or full:
            ls = run_child("langsmith", work)
            peak["langsmith"][n] = ls.maxrss_mb
            measured.append(ls)
        else:
            peak["langsmith"][n] = None
        runs.update({f"{n} {k}": v for k, v in _runs(*measured).items()})

    def growth(runner: str) -> float | None:
        small, big = peak[runner][sizes[0]], peak[runner][sizes[1]]
        return big / small if big and small else None

    big, small = sizes[1], sizes[0]
    skipped = [] if full else ["langsmith at 100,000 skipped (several minutes); `--full` runs it"]
    rows = [
        Row(
            "W3",
            f"peak RSS, {small:,} examples",
            "MB",
            *(peak[r][small] for r in ("limit", "agenteval", "langsmith")),
        ),
        Row(
            "W3",
            f"peak RSS, {big:,} examples",
            "MB",
            *(peak[r][big] for r in ("limit", "agenteval", "langsmith")),
            goal="≤ 250 MB",
            met=(peak["agenteval"][big] or 0) <= 250,
            notes=[
                f"agenteval = `agenteval run`: {walls[small]:.1f} s at {small:,}, "
                f"{walls[big]:.1f} s at {big:,}",
                *skipped,
            ],
        ),
        Row(
            "W3",
            f"RSS growth, {big:,} / {small:,}",
            "x",
            growth("limit"),
            growth("agenteval"),
            growth("langsmith"),
            goal="≤ 1.30",
            met=(growth("agenteval") or 99) <= 1.3,
        ),
    ]
    return rows, runs


def w3b(tmp: Path, full: bool) -> tuple[list[Row], Runs]:
    """The outputs of a 100,000-example run: peak RSS of ``run --json`` and of
    ``report --html`` beside the run's own, on an instant target's store."""
    n = 100_000
    work = workload.make(tmp / "w3b", n, 16)
    env = child_env()
    store, out = tmp / "w3b" / "cli.db", tmp / "w3b"
    run = run_cli(work, store)
    json_run = [*agenteval_command(), "run", str(work.spec_path), "--store", str(out / "j.db")]
    json_run += ["--json", str(out / "results.json")]
    with_json, _ = measure("agenteval run --json", json_run, env=env, cwd=out)
    report_html = [*agenteval_command(), "report", "bench", "--store", str(store)]
    report_html += ["-o", str(out / "report.html")]
    report, _ = measure("agenteval report --html", report_html, env=env, cwd=out)
    json_mb = (out / "results.json").stat().st_size / 2**20
    html_mb = (out / "report.html").stat().st_size / 2**20
    rows = [
        Row(
            "W3b",
            f"peak RSS, `run --json`, {n:,} examples",
            "MB",
            run.maxrss_mb,
            with_json.maxrss_mb,
            None,
            notes=[
                f"limit = `agenteval run` alone ({run.wall_s:.1f} s); agenteval = the same run "
                f"writing --json ({with_json.wall_s:.1f} s, a {json_mb:,.0f} MB file)"
            ],
        ),
        Row(
            "W3b",
            f"peak RSS, `report --html`, {n:,} examples",
            "MB",
            run.maxrss_mb,
            report.maxrss_mb,
            None,
            notes=[
                f"limit = `agenteval run` alone; agenteval = `agenteval report` of its store "
                f"({report.wall_s:.1f} s, a {html_mb:,.1f} MB page)"
            ],
        ),
    ]
    return rows, _runs(run, with_json, report)
