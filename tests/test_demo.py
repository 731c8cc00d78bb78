"""The offline demo targets: exact routing, swarm failure modes, usage, notes and the dataset."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage

from agenteval_cli.demo import rules, supervisor, swarm
from agenteval_cli.demo.model import MODEL_ENV_VAR, RuleBasedChatModel, model_for
from agenteval_cli.demo.tools import TOOLS

DATASET = Path(__file__).resolve().parents[1] / "datasets" / "routing.jsonl"

SEED_MULTI = "I want to upgrade to Enterprise and also fix my broken SSO."
UNFLAGGED_MULTI = "Our SSO login is broken and I need to update my credit card."
AMBIGUOUS = "Please move my subscription to the Team tier."


def run(graph: Any, question: str, **initial: Any) -> dict[str, Any]:
    return graph.invoke({"messages": [HumanMessage(question)], "resolution_notes": [], **initial})


def handoffs(state: dict[str, Any]) -> list[str]:
    return [
        call["name"]
        for m in state["messages"]
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["name"].startswith("transfer_")
    ]


def speakers(state: dict[str, Any]) -> list[str]:
    """Agents whose model produced a message (handoff-back messages are not model output)."""
    names = [m.name for m in state["messages"] if isinstance(m, AIMessage) and m.usage_metadata]
    return list(dict.fromkeys(names))


def transcript(state: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Everything that must be reproducible; library-made message ids are random."""
    return [
        (
            m.type,
            m.name,
            m.content,
            [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])],
            getattr(m, "usage_metadata", None),
        )
        for m in state["messages"]
    ]


def test_supervisor_routes_every_domain_through_itself() -> None:
    state = run(supervisor.graph, SEED_MULTI)

    assert handoffs(state) == [
        "transfer_to_tech_support",
        "transfer_back_to_supervisor",
        "transfer_to_account",
        "transfer_back_to_supervisor",
    ]
    assert speakers(state) == ["supervisor", "tech_support", "account"]
    assert state["resolution_notes"] == [
        "tech_support: checked SSO configuration for SAML",
        "account: upgraded plan to Enterprise",
    ]
    final = state["messages"][-1]
    assert final.name == "supervisor" and not final.tool_calls
    assert "SSO" in final.content and "Upgrade" in final.content


def test_swarm_passes_on_a_second_domain_flagged_with_also() -> None:
    state = run(swarm.graph, SEED_MULTI)

    assert handoffs(state) == ["transfer_to_tech_support"]
    assert speakers(state) == ["account", "tech_support"]
    assert state["active_agent"] == "tech_support"
    assert state["resolution_notes"] == [
        "account: upgraded plan to Enterprise",
        "tech_support: checked SSO configuration for SAML",
    ]


def test_swarm_misses_an_unflagged_second_domain_the_supervisor_covers() -> None:
    swarm_state = run(swarm.graph, UNFLAGGED_MULTI)
    supervisor_state = run(supervisor.graph, UNFLAGGED_MULTI)

    assert handoffs(swarm_state) == ["transfer_to_tech_support"]
    assert "billing" not in speakers(swarm_state)
    assert swarm_state["resolution_notes"] == ["tech_support: checked SSO configuration for SAML"]
    assert handoffs(supervisor_state) == [
        "transfer_to_tech_support",
        "transfer_back_to_supervisor",
        "transfer_to_billing",
        "transfer_back_to_supervisor",
    ]
    assert supervisor_state["resolution_notes"] == [
        "tech_support: checked SSO configuration for SAML",
        "billing: updated payment method to credit card",
    ]


