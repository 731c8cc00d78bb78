"""Synthetic workloads, written to a temporary directory so every runner reads the same
files: a JSONL dataset, a target module and an agenteval spec naming both."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

# The target module every runner imports from the workload directory. ``latency_s`` comes
# from the environment so one file serves the instant and the latency-bound cases.
TARGET_SOURCE = '''\
"""Bench targets: an instant and a fixed-latency async function."""
import asyncio
import os

LATENCY_S = float(os.environ.get("BENCH_TARGET_LATENCY_S", "0"))


async def target(inputs: dict) -> dict:
    if LATENCY_S:
        await asyncio.sleep(LATENCY_S)
    invoice = inputs["question"][-6:]
    return {"final_response": "Your refund for invoice " + invoice + " is on its way."}
'''

TERMS = ["refund", "invoice", "warranty"]  # two are in every answer, one never is


@dataclass
class Workload:
    """One case's shape; ``dir`` holds dataset.jsonl, bench_target.py and spec.yaml."""

    dir: str
    examples: int
    concurrency: int
    latency_s: float = 0.0
    cache: bool = False
    target: str = "bench_target.py:target"
    dataset: str = "dataset.jsonl"
    evaluator: str = "resolution_coverage"

    @property
    def spec_path(self) -> Path:
        return Path(self.dir) / "spec.yaml"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Workload:
        return cls(**json.loads(text))


def write_rows(path: Path, count: int) -> None:
    """``count`` rows with stable ids, written line by line (100k rows stay cheap)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            row = {
                "id": f"ex-{i:06d}",
                "inputs": {"question": f"Where is the refund for invoice {i:06d}"},
                "outputs": {"must_mention": TERMS},
            }
            out.write(json.dumps(row) + "\n")


def make(
    directory: Path,
    examples: int,
    concurrency: int,
    *,
    latency_s: float = 0.0,
    cache: bool = False,
    target: str | None = None,
    dataset_rows: bool = True,
) -> Workload:
    """Write the dataset, target and spec of one workload into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    work = Workload(str(directory), examples, concurrency, latency_s, cache)
    if target is not None:
        work.target = target
    if dataset_rows:
        write_rows(directory / work.dataset, examples)
    (directory / "bench_target.py").write_text(TARGET_SOURCE, encoding="utf-8")
    lines = [
        "experiment_prefix: bench",
        f"dataset: {work.dataset}",
        "targets:",
        f"  bench: {work.target}",
        f"evaluators: [{work.evaluator}]",
        f"concurrency: {concurrency}",
        "timeout_s: 600",
    ]
    if cache:
        lines.append("cache: true")
    work.spec_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return work
