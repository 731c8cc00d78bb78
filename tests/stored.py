"""What two runs of one spec stored, compared: the same results and the same metrics, where
the runs were split (shards) or spread (Ray workers) differently."""

from __future__ import annotations

from pathlib import Path

from agenteval_cli.store.db import Store

LATENCY = ("latency_p50_s", "latency_p95_s")
DEMO_DATASET = Path(__file__).resolve().parent.parent / "datasets" / "routing.jsonl"
DEMO_SPEC = """\
experiment_prefix: {prefix}
dataset:
  path: {dataset}
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
  swarm:
    target: agenteval_cli.demo.swarm:graph
    input_key: question
    initial_state: {{resolution_notes: []}}
evaluators: [routing_accuracy, resolution_coverage, handoff_chain_length, token_cost,
             routing_confusion]
concurrency: 8
repetitions: {repetitions}
pricing:
  scripted-large: {{input: 2.50, output: 10.00}}
  scripted-small: {{input: 0.15, output: 0.60}}
"""


def write_demo_spec(
    path: Path, *, prefix: str, dataset: Path = DEMO_DATASET, repetitions: int = 2
) -> Path:
    """The demo's two targets and evaluators (a dataset-level one among them) at ``path``."""
    path.write_text(DEMO_SPEC.format(prefix=prefix, dataset=dataset, repetitions=repetitions))
    return path


def by_target(store: Store) -> dict[str, str]:
    """target -> the id of its latest experiment."""
    return {e.target: e.id for e in reversed(store.experiments())}


def per_example(store: Store, experiment_id: str) -> dict[tuple[str, int], tuple]:
    """(example, repetition) -> what is stored for it but its timing and the ids the demo
    graphs draw at random for their tool calls: the final response stands for the outputs."""
    found = {}
    for stored in store.results(experiment_id):
        r = stored.result
        key = (r.example_id, r.repetition)
        assert key not in found
        scores = tuple((s.key, s.score, s.comment) for s in r.scores)
        final = (r.outputs or {}).get("final_response")
        found[key] = (stored.inputs, stored.reference_outputs, final, r.error, scores)
    return found


def same_metrics(merged: dict, unsharded: dict) -> None:
    """Every metric equal to the last bit, though results are stored as they finish, in no
    fixed order; latency only there (it is measured anew each run)."""
    assert merged.keys() == unsharded.keys()
    for key, value in unsharded.items():
        if key in LATENCY:
            assert isinstance(merged[key], float) and merged[key] >= 0
        else:
            assert merged[key] == value, key


def no_experiment(store_path: Path) -> bool:
    """Nothing was created at ``store_path``: no store, or a store without experiments."""
    if not store_path.exists():
        return True
    with Store(store_path) as store:
        return not store.experiments()
