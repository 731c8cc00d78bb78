"""The demo graphs in conversations: one thread per conversation, follow-ups, an interrupt.

Expected calls come from the rules: a supervisor turn is one routing call per domain, two
calls per specialist (its tool calls, then its answer) and a summary; a swarm turn starts
at the agent left active by the previous turn, which acts (two calls) or hands on (one).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agenteval_cli.data.conversations import shape_problem
from agenteval_cli.demo import policy, supervisor, swarm
from agenteval_cli.demo.rules import AGENTS
from agenteval_cli.demo.tools import CANCEL_QUESTION
from agenteval_cli.spec.model import load_spec

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "datasets" / "conversations.jsonl"
SPEC = ROOT / "configs" / "conversations.yaml"

INVOICE = "Can you send me a copy of invoice INV-2041?"
REFUND = "Invoice INV-2041 was charged twice, please refund $49."
UPGRADE = "Please upgrade us to the Enterprise plan."
CANCEL = "Please cancel my subscription."

_LETTERS = {"S": "supervisor", "B": "billing", "T": "tech_support", "A": "account"}


def agents(letters: str) -> list[str]:
    """``"S B B S"`` -> the agents of a turn's model calls, in order."""
    return [_LETTERS[letter] for letter in letters.split()]


class CallLog(BaseCallbackHandler):
    """The agent of each model call: the first segment of its checkpoint namespace."""

    def __init__(self) -> None:
        self.agents: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        namespace = (kwargs.get("metadata") or {})["langgraph_checkpoint_ns"]
        self.agents.append(namespace.split("|")[0].split(":")[0])


