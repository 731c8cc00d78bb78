"""``agenteval import --otlp`` of traces OpenLLMetry's LangChain instrumentation
(``opentelemetry-instrumentation-langchain``) recorded.

OpenLLMetry lays a LangGraph run out so that the GenAI agent spans say nothing of who made a
model call: a specialist's ``invoke_agent`` span is an empty sibling of its node's run, the
workflow's span carries ``invoke_agent`` too, and the agent's name is only in the runs'
``lc_agent_name`` metadata (``traceloop.association.properties.lc_agent_name``). The demo's
swarm and supervisor are run with it recording beside agenteval's own callbacks, and the
import must score every row as the callback-traced run did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_otel_import import assert_same, by_row, run_and_import

pytest.importorskip("opentelemetry.instrumentation.langchain")

ROOT = Path(__file__).resolve().parent.parent
SPECIALISTS = {"billing", "tech_support", "account"}


def routing_project(folder: Path, rows: int) -> Path:
    """configs/routing.yaml on the first ``rows`` rows of datasets/routing.jsonl (single-
    and multi-agent questions both)."""
    lines = (ROOT / "datasets" / "routing.jsonl").read_text().splitlines()[:rows]
    (folder / "data.jsonl").write_text("\n".join(lines) + "\n")
    spec = (ROOT / "configs" / "routing.yaml").read_text()
    (folder / "spec.yaml").write_text(spec.replace("../datasets/routing.jsonl", "data.jsonl"))
    return folder / "spec.yaml"


def recorded_spans(path: Path) -> list[dict[str, Any]]:
    return [
        s
        for line in path.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for s in scope["spans"]
    ]


def value(item: dict[str, Any], key: str) -> Any:
    for attribute in item["attributes"]:
        if attribute["key"] == key:
            return next(iter(attribute["value"].values()))
    return None


def agent_span_above(chat_span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> Any:
    """The nearest ``invoke_agent`` span a model span sits under, by the GenAI attributes."""
    parent = by_id.get(chat_span["parentSpanId"])
    while parent is not None:
        if value(parent, "gen_ai.operation.name") == "invoke_agent":
            return value(parent, "gen_ai.agent.name")
        parent = by_id.get(parent["parentSpanId"])
    return None


@pytest.mark.parametrize("rows", [8, pytest.param(32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("target", ["swarm", "supervisor"])
def test_openllmetry_traces_score_as_the_callback_run(
    invoke: Any, tmp_path: Path, target: str, rows: int
) -> None:
    spec = routing_project(tmp_path, rows)
    local, imported, result = run_and_import(invoke, spec, target, tmp_path, producer="openllmetry")
    assert result.exit_code == 0, result.output

    # the layout the import has to read: no model call sits under a specialist's agent span
    spans = recorded_spans(tmp_path / f"{target}.otlp.jsonl")
    by_id = {s["spanId"]: s for s in spans}
    chats = [s for s in spans if value(s, "gen_ai.operation.name") == "chat"]
    assert chats and not {agent_span_above(s, by_id) for s in chats} & SPECIALISTS
    assert {value(s, "traceloop.association.properties.lc_agent_name") for s in chats} & (
        SPECIALISTS
    )

    assert_same(local, imported)
    ran, read = by_row(local), by_row(imported)
    assert len(read) == rows
    for key, row in ran.items():
        assert read[key]["scores"]["routing_accuracy"] == row["scores"]["routing_accuracy"]
        assert [(h["source"], h["target"]) for h in read[key]["trace"]["handoffs"]] == [
            (h["source"], h["target"]) for h in row["trace"]["handoffs"]
        ]
    metrics = imported["experiments"][0]["metrics"]
    assert metrics["routing_accuracy"] == local["experiments"][0]["metrics"]["routing_accuracy"]
    assert metrics["routing_accuracy"] > 0.8  # the demo: 87% the swarm, 97% the supervisor
    assert any(r["trace"]["handoffs"] for r in read.values())


@pytest.mark.parametrize("target", ["supervisor", "swarm"])
def test_openllmetry_provider_graphs_keep_each_figure_it_recorded_and_no_other(
    invoke: Any, tmp_path: Path, target: str
) -> None:
    """langgraph-supervisor and langgraph-swarm on the real ChatOpenAI and ChatAnthropic:
    agents, handoffs, tool calls, input, output and cache-read tokens as the run's. What
    OpenLLMetry does not keep is unknown, never another number: reasoning tokens, and the
    cache writes LangChain's Anthropic model splits by cache lifetime (it copies the 0 left
    in LangChain's total)."""
    from provider_graphs import ROWS

    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        f"targets: {{{target}: otel_graphs:openllmetry_{target}}}\n"
        "evaluators: [handoff_chain_length, token_cost]\n"
        "concurrency: 1\n"
    )
    local, imported, result = run_and_import(invoke, spec, target, tmp_path, producer="openllmetry")
    assert result.exit_code == 0, result.output
    ran, read = by_row(local), by_row(imported)
    exact = ("agent", "model", "path", "input_tokens", "output_tokens", "cache_read_tokens")
    unknown_or_same = ("cache_write_tokens", "reasoning_tokens")
    writes = []
    for key, row in ran.items():
        again = read[key]["trace"]
        for name in ("agent_path", "coordinators"):
            assert again[name] == row["trace"][name], (key, name)
        # the handoffs themselves; the text a target was given is the spans' rendering of it
        handoffs = [{k: v for k, v in h.items() if k != "received"} for h in again["handoffs"]]
        assert handoffs == [
            {k: v for k, v in h.items() if k != "received"} for h in row["trace"]["handoffs"]
        ], (key, "handoffs")
        tools = [
            (t["agent"], t["name"], t["kind"], t["target"]) for t in row["trace"]["tool_calls"]
        ]
        assert [(t["agent"], t["name"], t["kind"], t["target"]) for t in again["tool_calls"]] == (
            tools
        )
        calls = row["trace"]["model_calls"]
        assert len(again["model_calls"]) == len(calls), key
        for call, read_call in zip(calls, again["model_calls"], strict=True):
            assert {f: read_call[f] for f in exact} == {f: call[f] for f in exact}, key
            for name in unknown_or_same:
                assert read_call[name] in (None, call[name]), (key, name)
            writes.append((call["cache_write_tokens"], read_call["cache_write_tokens"]))
        scores = ("input_tokens", "output_tokens", "handoff_chain_length", "cache_share")
        assert {s: read[key]["scores"][s] for s in scores} == {s: row["scores"][s] for s in scores}
    assert any(ran_writes for ran_writes, _ in writes)  # the script's cache writes were made
