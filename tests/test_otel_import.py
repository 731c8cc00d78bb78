"""``agenteval import SPEC --otlp FILE``: traces a real instrumentation recorded, scored as
the callback-traced run of the same graph and dataset was.

Each comparison runs the spec once with OpenInference's LangChain instrumentor recording
beside agenteval's own callbacks, writes what it recorded as OTLP JSON, imports that file,
and compares the two experiments row by row: agents, handoffs, tool calls, model calls
with every token count, and every score (routing, handoffs, ping-pong, tokens, cost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from otel_recording import recording

ROOT = Path(__file__).resolve().parent.parent
COMPARED = ("agent_path", "handoffs", "tool_calls", "coordinators", "tokens", "skills")
MODEL_FIELDS = (
    "agent",
    "model",
    "path",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "token_details",
    "provider",
    "failed",
    "cost_usd",
)


def by_row(document: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    (experiment,) = document["experiments"]
    return {(r["example_id"], r["repetition"]): r for r in experiment["results"]}


def assert_same(local: dict[str, Any], imported: dict[str, Any]) -> None:
    """Every row scored alike, from the same trace, and the same experiment metrics."""
    ran, read = by_row(local), by_row(imported)
    assert sorted(read) == sorted(ran)
    for key, result in ran.items():
        other = read[key]
        assert other["status"] == result["status"], key
        assert other["scores"] == result["scores"], key
        assert other["outputs"]["final_response"] == result["outputs"]["final_response"], key
        for name in COMPARED:
            assert other["trace"][name] == result["trace"][name], (key, name)
        calls = [{f: c.get(f) for f in MODEL_FIELDS} for c in result["trace"]["model_calls"]]
        again = [{f: c.get(f) for f in MODEL_FIELDS} for c in other["trace"]["model_calls"]]
        assert again == calls, key
    metrics = {k: v for k, v in local["experiments"][0]["metrics"].items() if "latency" not in k}
    again = {k: v for k, v in imported["experiments"][0]["metrics"].items() if "latency" not in k}
    assert again == metrics


def run_and_import(
    invoke: Any, spec: Path, target: str, folder: Path, *more: str
) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The callback-traced run of ``target`` (recorded by OpenInference meanwhile), then the
    import of what was recorded: both --json documents and the import's CLI result."""
    store, ran, read = folder / "a.db", folder / "ran.json", folder / "read.json"
    with recording() as spans:
        result = invoke(
            "run", spec, "--target", target, "--no-cache", "--json", ran, "--store", store
        )
        assert result.exit_code == 0, result.output
        traces = spans.write(folder / f"{target}.otlp.jsonl")
    imported = invoke(
        "import",
        spec,
        "--otlp",
        traces,
        "--target",
        target,
        "--json",
        read,
        "--store",
        store,
        *more,
    )
    return json.loads(ran.read_text()), json.loads(read.read_text()), imported


@pytest.mark.slow
@pytest.mark.parametrize("target", ["supervisor", "swarm"])
def test_demo_traces_score_as_the_callback_run(invoke: Any, tmp_path: Path, target: str) -> None:
    spec = ROOT / "configs" / "routing.yaml"
    local, imported, result = run_and_import(invoke, spec, target, tmp_path)
    assert result.exit_code == 0, result.output
    assert_same(local, imported)
    rows = by_row(imported)
    assert len(rows) == 32  # every row of datasets/routing.jsonl found its trace
    # the import is a stored experiment like a run's: compare reads it beside the run
    names = [e["name"] for e in local["experiments"] + imported["experiments"]]
    compared = invoke("compare", *names, "--store", tmp_path / "a.db")
    assert compared.exit_code == 0, compared.output
