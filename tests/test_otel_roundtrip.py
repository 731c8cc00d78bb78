"""Out and back in: ``agenteval run --otel FILE`` then ``agenteval import SPEC --otlp FILE
--target NAME`` scores the exported traces as the run scored them.

The run is the reference: every stored metric of the import (latency aside, the import's
being the spans' own) and every row's scores must be the run's, as must each row's agents,
handoffs (who to whom), tokens and model calls. One export file holds every target's
requests; each import takes its own target's (the root's ``gen_ai.workflow.name``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CALL_FIELDS = (
    "agent",
    "model",
    "path",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost_usd",
)


def by_row(experiment: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["example_id"], r["repetition"]): r for r in experiment["results"]}


def assert_scored_alike(ran: dict[str, Any], read: dict[str, Any]) -> None:
    metrics = {k: v for k, v in ran["metrics"].items() if "latency" not in k}
    again = {k: v for k, v in read["metrics"].items() if "latency" not in k}
    assert again == metrics
    rows, back = by_row(ran), by_row(read)
    assert sorted(back) == sorted(rows)
    for key, result in rows.items():
        other = back[key]
        assert other["status"] == result["status"], key
        assert other["scores"] == result["scores"], key
        assert other["outputs"] == result["outputs"], key
        trace, again_trace = result["trace"], other["trace"]
        assert again_trace["agent_path"] == trace["agent_path"], key
        assert again_trace["coordinators"] == trace["coordinators"], key
        assert [(h["source"], h["target"]) for h in again_trace["handoffs"]] == [
            (h["source"], h["target"]) for h in trace["handoffs"]
        ], key
        assert again_trace["tokens"] == trace["tokens"], key
        calls = [{f: c.get(f) for f in CALL_FIELDS} for c in trace["model_calls"]]
        again_calls = [{f: c.get(f) for f in CALL_FIELDS} for c in again_trace["model_calls"]]
        assert again_calls == calls, key
        fields = ("agent", "name", "args", "output", "kind", "target", "status")
        tools = [tuple(t[f] for f in fields) for t in trace["tool_calls"]]
        assert [tuple(t[f] for f in fields) for t in again_trace["tool_calls"]] == tools, key
        # the times the run recorded come back (through OTLP's nanoseconds)
        times = [
            *(
                (c["started_at"], d["started_at"])
                for c, d in zip(trace["model_calls"], again_trace["model_calls"], strict=True)
            ),
            *(
                (t[when], u[when])
                for t, u in zip(trace["tool_calls"], again_trace["tool_calls"], strict=True)
                for when in ("started_at", "ended_at")
                if t[when] is not None
            ),
        ]
        assert times and all(abs(a - b) < 1e-5 for a, b in times), key


def run_and_import(invoke: Any, spec: Path, folder: Path, targets: list[str]) -> None:
    """Run every target of ``spec`` exporting to one file, import each target's traces
    from it and hold the import against the run."""
    store, ran, spans = folder / "a.db", folder / "ran.json", folder / "spans.jsonl"
    result = invoke(
        "run", spec, "--no-cache", "--json", ran, "--otel", spans, "--store", store, "-q"
    )
    assert result.exit_code == 0, result.output
    experiments = {e["target"]: e for e in json.loads(ran.read_text())["experiments"]}
    assert sorted(experiments) == sorted(targets)
    for target in targets:
        read = folder / f"read-{target}.json"
        imported = invoke(
            "import", spec, "--otlp", spans, "--target", target, "--json", read,
            "--store", store,
        )  # fmt: skip
        assert imported.exit_code == 0, imported.output
        others = len(targets) - 1
        if others:  # the other targets' requests are set aside, said in one line
            assert f"traces of other workflows than {target!r} left out" in imported.text
        (back,) = json.loads(read.read_text())["experiments"]
        assert back["target"] == target
        assert_scored_alike(experiments[target], back)


def test_the_demo_exported_and_imported_scores_as_its_run(invoke: Any, tmp_path: Path) -> None:
    """configs/routing.yaml, both targets: routing, resolution (the final state's notes),
    handoff chains, tokens and cost come back from the spans."""
    run_and_import(invoke, ROOT / "configs" / "routing.yaml", tmp_path, ["supervisor", "swarm"])


def test_langgraph_swarm_and_supervisor_exported_and_imported_score_as_their_run(
    invoke: Any, tmp_path: Path
) -> None:
    """Other people's graphs on a scripted model: a langgraph-swarm of peers and a
    langgraph-supervisor of create_agent specialists, in one run and one file."""
    from forms import datasets
    from forms.harness import write_form

    spec = write_form(
        tmp_path,
        targets={"swarm": "forms.peers:swarm", "supervisor": "forms.supervisors:react_supervisor"},
        rows=datasets.peers(),
        evaluators=["routing_accuracy", "handoff_chain_length", "token_cost"],
    )
    run_and_import(invoke, spec, tmp_path, ["swarm", "supervisor"])