class Chat:
    """One conversation with a checkpointer graph on a thread of its own, turn by turn."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.config = {"configurable": {"thread_id": str(uuid.uuid4())}}

    def say(self, text: str) -> list[str]:
        """Send only the new message; returns the agents of the turn's model calls."""
        return self._send({"messages": [HumanMessage(text)], "resolution_notes": []})

    def resume(self, value: Any) -> list[str]:
        return self._send(Command(resume=value))

    def _send(self, payload: Any) -> list[str]:
        log = CallLog()
        self.graph.invoke(payload, {**self.config, "callbacks": [log]})
        return log.agents

    @property
    def values(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    def interrupts(self) -> list[Any]:
        return [each.value for each in self.graph.get_state(self.config).interrupts]

    def answer(self) -> str:
        return str(self.values["messages"][-1].content)


# --- the scripted model acts on the latest request -----------------------------------

_PROMPT = policy.Turn("system", "You are the team.")
_FIRST = policy.Turn("human", INVOICE)
_LOOKED_UP = (
    policy.Turn("ai", "", "billing", ("lookup_invoice",)),
    policy.Turn("tool", "Invoice INV-2041: $49.00 ...", "lookup_invoice"),
    policy.Turn("ai", "Invoice INV-2041: $49.00 ... Let me know.", "billing"),
)


def test_question_is_the_latest_user_message_and_earlier_turns_are_history() -> None:
    latest = policy.Turn("human", UPGRADE)
    convo = policy.Conversation((_PROMPT, _FIRST, *_LOOKED_UP, latest), ("change_plan",))

    assert convo.question == UPGRADE
    assert convo.since_request().turns == (latest,)
    assert convo.since_request().tools == ("change_plan",)
    single = policy.Conversation((_PROMPT, _FIRST))
    assert single.question == INVOICE and single.since_request().turns == (_FIRST,)


def test_a_specialist_acts_on_the_follow_up_not_on_its_earlier_results() -> None:
    tools = ("update_payment_method", "lookup_invoice", "issue_refund", "transfer_to_account")
    convo = policy.Conversation((_PROMPT, _FIRST, *_LOOKED_UP, policy.Turn("human", REFUND)), tools)

    reply = policy.specialist_turn("billing", convo)

    assert reply.calls == [("issue_refund", {"invoice_id": "INV-2041", "amount": 49.0})]
    follow_up = policy.Turn("human", UPGRADE)
    handed = policy.specialist_turn(
        "billing", policy.Conversation((*convo.turns, follow_up), tools)
    )
    assert handed.calls == [("transfer_to_account", {})]


def test_the_supervisor_routes_a_follow_up_by_its_own_words() -> None:
    routed_before = (
        policy.Turn("ai", "Routing.", "supervisor", ("transfer_to_billing",)),
        policy.Turn("tool", "Transferred", "transfer_to_billing"),
        *_LOOKED_UP,
        policy.Turn("ai", "Here is a summary ...", "supervisor"),
    )
    tools = tuple(f"transfer_to_{agent}" for agent in AGENTS)
    convo = policy.Conversation(
        (_PROMPT, _FIRST, *routed_before, policy.Turn("human", UPGRADE)), tools
    )

    assert policy.supervisor_turn(convo).calls == [("transfer_to_account", {})]


def test_a_tool_the_agent_was_not_given_is_not_called() -> None:
    convo = policy.Conversation((policy.Turn("human", CANCEL),), ("change_plan",))
    reply = policy.specialist_turn("account", convo)

    assert reply.calls == [] and "could not find anything" in reply.content
    given = policy.Conversation(convo.turns, ("change_plan", "cancel_subscription"))
    assert policy.specialist_turn("account", given).calls == [("cancel_subscription", {})]


# --- the conversation graphs ---------------------------------------------------------


def test_only_the_conversation_graphs_have_a_checkpointer_and_the_cancel_tool() -> None:
    assert supervisor.graph.checkpointer is None and swarm.graph.checkpointer is None
    assert isinstance(supervisor.conversational_graph.checkpointer, InMemorySaver)
    assert isinstance(swarm.conversational_graph.checkpointer, InMemorySaver)

    state = swarm.graph.invoke({"messages": [HumanMessage(CANCEL)], "resolution_notes": []})

    assert "__interrupt__" not in state and state["resolution_notes"] == []
    final = state["messages"][-1]
    assert final.name == "account" and "could not find anything" in final.content


def test_the_swarm_answers_a_same_domain_follow_up_with_the_active_agent() -> None:
    chat = Chat(swarm.conversational_graph)

    assert chat.say(INVOICE) == agents("A B B")
    assert chat.values["active_agent"] == "billing"
    assert chat.say(REFUND) == agents("B B")
    assert chat.values["resolution_notes"] == [
        "billing: looked up invoice INV-2041",
        "billing: issued refund of $49.00 for INV-2041",
    ]
    assert chat.answer().startswith("Refund of $49.00 issued for invoice INV-2041")


def test_the_supervisor_routes_the_same_domain_follow_up_again() -> None:
    chat = Chat(supervisor.conversational_graph)

    assert chat.say(INVOICE) == agents("S B B S")
    follow_up = chat.say(REFUND)
    assert follow_up == agents("S B B S")
    answer = chat.answer()
    assert "Refund of $49.00 issued for invoice INV-2041" in answer
    assert "PDF copy" not in answer  # the first turn's invoice is not summarised again


@pytest.mark.parametrize(
    ("graph", "first", "second"),
    [
        (swarm.conversational_graph, "A B B", "B A A"),
        (supervisor.conversational_graph, "S B B S", "S A A S"),
    ],
    ids=["swarm", "supervisor"],
)
def test_a_follow_up_in_another_domain_goes_to_that_domain(
    graph: Any, first: str, second: str
) -> None:
    chat = Chat(graph)

    assert chat.say("I was charged twice in May, please refund $49.") == agents(first)
    assert chat.say("Also, please upgrade us to the Enterprise plan.") == agents(second)
    assert chat.values["resolution_notes"] == [
        "billing: issued refund of $49.00 for INV-1042",
        "account: upgraded plan to Enterprise",
    ]


def test_without_a_checkpointer_the_history_is_sent_and_the_latest_message_acted_on() -> None:
    history = [
        HumanMessage(INVOICE),
        AIMessage("Invoice INV-2041: $49.00 for the Pro plan subscription."),
        HumanMessage(UPGRADE),
    ]
    log = CallLog()
    state = swarm.graph.invoke({"messages": history, "resolution_notes": []}, {"callbacks": [log]})

    assert log.agents == agents("A A")  # the front desk: no active agent is remembered
    assert state["resolution_notes"] == ["account: upgraded plan to Enterprise"]


@pytest.mark.parametrize(
    ("graph", "asked", "resumed"),
    [(swarm.conversational_graph, "A", "A"), (supervisor.conversational_graph, "S A", "A S")],
    ids=["swarm", "supervisor"],
)
def test_a_cancellation_waits_for_the_customer_and_the_resume_finishes_it(
    graph: Any, asked: str, resumed: str
) -> None:
    chat = Chat(graph)

    assert chat.say(CANCEL) == agents(asked)
    assert chat.interrupts() == [CANCEL_QUESTION]
    assert chat.values.get("resolution_notes") == []
    assert chat.resume("yes") == agents(resumed)
    assert chat.interrupts() == []
    assert chat.values["resolution_notes"] == ["account: cancelled the subscription"]
    assert "will not renew" in chat.answer()


def test_a_declined_cancellation_changes_nothing() -> None:
    chat = Chat(swarm.conversational_graph)
    chat.say("I want to cancel my subscription.")

    assert chat.resume("no") == agents("A")
    assert chat.values["resolution_notes"] == [
        "account: kept the subscription, cancellation not confirmed"
    ]
    assert "stays active" in chat.answer()


# --- the conversations dataset, turn by turn -----------------------------------------

# Per turn, the agents of the model calls ("|" between turns), read off the rules.
SUPERVISOR_TURNS = {
    "billing-invoice-then-refund": "S B B S | S B B S",
    "tech-sso-then-mfa": "S T T S | S T T S",
    "tech-export-then-api-error": "S T T S | S T T S",
    "billing-paypal-then-invoice-then-thanks": "S B B S | S B B S | S",
    "account-upgrade-then-seats": "S A A S | S A A S",
    "billing-refund-then-upgrade": "S B B S | S A A S",
    "tech-mfa-then-invoice": "S T T S | S B B S",
    "account-manager-then-sso": "S A A S | S T T S",
    "tech-sso-then-upgrade-then-refund": "S T T S | S A A S | S B B S",
    "billing-renewal-then-paypal": "S B B S | S B B S",
    "account-manager-then-refund-and-mfa": "S A A S | S T T S B B S",
    "account-cancel-confirmed": "S A | A S",
    "account-cancel-declined": "S A | A S",
    "billing-invoice-then-cancel": "S B B S | S A | A S",
    "tech-error-then-refund-then-cancel": "S T T S | S B B S | S A | A S",
}
SWARM_TURNS = {
    "billing-invoice-then-refund": "A B B | B B",
    "tech-sso-then-mfa": "A T T | T T",
    "tech-export-then-api-error": "A T T | T T",
    # the closing "thanks" reaches billing, still active, which looks up an invoice
    "billing-paypal-then-invoice-then-thanks": "A B B | B B | B B",
    # "seats" and "plan" only: account pushes it to billing, which pushes it back
    "account-upgrade-then-seats": "A A | A B A A",
    "billing-refund-then-upgrade": "A B B | B A A",
    "tech-mfa-then-invoice": "A T T | T B B",
    "account-manager-then-sso": "A A | A T T",
    "tech-sso-then-upgrade-then-refund": "A T T | T A A | A B B",
    # the renewal question ping-pongs and ends at account, unanswered
    "billing-renewal-then-paypal": "A B A | A B B",
    "account-manager-then-refund-and-mfa": "A A | A B B T T",
    "account-cancel-confirmed": "A | A",
    "account-cancel-declined": "A | A",
    "billing-invoice-then-cancel": "A B B | B A | A",
    "tech-error-then-refund-then-cancel": "A T T | T B B | B A | A",
}


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]


