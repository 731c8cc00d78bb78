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


@pytest.mark.parametrize("target", ["swarm", "supervisor"])
def test_openllmetry_traces_score_as_the_callback_run(
    invoke: Any, tmp_path: Path, target: str
) -> None:
    spec = routing_project(tmp_path, 8)
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
    assert len(read) == 8
    for key, row in ran.items():
        assert read[key]["scores"]["routing_accuracy"] == row["scores"]["routing_accuracy"]
        assert [(h["source"], h["target"]) for h in read[key]["trace"]["handoffs"]] == [
            (h["source"], h["target"]) for h in row["trace"]["handoffs"]
        ]
    metrics = imported["experiments"][0]["metrics"]
    assert metrics["routing_accuracy"] == local["experiments"][0]["metrics"]["routing_accuracy"]
    assert metrics["routing_accuracy"] > 0.9
    assert any(r["trace"]["handoffs"] for r in read.values())
