"""The tracer on the bundled demo graphs: exact agent paths and handoffs for chosen rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from agenteval_cli.data.examples import load_examples
from agenteval_cli.evaluators.handoffs import chain_length, ping_pong_at
from agenteval_cli.trace.recorder import capture

DATASET = Path(__file__).resolve().parent.parent / "datasets" / "routing.jsonl"
QUESTIONS = {e.id: e.inputs["question"] for e in load_examples(DATASET)}


def traced(graph_module: str, example_id: str):
    import importlib

    graph = importlib.import_module(f"agenteval_cli.demo.{graph_module}").graph
    state = {"messages": [HumanMessage(QUESTIONS[example_id])], "resolution_notes": []}
    with capture() as recorder:
        asyncio.run(graph.ainvoke(state, config={"callbacks": [recorder]}))
    return recorder.trace()


@pytest.mark.parametrize(
    ("graph", "example_id", "path", "tools", "pong"),
    [
        (
            "supervisor",
            "multi-upgrade-and-sso",
            ["supervisor", "tech_support", "supervisor", "account", "supervisor"],
            ["transfer_to_tech_support", "transfer_back_to_supervisor",
             "transfer_to_account", "transfer_back_to_supervisor"],
            False,
        ),
        (
            "supervisor",
            "billing-payment-method",
            ["supervisor", "billing", "supervisor"],
            ["transfer_to_billing", "transfer_back_to_supervisor"],
            False,
        ),
        ("swarm", "multi-upgrade-and-sso", ["account", "tech_support"],
         ["transfer_to_tech_support"], False),
        ("swarm", "multi-sso-and-card", ["account", "tech_support"],
         ["transfer_to_tech_support"], False),
        ("swarm", "ambiguous-subscription-renewal", ["account", "billing", "account"],
         ["transfer_to_billing", "transfer_to_account"], True),
        ("swarm", "account-manager", ["account"], [], False),
    ],
)  # fmt: skip
def test_demo_agent_paths_and_handoffs(graph, example_id, path, tools, pong):
    trace = traced(graph, example_id)
    assert trace.agent_path == path
    assert [h.tool for h in trace.handoffs] == tools
    assert chain_length(trace) == len(path) - 1
    assert (ping_pong_at(trace) is not None) is pong


def test_supervisor_spends_on_the_large_model_and_specialists_call_tools():
    trace = traced("supervisor", "multi-upgrade-and-sso")
    assert set(trace.tokens) == {"scripted-large", "scripted-small"}
    supervisor_calls = [c for c in trace.model_calls if c.agent == "supervisor"]
    assert {c.model for c in supervisor_calls} == {"scripted-large"}
    assert len(supervisor_calls) == 3
    specialist_tools = [t.name for t in trace.tool_calls if not t.name.startswith("transfer_")]
    assert specialist_tools  # the specialists' own tools are visible, not just handoffs
    assert {t.agent for t in trace.tool_calls if t.name in specialist_tools} == {
        "tech_support",
        "account",
    }