def test_swarm_ping_pongs_on_ambiguous_wording_and_supervisor_misroutes_it() -> None:
    swarm_state = run(swarm.graph, AMBIGUOUS)
    supervisor_state = run(supervisor.graph, AMBIGUOUS)

    assert handoffs(swarm_state) == ["transfer_to_billing", "transfer_to_account"]
    assert speakers(swarm_state) == ["account", "billing"]
    assert swarm_state["active_agent"] == "account"
    assert swarm_state["resolution_notes"] == ["account: upgraded plan to Team"]
    # "subscription" reads as billing to the supervisor: one wrong agent, no account.
    assert handoffs(supervisor_state) == ["transfer_to_billing", "transfer_back_to_supervisor"]
    assert supervisor_state["resolution_notes"] == ["billing: looked up invoice INV-1042"]


def test_negation_is_understood_by_the_supervisor_only() -> None:
    question = "Nothing is wrong with billing, but our SSO fails with error SAML-500."

    assert handoffs(run(supervisor.graph, question)) == [
        "transfer_to_tech_support",
        "transfer_back_to_supervisor",
    ]
    assert handoffs(run(swarm.graph, question)) == ["transfer_to_billing"]


@pytest.mark.parametrize("graph", [supervisor.graph, swarm.graph], ids=["supervisor", "swarm"])
def test_ai_messages_carry_usage_model_name_agent_and_id(graph: Any) -> None:
    state = run(graph, SEED_MULTI)
    produced = [m for m in state["messages"] if isinstance(m, AIMessage) and m.usage_metadata]

    assert produced
    for message in produced:
        usage = message.usage_metadata
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        expected = "scripted-large" if message.name == "supervisor" else "scripted-small"
        assert message.response_metadata["model_name"] == expected
        assert message.id and message.id.startswith("scripted-")


def test_supervisor_spends_more_tokens_than_swarm() -> None:
    def total(state: dict[str, Any]) -> int:
        return sum(
            m.usage_metadata["total_tokens"]
            for m in state["messages"]
            if m.type == "ai" and m.usage_metadata
        )

    assert total(run(supervisor.graph, SEED_MULTI)) == 3354
    assert total(run(swarm.graph, SEED_MULTI)) == 2114


@pytest.mark.parametrize("graph", [supervisor.graph, swarm.graph], ids=["supervisor", "swarm"])
def test_same_input_same_output(graph: Any) -> None:
    assert transcript(run(graph, SEED_MULTI)) == transcript(run(graph, SEED_MULTI))


@pytest.mark.parametrize("graph", [supervisor.graph, swarm.graph], ids=["supervisor", "swarm"])
def test_ainvoke_matches_invoke(graph: Any) -> None:
    inputs = {"messages": [HumanMessage(UNFLAGGED_MULTI)], "resolution_notes": []}
    async_state = asyncio.run(graph.ainvoke(inputs))

    assert transcript(async_state) == transcript(graph.invoke(inputs))
    assert async_state["resolution_notes"] == graph.invoke(inputs)["resolution_notes"]


def test_seed_shaped_initial_state_is_accepted() -> None:
    state = run(supervisor.graph, "Can you tell me who my account manager is?", current_agent="")

    assert state["resolution_notes"] == ["account: looked up account manager"]
    assert "account manager" in state["messages"][-1].content


