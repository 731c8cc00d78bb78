"""``agenteval import --otlp`` of traces whose model calls sit under no agent span, while the
rows expect agents: refused in one line naming what is missing (exit 2), never scored as
routing 0. Hand-written in the layouts producers write: model calls under a workflow's span
that also says ``invoke_agent`` (its agent named after its workflow, as OpenLLMetry names
it, or its ``traceloop.span.kind`` ``workflow``), under no agent span at all, or some of them
under an agent span and one outside any."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_otel_conventions import chat, span
from test_otel_import import by_row

ROWS = [
    {"id": "r1", "inputs": {"question": "refund me"}, "outputs": {"expected_agents": ["billing"]}},
    {"id": "r2", "inputs": {"question": "sso broke"}, "outputs": {"expected_agents": ["tech"]}},
]
AGENT = {"gen_ai.operation.name": "invoke_agent"}
ROOTS = {
    "workflow named as its agent": {
        **AGENT, "gen_ai.agent.name": "support_app", "gen_ai.workflow.name": "support_app",
    },
    "traceloop workflow": {
        **AGENT, "gen_ai.agent.name": "app", "traceloop.span.kind": "workflow",
    },
    "no agent span": {"gen_ai.workflow.name": "support_app"},
    "one call outside the agents": {"gen_ai.workflow.name": "support_app"},
}  # fmt: skip


def traces(layout: str) -> list[dict[str, Any]]:
    """Each row's request: a routing call and an answering call."""
    found = []
    for trace, row, agent in (("a", "r1", "billing"), ("b", "r2", "tech")):
        root = {"agenteval.example_id": row, **ROOTS[layout]}
        found += [
            span(trace, 1, None, "support_app.workflow", 0, **root),
            chat(trace, 2, 1, 1, "m-large", "routing", input_tokens=100, output_tokens=5),
        ]
        if layout == "one call outside the agents":
            found.append(span(trace, 3, 1, f"invoke_agent {agent}", 2, **AGENT))
            found.append(chat(trace, 4, 3, 3, "m-small", "done", input_tokens=120, output_tokens=9))
        else:
            found.append(chat(trace, 4, 1, 3, "m-small", "done", input_tokens=120, output_tokens=9))
    return found


def project_with(folder: Path, spans: list[dict[str, Any]], rows: list[dict[str, Any]]) -> Path:
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "spec.yaml").write_text(
        "dataset: data.jsonl\n"
        "targets: {support: not_a_module:graph}\n"
        "evaluators: [routing_accuracy, handoff_chain_length]\n"
    )
    document = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    (folder / "traces.jsonl").write_text(json.dumps(document) + "\n")
    return folder / "spec.yaml"


def run_import(invoke: Any, folder: Path, spec: Path) -> Any:
    return invoke(
        "import", spec, "--otlp", folder / "traces.jsonl", "--json", folder / "out.json",
        "--store", folder / "a.db",
    )  # fmt: skip


@pytest.mark.parametrize("layout", sorted(ROOTS))
def test_model_calls_under_no_agent_span_are_refused_in_one_line(
    invoke: Any, tmp_path: Path, layout: str
) -> None:
    result = run_import(invoke, tmp_path, project_with(tmp_path, traces(layout), ROWS))
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if "model calls sit under" in line]
    assert len(errors) == 1, result.output
    unnamed = 2 if layout == "one call outside the agents" else 4
    assert (
        f"{tmp_path / 'traces.jsonl'}:1: {unnamed} of 4 model calls sit under no agent span"
        in (errors[0])
    )
    assert "the rows expect agents (billing, tech)" in errors[0]
    assert "invoke_agent with gen_ai.agent.name" in errors[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "out.json").exists()  # nothing scored


def test_rows_that_expect_no_agents_are_scored_from_the_same_traces(
    invoke: Any, tmp_path: Path
) -> None:
    """The refusal is for rows whose routing cannot be read: rows expecting no agents are
    scored (their tokens and all) from the same traces."""
    rows = [{**r, "outputs": {}} for r in ROWS]
    spec = project_with(tmp_path, traces("workflow named as its agent"), rows)
    result = run_import(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    found = by_row(json.loads((tmp_path / "out.json").read_text()))
    assert [c["input_tokens"] for c in found[("r1", 0)]["trace"]["model_calls"]] == [100, 120]


def test_traceloop_agent_spans_under_a_workflow_span_are_the_agents(
    invoke: Any, tmp_path: Path
) -> None:
    """Traceloop's decorators' layout outside LangChain: a workflow span that says
    invoke_agent for the workflow, and agent spans known by their ``traceloop.span.kind``
    and entity name only. The agents are triage then billing, the workflow none of them."""
    workflow = {
        **AGENT, "gen_ai.agent.name": "support_app", "traceloop.span.kind": "workflow",
        "traceloop.workflow.name": "support_app", "agenteval.example_id": "r1",
    }  # fmt: skip
    spans = [span("c", 1, None, "support_app.workflow", 0, **workflow)]
    for number, (agent, model, tokens) in enumerate(
        [("triage", "m-large", 100), ("billing", "m-small", 120)]
    ):
        kind = {"traceloop.span.kind": "agent", "traceloop.entity.name": agent}
        spans.append(span("c", 2 + 2 * number, 1, f"{agent}.agent", 1 + 2 * number, **kind))
        spans.append(
            chat("c", 3 + 2 * number, 2 + 2 * number, 2 + 2 * number, model, "ok",
                 input_tokens=tokens, output_tokens=5)
        )  # fmt: skip
    result = run_import(invoke, tmp_path, project_with(tmp_path, spans, ROWS[:1]))
    assert result.exit_code == 0, result.output
    (row,) = by_row(json.loads((tmp_path / "out.json").read_text())).values()
    assert row["trace"]["agent_path"] == ["triage", "billing"]
    assert [(h["source"], h["target"]) for h in row["trace"]["handoffs"]] == [("triage", "billing")]
    assert [(c["agent"], c["input_tokens"]) for c in row["trace"]["model_calls"]] == [
        ("triage", 100),
        ("billing", 120),
    ]
    assert row["scores"]["routing_accuracy"] == 1.0