def is_resume(turn: Any) -> bool:
    return isinstance(turn, dict) and set(turn) == {"resume"}


def drive(graph: Any, turns: list[Any]) -> tuple[list[list[str]], list[list[Any]]]:
    """Each turn's model-call agents and the interrupts pending after it."""
    chat = Chat(graph)
    calls, pending = [], []
    for turn in turns:
        calls.append(chat.resume(turn["resume"]) if is_resume(turn) else chat.say(turn))
        pending.append(chat.interrupts())
    return calls, pending


def test_dataset_rows_are_conversations_of_two_to_four_turns() -> None:
    found = rows()

    assert 12 <= len(found) <= 16 and len({row["id"] for row in found}) == len(found)
    assert {row["metadata"]["category"] for row in found} == {
        "same-domain",
        "cross-domain",
        "interrupt",
    }
    for row in found:
        assert shape_problem(row["inputs"], row["outputs"]) is None, row["id"]
        turns, references = row["inputs"]["turns"], row["outputs"]["turns"]
        assert 2 <= len(turns) <= 4, row["id"]
        needed = [agent for each in references for agent in each["expected_agents"]]
        assert set(needed) <= set(AGENTS), row["id"]
        assert row["outputs"]["expected_agents"] == list(dict.fromkeys(needed)), row["id"]
    assert set(SUPERVISOR_TURNS) == set(SWARM_TURNS) == {row["id"] for row in found}