class _AgentRecorder(BaseCallbackHandler):
    """Agent = first segment of the checkpoint namespace, as the tracer attributes it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        metadata = kwargs.get("metadata") or {}
        agent = metadata["langgraph_checkpoint_ns"].split("|")[0].split(":")[0]
        self.calls.append((agent, metadata["ls_model_name"]))


@pytest.mark.parametrize(
    ("graph", "nodes", "calls"),
    [
        (
            supervisor.graph,
            {"supervisor", "billing", "tech_support", "account"},
            [
                ("supervisor", "scripted-large"),
                ("tech_support", "scripted-small"),
                ("tech_support", "scripted-small"),
                ("supervisor", "scripted-large"),
                ("account", "scripted-small"),
                ("account", "scripted-small"),
                ("supervisor", "scripted-large"),
            ],
        ),
        (
            swarm.graph,
            {"billing", "tech_support", "account"},
            [
                ("account", "scripted-small"),
                ("account", "scripted-small"),
                ("tech_support", "scripted-small"),
                ("tech_support", "scripted-small"),
            ],
        ),
    ],
    ids=["supervisor", "swarm"],
)
def test_model_calls_run_under_top_level_agent_nodes(
    graph: Any, nodes: set[str], calls: list[tuple[str, str]]
) -> None:
    recorder = _AgentRecorder()
    graph.invoke({"messages": [HumanMessage(SEED_MULTI)]}, {"callbacks": [recorder]})

    assert set(graph.nodes) - {"__start__"} == nodes
    assert recorder.calls == calls


def test_scripted_model_sees_bound_tools_and_reports_its_name() -> None:
    model = RuleBasedChatModel(role="billing")
    bound = model.bind_tools(TOOLS["billing"])
    reply = bound.invoke([HumanMessage("Please refund $12 on invoice INV-9.")])

    assert [c["name"] for c in reply.tool_calls] == ["issue_refund"]
    assert reply.tool_calls[0]["args"] == {"invoice_id": "INV-9", "amount": 12.0}
    assert model.model_name == "scripted-small"
    assert model._get_ls_params()["ls_model_name"] == "scripted-small"
    assert RuleBasedChatModel(role="supervisor")._identifying_params == {
        "model_name": "scripted-large",
        "role": "supervisor",
    }
    with pytest.raises(ValueError, match="unknown role"):
        RuleBasedChatModel(role="sales")


def test_env_var_switches_every_agent_to_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models

    requested: list[str] = []

    def fake_init(model: str, **kwargs: Any) -> RuleBasedChatModel:
        requested.append(model)
        return RuleBasedChatModel(role="account", model_name=model)

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", fake_init)
    monkeypatch.setenv(MODEL_ENV_VAR, "openai:gpt-4o-mini")

    assert model_for("billing").model_name == "openai:gpt-4o-mini"
    requested.clear()
    supervisor.build_graph()
    swarm.build_graph()
    assert requested == ["openai:gpt-4o-mini"] * 7


def test_rules_read_the_seed_request() -> None:
    assert rules.careful_domains(SEED_MULTI) == ["tech_support", "account"]
    assert rules.named_domains(SEED_MULTI) == ["account", "tech_support"]
    assert rules.flagged_domains(SEED_MULTI) == ["tech_support"]
    assert rules.careful_domains("Who is my account manager? No billing today.") == ["account"]
    assert rules.is_ambiguous_only(AMBIGUOUS)


def test_dataset_rows() -> None:
    rows = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
    by_id = {row["id"]: row for row in rows}

    assert len(rows) >= 28 and len(by_id) == len(rows)
    assert {row["metadata"]["category"] for row in rows} == {
        "single",
        "multi",
        "ambiguous",
        "negative",
    }
    for row in rows:
        out = row["outputs"]
        named = out["expected_agents"] + out.get("forbidden_agents", [])
        assert set(named) <= set(rules.AGENTS), row["id"]
        assert row["inputs"]["question"] and isinstance(out["must_mention"], list)
    assert any(row["outputs"].get("forbidden_agents") for row in rows)
    seed = {
        "I need to change my payment method to a credit card.": (
            ["billing"],
            ["payment", "credit card"],
        ),
        "My SSO integration is returning error code SAML-401.": (
            ["tech_support"],
            ["SSO", "SAML"],
        ),
        SEED_MULTI: (["tech_support", "account"], ["SSO", "upgrade"]),
        "Can you tell me who my account manager is?": (["account"], ["account manager"]),
    }
    found = {
        row["inputs"]["question"]: (
            row["outputs"]["expected_agents"],
            row["outputs"]["must_mention"],
        )
        for row in rows
        if row["inputs"]["question"] in seed
    }
    assert found == seed


def test_importing_the_demo_package_stays_cheap() -> None:
    code = (
        "import sys, agenteval_cli.demo; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
