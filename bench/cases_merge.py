"""W9: ``agenteval merge`` of four shard stores against the unsharded run's store."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

from bench.procs import agenteval_command, child_env, measure
from bench.report import Row

Runs = dict[str, Any]
SHARDS = 4
EXAMPLES = 100_000  # about 25,000 per shard
AGENTS = ("billing", "account", "technical")
SPEC = """\
experiment_prefix: w9
dataset:
  path: ../rows.jsonl
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
evaluators: [{evaluators}]
"""


def _rows(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for i in range(EXAMPLES):
        expected = AGENTS[i % 3]
        rows.append(
            {
                "id": f"q-{i}",
                "inputs": {"question": f"question {i} for {expected}"},
                "outputs": {"expected_agents": [expected]},
            }
        )
    with (folder / "rows.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return rows


def _store(path: Path, spec: Any, rows: list[dict], shard: tuple[int, int] | None) -> None:
    """An experiment of ``rows`` written through the store's own writer, as a finished run
    of ``spec`` (of one shard) leaves it: each result scored, with a trace of its agents."""
    from agenteval_cli.core.records import Example, ModelCall, Result, Score, Trace
    from agenteval_cli.data.examples import dataset_hash
    from agenteval_cli.store.db import Store
    from agenteval_cli.store.results import encode, write

    with Store(path) as store:
        record = store.create_experiment(
            prefix="w9",
            target="supervisor",
            target_path="agenteval_cli.demo.supervisor:graph",
            spec=spec.raw,
            spec_path=str(spec.source),
            spec_hash=spec.content_hash,
            dataset_path=str(spec.dataset.path),
            dataset_hash=dataset_hash(spec.dataset.path),
            example_count=len(rows),
            run_id=uuid.uuid4().hex,
            shard=shard,
            dataset_examples=EXAMPLES if shard else None,
        )
        batch = []
        for row in rows:
            n = int(row["id"][2:])
            invoked = AGENTS[(n * 7) % 3] if n % 5 == 0 else row["outputs"]["expected_agents"][0]
            call = ModelCall(agent=invoked, path=[invoked], model="scripted-small")
            result = Result(
                example_id=row["id"],
                repetition=0,
                outputs={"final_response": f"answer {n}"},
                trace=Trace(agent_path=["supervisor", invoked], model_calls=[call]),
                scores=[Score("routing_accuracy", invoked == row["outputs"]["expected_agents"][0])],
                error="boom" if n % 97 == 0 else None,
                latency_s=0.001 * (n % 50),
            )
            example = Example(row["id"], row["inputs"], row["outputs"])
            batch.append(encode(record.id, example, result))
            if len(batch) == 5000:
                write(store.db, batch)
                batch = []
        write(store.db, batch)
        store.finish_experiment(record.id)
        if shard is None:  # as the run does once it finished: the dataset-level evaluators
            from agenteval_cli.evaluators.summaries import score_experiment_summaries
            from agenteval_cli.execution.loading import load_evaluators

            score_experiment_summaries(load_evaluators(spec), store, [record.id])


def _compare(full: Path, merged: Path) -> dict[str, Any]:
    """Metrics, dataset-level scores and per-example scores of the merged experiment that
    differ from the unsharded one's (latency aside: these stores' latencies are the same)."""
    from agenteval_cli.report.json_report import experiment_metrics
    from agenteval_cli.store.db import Store
    from agenteval_cli.store.summaries import summary_scores

    differing: list[str] = []
    with Store(full, readonly=True) as a, Store(merged, readonly=True) as b:
        [ea], [eb] = a.experiments(), b.experiments()
        ma, mb = experiment_metrics(a, ea.id), experiment_metrics(b, eb.id)
        for key in ma.keys() | mb.keys():
            x, y = ma.get(key), mb.get(key)
            same = x == y or (
                isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=1e-12)
            )
            if not same:
                differing.append(key)
        if summary_scores(a, ea.id) != summary_scores(b, eb.id):
            differing.append("routing_confusion (dataset-level)")
        query = "SELECT example_id, scores_json, error FROM results WHERE experiment_id = ?"
        scores_a = sorted(a.db.execute(query, (ea.id,)).fetchall())
        scores_b = sorted(b.db.execute(query, (eb.id,)).fetchall())
        if scores_a != scores_b:
            differing.append("per-example scores")
        results = b.result_count(eb.id)
    return {"differing": differing, "metrics": mb, "results": results}


def _variant(folder: Path, rows: list[dict], evaluators: str) -> dict[str, Any]:
    """The unsharded store and four shard stores of ``rows`` under a spec with
    ``evaluators``, ``agenteval merge`` of the shards timed, and the merge checked."""
    import time

    from agenteval_cli.data.examples import shard_of
    from agenteval_cli.spec.model import load_spec

    folder.mkdir()
    (folder / "spec.yaml").write_text(SPEC.format(evaluators=evaluators))
    spec = load_spec(folder / "spec.yaml")
    started = time.perf_counter()
    _store(folder / "full.db", spec, rows, None)
    unsharded_s = time.perf_counter() - started
    shards = [folder / f"shard{i}.db" for i in range(1, SHARDS + 1)]
    sizes = []
    for i, path in enumerate(shards, 1):
        mine = [r for r in rows if shard_of(r["id"], SHARDS) == i]
        sizes.append(len(mine))
        _store(path, spec, mine, (i, SHARDS))
    out = folder / "merged.db"
    command = [*agenteval_command(), "merge", *map(str, shards), "--store", str(out), "-q"]
    merged, _ = measure("agenteval merge", command, env=child_env(), cwd=folder)
    checked = _compare(folder / "full.db", out)
    return {
        "merge": merged.to_dict(),
        "floor_s": _copy_floor(shards, folder / "floor.db"),
        "shard_sizes": sizes,
        "unsharded_store_s": unsharded_s,
        "equal": not checked["differing"] and checked["results"] == EXAMPLES,
        **checked,
    }


def w9(tmp: Path, full: bool) -> tuple[list[Row], Runs]:
    """Four shard stores of 100,000 examples (about 25,000 results each) made through the
    store's writer, merged by ``agenteval merge`` (whole process), then checked against
    the unsharded store of the same results: once with per-example evaluators only, once
    with the dataset-level ``routing_confusion`` too, which the merge scores again over
    the 100,000 merged results as the unsharded run does over its own."""
    folder = tmp / "w9"
    folder.mkdir()
    rows = _rows(folder)
    plain = _variant(folder / "plain", rows, "routing_accuracy")
    summary = _variant(folder / "summary", rows, "routing_accuracy, routing_confusion")
    sizes = ", ".join(f"{n:,}" for n in plain["shard_sizes"])
    wall = plain["merge"]["wall_s"]
    differing = plain["differing"] + summary["differing"]
    rows_out = [
        Row(
            "W9",
            f"`merge -q` of 4 shard stores ({sizes} results), whole process",
            "s",
            plain["floor_s"],
            wall,
            None,
            goal="≤ 3 s",
            met=wall <= 3.0,
            notes=[
                f"limit = SQLite alone copying the rows into one file; merge CPU "
                f"{plain['merge']['cpu_s']:.2f} s, peak RSS {plain['merge']['maxrss_mb']:.0f} "
                "MB; without -q the comparison table adds the pass over every result that "
                "`run` makes for it"
            ],
        ),
        Row(
            "W9",
            "the same with routing_confusion scored again over the merged results",
            "s",
            plain["floor_s"],
            summary["merge"]["wall_s"],
            None,
            notes=[
                "the dataset-level evaluator reads every merged result, as it reads every "
                "result after an unsharded run: the unsharded store took "
                f"{summary['unsharded_store_s']:.1f} s to write and score the same way"
            ],
        ),
        Row(
            "W9",
            "merged metrics and scores differing from the unsharded run's",
            "",
            None,
            float(len(differing)),
            None,
            goal="0",
            met=plain["equal"] and summary["equal"],
            notes=[
                "every metric, the dataset-level score and every example's scores and error "
                f"compared; differing: {', '.join(differing) or 'none'}"
            ],
        ),
    ]
    return rows_out, {"plain": plain, "summary": summary}


def _copy_floor(shards: list[Path], path: Path) -> float:
    import time

    started = time.perf_counter()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for i, shard in enumerate(shards):
        db.execute("ATTACH DATABASE ? AS s", (str(shard),))
        if i == 0:
            db.execute("CREATE TABLE results AS SELECT * FROM s.results")
        else:
            db.execute("INSERT INTO results SELECT * FROM s.results")
        db.execute("DETACH DATABASE s")
    db.close()
    return time.perf_counter() - started


if __name__ == "__main__":  # python -m bench.cases_merge: W9 alone, its rows printed
    import tempfile

    from bench.report import print_table

    with tempfile.TemporaryDirectory() as tmp:
        table, _ = w9(Path(tmp), False)
    print_table(table)
    sys.exit(0)