def test_the_spec_runs_both_conversation_graphs_on_the_dataset() -> None:
    spec = load_spec(SPEC)
    routing = load_spec(ROOT / "configs" / "routing.yaml")

    assert [t.name for t in spec.targets] == ["supervisor", "swarm"]
    assert [t.target for t in spec.targets] == [
        "agenteval_cli.demo.supervisor:conversational_graph",
        "agenteval_cli.demo.swarm:conversational_graph",
    ]
    assert Path(spec.dataset.path).resolve() == DATASET.resolve()
    assert spec.evaluators == routing.evaluators


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["id"])
def test_each_conversation_turn_by_turn(row: dict[str, Any]) -> None:
    turns, references = row["inputs"]["turns"], row["outputs"]["turns"]
    expected = {
        "supervisor": [agents(t) for t in SUPERVISOR_TURNS[row["id"]].split("|")],
        "swarm": [agents(t) for t in SWARM_TURNS[row["id"]].split("|")],
    }
    supervisor_calls, supervisor_pending = drive(supervisor.conversational_graph, turns)
    swarm_calls, swarm_pending = drive(swarm.conversational_graph, turns)

    assert supervisor_calls == expected["supervisor"]
    assert swarm_calls == expected["swarm"]
    # an interrupt waits after each turn followed by a resume, and the conversation ends done
    asks = [[CANCEL_QUESTION] if is_resume(nxt) else [] for nxt in [*turns[1:], None]]
    assert supervisor_pending == swarm_pending == asks
    for calls, each in zip(supervisor_calls, references, strict=True):
        # the supervisor reads carefully: exactly the expected specialists, every turn
        assert set(calls) - {"supervisor"} == set(each["expected_agents"])


def test_the_swarm_spends_fewer_calls_on_same_domain_follow_ups() -> None:
    same = [row for row in rows() if row["metadata"]["category"] == "same-domain"]

    def follow_ups(graph: Any) -> list[int]:
        turns = [drive(graph, row["inputs"]["turns"])[0][1:] for row in same]
        return [len(calls) for each in turns for calls in each]

    # the ping-pong on "seats" (4) and the supervisor's one call on "thanks" (1) aside,
    # the active agent answers in 2 calls where the supervisor routes, delegates and sums up
    assert follow_ups(swarm.conversational_graph) == [2, 2, 2, 2, 2, 4]
    assert follow_ups(supervisor.conversational_graph) == [4, 4, 4, 4, 1, 4]
