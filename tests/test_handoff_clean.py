"""handoff_clean on langgraph-swarm and langgraph-supervisor graphs driven by scripted
models: each defect is made by what the model replied (its script), and named."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from test_handoff_context import Scripted, call, traced

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.handoffs import clean_defects
from agenteval_cli.evaluators.registry import REGISTRY

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def swarm(triage_replies: list[AIMessage], billing_replies: list[AIMessage]) -> Any:
    from langgraph.prebuilt import create_react_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    log: list = []
    triage = create_react_agent(
        Scripted(agent="triage", replies=triage_replies, log=log),
        tools=[create_handoff_tool(agent_name="billing")],
        name="triage",
    )
    billing = create_react_agent(
        Scripted(agent="billing", replies=billing_replies, log=log),
        tools=[create_handoff_tool(agent_name="triage")],
        name="billing",
    )
    return create_swarm([triage, billing], default_active_agent="triage").compile()


def score(trace: Trace, **options: Any) -> dict:
    return REGISTRY["handoff_clean"].factory(**options)(trace)


def test_a_clean_handoff():
    trace = traced(swarm([call("transfer_to_billing")], [AIMessage("Refund issued.")]))
    result = score(trace)
    assert result["score"] is True, result


def test_said_but_did_not():
    """triage says it transfers to billing and ends the turn: billing never runs. Billing is
    an agent of the graph the trace cannot show (it never ran): the option names it."""
    trace = traced(swarm([AIMessage("I'll transfer you to billing now.")], []))
    assert trace.agent_path == ["triage"]
    result = score(trace, agents=["billing", "triage"])
    assert result["score"] is False
    assert result["comment"] == (
        "said but didn't: \"I'll transfer you to billing now.\" with no handoff to billing"
    )


def test_said_and_did_is_clean():
    trace = traced(
        swarm(
            [
                AIMessage(
                    "I'll transfer you to billing.",
                    tool_calls=call("transfer_to_billing").tool_calls,
                )
            ],
            [AIMessage("Refund issued.")],
        )
    )
    assert score(trace)["score"] is True


def test_handoff_to_an_agent_outside_the_graph():
    """The model calls ``transfer_to_legal``, a tool the agent does not have: the tool node
    answers with an error, and legal is no agent of the graph."""
    trace = traced(swarm([call("transfer_to_legal"), AIMessage("Sorry.")], []))
    defects = clean_defects(trace)
    assert defects == [
        "triage's transfer_to_legal failed",
        "triage's transfer_to_legal hands off to legal, no agent of the graph",
    ]


def test_two_handoffs_in_one_reply():
    reply = AIMessage(
        "",
        tool_calls=[
            {"name": "transfer_to_billing", "args": {}, "id": "c-1"},
            {"name": "transfer_to_billing", "args": {}, "id": "c-2"},
        ],
    )
    """Both calls pass control to billing, whose model then refuses the history: the second
    call has no answer (LangGraph raises INVALID_CHAT_HISTORY in billing)."""
    from langchain_core.messages import HumanMessage

    from agenteval_cli.trace.recorder import TraceRecorder

    graph = swarm([reply], [AIMessage("Refund issued.")])
    recorder = TraceRecorder()
    with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
        graph.invoke({"messages": [HumanMessage("Refund me")]}, config={"callbacks": [recorder]})
    defects = clean_defects(recorder.trace())
    assert defects == [
        "triage's transfer_to_billing: billing never ran after it",
        "triage's transfer_to_billing: billing never ran after it",
        "two handoffs to billing in one reply",
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("I'll transfer you to billing now.", ["billing"]),
        ("I’ll pass you to billing", ["billing"]),
        ("Transferring you to the billing team", ["billing"]),
        ("Let me connect you with account team.", ["account_team"]),
        ("I transferred you to billing earlier", []),  # past: no announcement
        ("Billing will refund you.", []),
    ],
)
def test_announcements(text, said):
    from agenteval_cli.evaluators.handoffs import _announced

    assert _announced(text, {"billing", "account_team"}) == said
