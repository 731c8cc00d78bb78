"""Names in the dataset checked against the system (targets/names.py, execution/names.py):
the agents, tools and skills a target has, read from its compiled graph before any call, and
every name a row gives that it has not, said with the nearest real one."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from forms import deep, nested, peers, supervisors, work
from forms.model import form_model
from forms.policy import specialist
from forms.tools import TOOL_OF
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph

from agenteval_cli.core.records import Example
from agenteval_cli.execution.names import nearest, unknown_names
from agenteval_cli.targets.names import SystemNames, graph_names

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DEMO_AGENTS = {"supervisor", "billing", "tech_support", "account"}
PAYMENT = "I need to change my payment method to a credit card."  # the demo routes it to billing
SSO = "My SSO integration is returning error code SAML-401."  # and this to tech_support


def agents(graph: Any, own: str = "target") -> set[str]:
    found = graph_names(graph, own).agents
    assert found is not None
    return set(found)


def test_the_demo_graphs_name_their_agents_and_tools():
    from agenteval_cli.demo.supervisor import graph as supervisor
    from agenteval_cli.demo.swarm import graph as swarm

    assert agents(supervisor) == DEMO_AGENTS
    assert agents(swarm) == DEMO_AGENTS - {"supervisor"}
    tools = graph_names(supervisor, "supervisor").tools
    assert tools is not None
    assert {"issue_refund", "check_sso_config", "transfer_to_billing"} <= tools


def test_supervisor_swarm_and_nested_teams_name_every_level():
    assert agents(supervisors.react_supervisor) == {"supervisor", "billing", "tech"}
    assert agents(peers.swarm) == {"billing", "tech"}
    # teams of supervisors: the top level's nodes, each team's graph and its members
    hierarchy = agents(nested.hierarchy)
    assert {"money_team", "tech_team", "billing", "account", "tech"} <= hierarchy
    # a named subgraph under another node name is both
    assert {"billing", "billing_node", "tech", "tech_node"} <= agents(nested.renamed)


def test_a_single_agent_is_its_graph_name_or_the_target():
    named = create_agent(form_model("n", "billing", specialist("billing")), [TOOL_OF["billing"]])
    assert agents(named, own="helpdesk") == {"helpdesk"}
    renamed = create_agent(
        form_model("n", "billing", specialist("billing")), [TOOL_OF["billing"]], name="biller"
    )
    assert agents(renamed, own="helpdesk") == {"biller"}
    assert graph_names(renamed, "helpdesk").tools == {"lookup_invoice"}


def test_a_function_node_running_a_named_agent_names_it():
    inner = create_agent(
        form_model("f", "billing", specialist("billing")), [TOOL_OF["billing"]], name="biller"
    )

    def desk(state: MessagesState) -> dict:
        return inner.invoke(state)

    builder = StateGraph(MessagesState)
    builder.add_node("desk", desk)
    builder.add_edge(START, "desk")
    graph = builder.compile()
    assert agents(graph) == {"desk", "biller"}
    assert graph_names(graph, "t").tools == {"lookup_invoice"}


def test_deep_agents_name_their_subagents_and_tools():
    names = graph_names(deep.build_deep("d", "deep_agent"), "deep_agent")
    assert names.agents == {"deep_agent", "billing", "tech", "general-purpose"}
    assert names.tools is not None
    assert {"task", "lookup_invoice", "run_diagnostics"} <= names.tools
    named = graph_names(deep.build_deep("d", "o", compiled=True, name="orchestrator"), "t")
    assert named.agents == {"orchestrator", "billing", "tech", "general-purpose"}
    nest = graph_names(deep.build_nested("d", "top"), "top")
    assert nest.agents == {"top", "money", "billing", "tech", "general-purpose"}


def test_tools_a_node_runs_itself_and_a_response_format_are_tools():
    assert graph_names(work.inline_network, "t").tools == {"lookup_invoice", "run_diagnostics"}
    assert graph_names(work.structured_agent, "t").tools == {
        "Answer",
        "lookup_invoice",
        "run_diagnostics",
    }


def test_skills_are_the_choices_a_skill_tool_lists():
    @tool
    def load_skill(skill_name: Literal["billing", "tech"]) -> str:
        """Load a skill."""
        return skill_name

    @tool
    def open_skill(skill_name: str) -> str:
        """Load any skill."""
        return skill_name

    graph = create_agent(form_model("s", "a", specialist("billing")), [load_skill, open_skill])
    assert graph_names(graph, "t", {"load_skill": "skill_name"}).skills == {"billing", "tech"}
    assert graph_names(graph, "t", {"load_skill": None}).skills == {"billing", "tech"}
    assert graph_names(graph, "t", {"open_skill": None}).skills is None  # known after the run
    assert graph_names(graph, "t").skills is None  # no skill tools declared


def test_nearest_prefers_a_name_holding_the_other():
    known = {"billing", "tech_support", "hotel_assistant", "hostel"}
    assert nearest("hotel", known) == "hotel_assistant"
    assert nearest("tech", known) == "tech_support"
    assert nearest("biling", known) == "billing"
    assert nearest("x", set()) is None


def test_every_reference_field_and_turn_is_checked():
    names = SystemNames(
        frozenset({"billing", "Tech_Support"}), frozenset({"issue_refund"}), frozenset({"faq"})
    )
    rows = [
        Example(
            "a",
            {"question": "q"},
            {
                "expected_agents": ["billing", "tech_support"],  # agents: any case
                "forbidden_agents": "bill",
                "required_tools": ["issue_refund", "Issue_Refund"],  # tools: exact
                "expected_tools": [{"name": "refund", "args": {}}],
                "expected_skills": ["FAQ", "faqs"],
            },
            row=1,
        ),
        Example(
            "b",
            {"turns": ["hi", "refund"]},
            {"turns": [{}, {"expected_agents": ["bill"]}]},
            row=2,
        ),
    ]
    found = unknown_names("sup", names, rows)
    assert [(u.kind, u.name, u.fields, u.rows, u.nearest) for u in found] == [
        ("agent", "bill", ["forbidden_agents", "turns[].expected_agents"],
         ["row 1", "row 2 turn 2"], "billing"),
        ("tool", "Issue_Refund", ["required_tools"], ["row 1"], "issue_refund"),
        ("tool", "refund", ["expected_tools"], ["row 1"], "issue_refund"),
        ("skill", "faqs", ["expected_skills"], ["row 1"], "faq"),
    ]  # fmt: skip
    assert found[0].line("d.jsonl") == (
        "d.jsonl: 2 rows (row 1, row 2 turn 2): forbidden_agents, turns[].expected_agents: "
        "'bill' is no agent of target 'sup' (nearest: 'billing')"
    )
    # a kind the target cannot tell before the run is not checked
    assert unknown_names("fn", SystemNames(), rows) == []
