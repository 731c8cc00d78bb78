"""Conversations over graphs of other forms than the demo's, run through the CLI: a
langgraph-supervisor graph with a checkpointer, a LangChain ``create_agent`` agent, a function
keeping its own checkpointer around a swarm, a router without a checkpointer, an interrupt in
a subgraph, repetitions, a function sending its graph the history it is given; and compare
and ``--by-agent`` over such runs. Every score, per turn and per conversation, is checked
against what the scripted models' scripts and logs say.

Prices are 1 USD per 1M input tokens and 2 per 1M output tokens for every model, so a call of
``(i, o)`` tokens costs ``(i + 2 * o) / 1e6``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agenteval_cli.core.records import Trace, Turn
from agenteval_cli.trace.turns import merge_turn_traces

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")

EVALUATORS = "[routing_accuracy, resolution_coverage, handoff_chain_length, token_cost]"
MODELS = ("sup", "front", "billing", "account", "router", "agent")
PRICING = "pricing:\n" + "".join(f"  {m}-model: {{input: 1.0, output: 2.0}}\n" for m in MODELS)

# A graph module's common lines: the fake models, the prebuilt agent, the tools' decorator.
HEADER = """\
import warnings
from fakes import reply, scripted
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent
"""


def cost(*calls: tuple[int, int]) -> float:
    """What calls of ``(input, output)`` tokens cost at this file's prices."""
    return sum(i + 2 * o for i, o in calls) / 1e6


class Run:
    """A spec run through the CLI: its exit code, its ``--json`` export, its store, and the
    target module as the run loaded it (its scripted models' logs)."""

    def __init__(
        self,
        folder: Path,
        invoke: Callable[..., Any],
        code: str,
        rows: Sequence[dict[str, Any]],
        *,
        targets: str = "{t: graph.py:graph}",
        extra: str = "",
        args: Sequence[str] = (),
        concurrency: int = 1,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.module_path = folder / "graph.py"
        self.module_path.write_text(HEADER + code, encoding="utf-8")
        (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        spec = folder / "spec.yaml"
        spec.write_text(
            f"dataset: data.jsonl\ntargets: {targets}\nevaluators: {EVALUATORS}\n"
            f"concurrency: {concurrency}\n{PRICING}{extra}"
        )
        self.store = folder / "s.db"
        out = folder / "r.json"
        self.cli = invoke("run", spec, "--store", self.store, "--json", out, *args)
        assert out.exists(), self.cli.output
        self.experiments = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}

    @property
    def module(self) -> ModuleType:
        wanted = str(self.module_path.resolve())
        return next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == wanted)

    def result(self, example_id: str, target: str = "t", repetition: int = 0) -> dict[str, Any]:
        (found,) = [
            r
            for r in self.experiments[target]["results"]
            if (r["example_id"], r["repetition"]) == (example_id, repetition)
        ]
        return found

    def stored_messages(self, example_id: str) -> list[tuple[str, str]]:
        """(role, text) of the merged trace's messages of a conversation, as stored."""
        db = sqlite3.connect(self.store)
        try:
            (raw,) = db.execute(
                "SELECT trace_json FROM results WHERE example_id = ?", (example_id,)
            ).fetchone()
        finally:
            db.close()
        return [(m["role"], m.get("content") or "") for m in json.loads(raw)["messages"]]


def agents_of(turn: dict[str, Any]) -> list[str | None]:
    return [call["agent"] for call in turn["trace"]["model_calls"]]


def tokens_of(turn: dict[str, Any]) -> list[tuple[int, int]]:
    return [(c["input_tokens"], c["output_tokens"]) for c in turn["trace"]["model_calls"]]


def hops(turn: dict[str, Any]) -> list[tuple[str, str]]:
    return [(h["source"], h["target"]) for h in turn["trace"]["handoffs"]]


def texts(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """(type, text) of the messages a model call received, system prompts left out."""
    return [(m.type, str(m.content)) for m in messages if m.type != "system"]


def check_request_sums(result: dict[str, Any], turn_calls: list[list[tuple[int, int]]]) -> None:
    """The conversation's tokens and cost are its turns' sums, each turn's its calls'."""
    for turn, calls in zip(result["turns"], turn_calls, strict=True):
        assert tokens_of(turn) == calls
        assert turn["scores"]["input_tokens"] == sum(i for i, _ in calls)
        assert turn["scores"]["output_tokens"] == sum(o for _, o in calls)
        assert turn["scores"]["cost_usd"] == pytest.approx(cost(*calls))
    every = [call for calls in turn_calls for call in calls]
    assert result["scores"]["input_tokens"] == sum(i for i, _ in every)
    assert result["scores"]["output_tokens"] == sum(o for _, o in every)
    assert result["scores"]["cost_usd"] == pytest.approx(cost(*every))
    assert result["scores"]["model_calls"] == len(every)


# --- 1. a langgraph-supervisor graph with a checkpointer: every turn routed again ---------

SUPERVISOR = """
from langgraph_supervisor import create_supervisor

sup = scripted("sup-model",
    reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
    reply("Invoice INV-7 is paid.", tokens=(20, 2)),
    reply(tools=[("transfer_to_billing", {})], tokens=(30, 1)),
    reply("The refund of INV-7 is on its way.", tokens=(40, 2)),
    reply(tools=[("transfer_to_account", {})], tokens=(50, 1)),
    reply("You are on the Pro plan.", tokens=(60, 2)),
    reply(tools=[("transfer_to_billing", {})], tokens=(70, 1)),
    reply("INV-8 is due on June 1.", tokens=(80, 2)),
)
billing = scripted("billing-model",
    reply("INV-7 is paid.", tokens=(5, 1)),
    reply("Refund sent.", tokens=(6, 1)),
    reply("INV-8 is due June 1.", tokens=(8, 1)),
)
account = scripted("account-model", reply("Pro plan.", tokens=(7, 1)))
agents = [create_react_agent(billing, [], name="billing", prompt="b"),
          create_react_agent(account, [], name="account", prompt="a")]
graph = create_supervisor(agents, model=sup, output_mode=OUTPUT_MODE,
                          add_handoff_back_messages=BACK_MESSAGES,
                          supervisor_name="supervisor").compile(checkpointer=InMemorySaver())
"""
SUPERVISED = {
    "id": "invoice-refund-plan-invoice",
    "inputs": {
        "turns": [
            "Is invoice INV-7 paid?",  # billing
            "Please refund INV-7.",  # the same domain
            "What plan am I on?",  # another domain
            "When is INV-8 due?",  # back to billing
        ]
    },
    "outputs": {
        "turns": [
            {"expected_agents": ["billing"], "must_mention": ["INV-7"]},
            {"expected_agents": ["billing"], "must_mention": ["refund"]},
            {"expected_agents": ["account"], "must_mention": ["Pro"]},
            {"expected_agents": ["billing"], "must_mention": ["June 1"]},
        ],
        "expected_agents": ["billing", "account"],
    },
}


@pytest.mark.parametrize(
    ("output_mode", "back_messages"),
    [("last_message", False), ("last_message", True), ("full_history", False)],
)
def test_a_supervisor_with_a_checkpointer_routes_every_turn_again(
    tmp_path, invoke, output_mode, back_messages
):
    code = SUPERVISOR.replace("OUTPUT_MODE", repr(output_mode)).replace(
        "BACK_MESSAGES", str(back_messages)
    )
    run = Run(tmp_path, invoke, code, [SUPERVISED])
    assert run.cli.exit_code == 0, run.cli.output
    result = run.result(SUPERVISED["id"])
    turns = result["turns"]
    specialists = ["billing", "billing", "account", "billing"]
    for turn, specialist in zip(turns, specialists, strict=True):
        # the supervisor routes, the specialist answers, control comes back, it sums up
        assert agents_of(turn) == ["supervisor", specialist, "supervisor"]
        assert turn["trace"]["agent_path"] == ["supervisor", specialist, "supervisor"]
        assert hops(turn) == [("supervisor", specialist), (specialist, "supervisor")]
        assert turn["status"] == "ok"
        assert turn["scores"]["routing_accuracy"] == 1.0
        assert turn["scores"]["resolution_coverage"] == 1.0
        assert turn["scores"]["handoff_chain_length"] == 2
        assert turn["scores"]["ping_pong"] is False
    calls = [
        [(10, 1), (5, 1), (20, 2)],
        [(30, 1), (6, 1), (40, 2)],
        [(50, 1), (7, 1), (60, 2)],
        [(70, 1), (8, 1), (80, 2)],
    ]
    check_request_sums(result, calls)
    scores = result["scores"]
    assert scores["turns"] == 4
    assert scores["resolved"] is True
    assert scores["turns_to_resolution"] == 4
    assert scores["agent_continuity"] == 0.0  # every follow-up began at the supervisor
    assert scores["followup_model_calls"] == 3.0
    assert scores["followup_cost_usd"] == pytest.approx(sum(cost(*turn) for turn in calls[1:]) / 3)
    # each turn's two handoffs; every turn began where the last one ended (the supervisor)
    assert scores["conversation_handoffs"] == 8
    # billing, account, billing again: through the supervisor each time, no bounce
    assert scores["conversation_ping_pong"] is False
    assert scores["handoff_chain_length"] == 8
    assert scores["routing_accuracy"] == 1.0
    # the checkpointer kept the conversation: each turn's first call saw the turns before
    models = run.module
    first_of_turn = [models.sup.received[i] for i in (0, 2, 4, 6)]
    for number, received in enumerate(first_of_turn):
        humans = [text for kind, text in texts(received) if kind == "human"]
        assert humans == SUPERVISED["inputs"]["turns"][: number + 1]
    answers = [text for kind, text in texts(models.sup.received[6]) if kind == "ai" and text]
    assert "Invoice INV-7 is paid." in answers and "You are on the Pro plan." in answers
    assert models.sup.calls == 8 and models.billing.calls == 3 and models.account.calls == 1
    # the merged trace holds each message once, in order
    said = [text for role, text in run.stored_messages(SUPERVISED["id"]) if role == "user"]
    assert said == SUPERVISED["inputs"]["turns"]


# --- 2. a LangChain create_agent agent with a checkpointer: tools in the follow-up --------

AGENT = """
from langchain.agents import create_agent

@tool
def lookup_invoice(number: str) -> str:
    \"\"\"Look an invoice up.\"\"\"
    return f"{number}: paid on May 2"

model = scripted("agent-model",
    reply("Hello, how can I help?", tokens=(10, 2)),
    reply(tools=[("lookup_invoice", {"number": "INV-9"})], tokens=(20, 3)),
    reply("INV-9 was paid on May 2.", tokens=(30, 4)),
)
graph = create_agent(model, [lookup_invoice], name="helper", checkpointer=InMemorySaver())
"""
GREETING_THEN_LOOKUP = {
    "id": "hi-then-invoice",
    "inputs": {"turns": ["Hi", "Was INV-9 paid?"]},
    "outputs": {
        "turns": [
            {"must_mention": ["help"]},
            {"expected_tools": ["lookup_invoice"], "must_mention": ["May 2"]},
        ]
    },
}


def test_a_create_agent_agent_keeps_the_conversation_and_calls_its_tool_in_turn_two(
    tmp_path, invoke
):
    pytest.importorskip("langchain.agents")
    run = Run(tmp_path, invoke, AGENT, [GREETING_THEN_LOOKUP])
    assert run.cli.exit_code == 0, run.cli.output
    result = run.result("hi-then-invoice")
    first, second = result["turns"]
    assert agents_of(first) == ["helper"] and agents_of(second) == ["helper", "helper"]
    assert first["trace"]["tool_calls"] == []
    assert [(c["name"], c["args"]) for c in second["trace"]["tool_calls"]] == [
        ("lookup_invoice", {"number": "INV-9"})
    ]
    assert [t["outputs"]["final_response"] for t in result["turns"]] == [
        "Hello, how can I help?",
        "INV-9 was paid on May 2.",
    ]
    assert first["scores"]["resolution_coverage"] == 1.0
    assert second["scores"]["resolution_coverage"] == 1.0
    check_request_sums(result, [[(10, 2)], [(20, 3), (30, 4)]])
    scores = result["scores"]
    assert (scores["turns"], scores["resolved"], scores["turns_to_resolution"]) == (2, True, 2)
    assert scores["agent_continuity"] == 1.0  # one agent: it went on, no handoff
    assert scores["followup_model_calls"] == 2.0
    assert scores["followup_cost_usd"] == pytest.approx(cost((20, 3), (30, 4)))
    assert (scores["conversation_handoffs"], scores["conversation_ping_pong"]) == (0, False)
    # turn 2's first call was given turn 1 from the checkpointer and only the new message
    received = run.module.model.received
    assert texts(received[1]) == [
        ("human", "Hi"),
        ("ai", "Hello, how can I help?"),
        ("human", "Was INV-9 paid?"),
    ]
    assert texts(received[2])[-1] == ("tool", "INV-9: paid on May 2")
    assert run.stored_messages("hi-then-invoice") == [
        ("user", "Hi"),
        ("assistant", "Hello, how can I help?"),
        ("user", "Was INV-9 paid?"),
        ("assistant", ""),
        ("tool", "INV-9: paid on May 2"),
        ("assistant", "INV-9 was paid on May 2."),
    ]


# --- 3. a function keeping its own checkpointer around a swarm ----------------------------

FUNCTION_SWARM = """
from langgraph_swarm import create_handoff_tool, create_swarm

front = scripted("front-model", reply(tools=[("transfer_to_billing", {})], tokens=(3, 1)))
billing = scripted("billing-model",
    reply("INV-1 is paid.", tokens=(9, 4)),
    reply(tools=[("transfer_to_account", {})], tokens=(12, 1)),
    reply("Refund of INV-1 sent.", tokens=(18, 6)))
account = scripted("account-model",
    reply("You are on the Pro plan.", tokens=(15, 5)),
    reply(tools=[("transfer_to_billing", {})], tokens=(16, 1)))
agents = [
    create_react_agent(front, [create_handoff_tool(agent_name="billing")], name="front_desk",
                       prompt="f"),
    create_react_agent(billing, [create_handoff_tool(agent_name="account")], name="billing",
                       prompt="b"),
    create_react_agent(account, [create_handoff_tool(agent_name="billing")], name="account",
                       prompt="a"),
]
saver = InMemorySaver()
swarm = create_swarm(agents, default_active_agent="front_desk").compile(checkpointer=saver)
seen = []

async def answer(inputs):
    seen.append(inputs)
    config = {"configurable": {"thread_id": inputs["thread_id"]}}
    state = await swarm.ainvoke({"messages": [HumanMessage(inputs["question"])]}, config)
    return {"final_response": state["messages"][-1].content}
"""
THREE_DOMAINS = {
    "id": "paid-plan-refund",
    "inputs": {"turns": ["Is INV-1 paid?", "What plan am I on?", "Refund INV-1, please."]},
    "outputs": {
        "turns": [
            {"expected_agents": ["billing"]},
            {"expected_agents": ["account"]},
            {"expected_agents": ["billing"], "must_mention": ["Refund"]},
        ]
    },
}


def test_a_function_with_its_own_checkpointer_gets_one_thread_and_the_history(tmp_path, invoke):
    run = Run(tmp_path, invoke, FUNCTION_SWARM, [THREE_DOMAINS], targets="{t: graph.py:answer}")
    assert run.cli.exit_code == 0, run.cli.output
    module = run.module
    # the same thread on every turn, the conversation before each turn as history
    threads = {inputs["thread_id"] for inputs in module.seen}
    assert len(module.seen) == 3 and len(threads) == 1
    assert {c.config["configurable"]["thread_id"] for c in module.saver.list(None)} == threads
    assert [inputs["question"] for inputs in module.seen] == THREE_DOMAINS["inputs"]["turns"]
    assert module.seen[2]["history"] == [
        {"role": "user", "content": "Is INV-1 paid?"},
        {"role": "assistant", "content": "INV-1 is paid."},
        {"role": "user", "content": "What plan am I on?"},
        {"role": "assistant", "content": "You are on the Pro plan."},
    ]
    result = run.result("paid-plan-refund")
    turns = result["turns"]
    # the swarm remembers its active agent: each follow-up begins where the last one ended
    assert [agents_of(t) for t in turns] == [
        ["front_desk", "billing"],
        ["billing", "account"],
        ["account", "billing"],
    ]
    assert [hops(t) for t in turns] == [
        [("front_desk", "billing")],
        [("billing", "account")],
        [("account", "billing")],
    ]
    assert [t["scores"]["handoff_chain_length"] for t in turns] == [1, 1, 1]
    assert [t["scores"]["ping_pong"] for t in turns] == [False, False, False]
    calls = [[(3, 1), (9, 4)], [(12, 1), (15, 5)], [(16, 1), (18, 6)]]
    check_request_sums(result, calls)
    scores = result["scores"]
    assert (scores["turns"], scores["resolved"], scores["turns_to_resolution"]) == (3, True, 3)
    # each follow-up began at the active agent, then handed on: no continuity
    assert scores["agent_continuity"] == 0.0
    assert scores["followup_model_calls"] == 2.0
    assert scores["followup_cost_usd"] == pytest.approx((cost(*calls[1]) + cost(*calls[2])) / 2)
    assert scores["conversation_handoffs"] == 3  # one a turn, no turn began elsewhere
    # billing -> account in turn 2, account -> billing in turn 3: a bounce across turns
    assert scores["conversation_ping_pong"] is True
    assert "(turn 2)" in result["comments"]["conversation_ping_pong"]


# --- 4. a router without a checkpointer: the history carried in messages ------------------

ROUTER = """
from typing import Literal
from langgraph.graph import END, START, MessagesState, StateGraph

router_model = scripted("router-model", reply("billing", tokens=(4, 1)),
                        reply("account", tokens=(8, 1)))
billing_model = scripted("billing-model", reply("INV-3 is paid.", tokens=(10, 3)))
account_model = scripted("account-model", reply("You are on Pro.", tokens=(20, 4)))

def router(state: MessagesState) -> Command[Literal["billing", "account"]]:
    return Command(goto=router_model.invoke(state["messages"]).content)

def billing(state: MessagesState):
    return {"messages": [billing_model.invoke(state["messages"])]}

def account(state: MessagesState):
    return {"messages": [account_model.invoke(state["messages"])]}

builder = StateGraph(MessagesState)
builder.add_node("router", router)
builder.add_node("billing", billing)
builder.add_node("account", account)
builder.add_edge(START, "router")
builder.add_edge("billing", END)
builder.add_edge("account", END)
graph = builder.compile()
"""
ROUTED = {
    "id": "paid-then-plan",
    "inputs": {"turns": ["Is INV-3 paid?", "What plan am I on?"]},
    "outputs": {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["account"]}]},
}


def test_a_router_without_a_checkpointer_is_given_the_history_once(tmp_path, invoke):
    run = Run(tmp_path, invoke, ROUTER, [ROUTED])
    assert run.cli.exit_code == 0, run.cli.output
    module = run.module
    # turn 2's router call held turn 1's messages (as the graph returned them) and the new one
    assert texts(module.router_model.received[1]) == [
        ("human", "Is INV-3 paid?"),
        ("ai", "INV-3 is paid."),
        ("human", "What plan am I on?"),
    ]
    assert texts(module.account_model.received[0]) == texts(module.router_model.received[1])
    result = run.result("paid-then-plan")
    first, second = result["turns"]
    assert agents_of(first) == ["router", "billing"] and agents_of(second) == ["router", "account"]
    assert hops(first) == [("router", "billing")] and hops(second) == [("router", "account")]
    check_request_sums(result, [[(4, 1), (10, 3)], [(8, 1), (20, 4)]])
    scores = result["scores"]
    assert (scores["turns"], scores["resolved"]) == (2, True)
    assert scores["agent_continuity"] == 0.0  # turn 2 began at the router, not at billing
    # a handoff a turn; turn 2 restarted at the router, the entry: no handoff
    assert scores["conversation_handoffs"] == 2
    assert result["comments"]["conversation_handoffs"] == (
        "per turn 1 + 1; restarted (no handoff): turn 2 at router"
    )
    assert scores["conversation_ping_pong"] is False
    assert scores["followup_model_calls"] == 2.0
    # the merged trace: each message once, although turn 2's calls were given turn 1's
    assert run.stored_messages("paid-then-plan") == [
        ("user", "Is INV-3 paid?"),
        ("assistant", "billing"),
        ("assistant", "INV-3 is paid."),
        ("user", "What plan am I on?"),
        ("assistant", "account"),
        ("assistant", "You are on Pro."),
    ]


# --- 5. an interrupt in a subgraph's tool: resumed, or left unanswered --------------------

INTERRUPTING = """
from langgraph.graph import END, START, MessagesState, StateGraph

@tool
def cancel_subscription() -> str:
    \"\"\"Cancel the subscription, once the customer confirms.\"\"\"
    return "cancelled" if interrupt("Cancel your subscription?") == "yes" else "kept"

model = scripted("account-model",
    reply(tools=[("cancel_subscription", {})], tokens=(10, 1)),  # confirmed: asks ...
    reply("Your subscription will not renew.", tokens=(20, 2)),  # ... and answers
    reply(tools=[("cancel_subscription", {})], tokens=(30, 3)),  # left: asks, no answer
    reply(tools=[("cancel_subscription", {})], tokens=(40, 4)),  # a message instead
)
account = create_react_agent(model, [cancel_subscription], name="account", prompt="a")
builder = StateGraph(MessagesState)
builder.add_node("account", account)  # the agent is a subgraph
builder.add_edge(START, "account")
builder.add_edge("account", END)
graph = builder.compile(checkpointer=InMemorySaver())
"""
CANCEL = "Please cancel my subscription."
CANCELLATIONS = [
    {
        "id": "confirmed",
        "inputs": {"turns": [CANCEL, {"resume": "yes"}]},
        "outputs": {
            "turns": [{"expected_agents": ["account"]}, {"must_mention": ["will not renew"]}]
        },
    },
    {"id": "left", "inputs": {"turns": [CANCEL]}},
    {"id": "talked-over", "inputs": {"turns": [CANCEL, "Hello?"]}},
]


@pytest.mark.parametrize(("allowed", "exit_code"), [(None, 3), (0.7, 0)])
def test_an_interrupt_in_a_subgraph_is_resumed_or_ends_the_conversation_interrupted(
    tmp_path, invoke, allowed, exit_code
):
    extra = "" if allowed is None else f"max_interrupt_rate: {allowed}\n"
    run = Run(tmp_path, invoke, INTERRUPTING, CANCELLATIONS, extra=extra)
    assert run.cli.exit_code == exit_code, run.cli.output
    assert run.module.model.calls == 4
    confirmed = run.result("confirmed")
    asked, resumed = confirmed["turns"]
    assert (asked["status"], json.loads(asked["interrupt"])) == (
        "interrupted",
        "Cancel your subscription?",
    )
    assert asked["scores"]["resolution_coverage"] is None  # no answer of its own
    assert asked["scores"]["routing_accuracy"] == 1.0
    assert (resumed["inputs"], resumed["status"]) == ({"resume": "yes"}, "ok")
    assert resumed["outputs"]["final_response"] == "Your subscription will not renew."
    assert resumed["scores"]["resolution_coverage"] == 1.0
    assert agents_of(asked) == ["account"] and agents_of(resumed) == ["account"]
    check_request_sums(confirmed, [[(10, 1)], [(20, 2)]])
    scores = confirmed["scores"]
    assert confirmed["status"] == "ok"
    assert (scores["turns"], scores["resolved"], scores["turns_to_resolution"]) == (2, True, 2)
    assert scores["agent_continuity"] == 1.0  # the resume went on with the account agent
    assert scores["followup_model_calls"] == 1.0
    assert scores["followup_cost_usd"] == pytest.approx(cost((20, 2)))
    assert (scores["conversation_handoffs"], scores["conversation_ping_pong"]) == (0, False)
    # the resume was given the state the interrupt left: the tool's answer came back
    assert texts(run.module.model.received[1])[-1] == ("tool", "cancelled")
    for example_id, sent, tokens in [("left", 1, (30, 3)), ("talked-over", 1, (40, 4))]:
        left = run.result(example_id)
        assert (left["status"], left["error"]) == ("interrupted", None)
        assert json.loads(left["interrupt"]) == "Cancel your subscription?"
        assert len(left["turns"]) == sent  # the message after it was never sent
        check_request_sums(left, [[tokens]])
        assert left["scores"]["turns"] == 1
        assert left["scores"]["resolved"] is False
        assert left["scores"]["turns_to_resolution"] is None
        assert left["scores"]["followup_model_calls"] is None
    metrics = run.experiments["t"]["metrics"]
    assert metrics["interrupt_rate"] == pytest.approx(2 / 3)
    assert metrics["resolved"] == pytest.approx(1 / 3)
    assert metrics["turns"] == pytest.approx(4 / 3)
    assert run.experiments["t"]["statuses"] == {"ok": 1, "error": 0, "interrupted": 2}


# --- 6. repetitions: each on a thread of its own ------------------------------------------

REPEATED_SWARM = """
from langgraph_swarm import create_handoff_tool, create_swarm

front = scripted("front-model", *[reply(tools=[("transfer_to_billing", {})], tokens=(3, 1))] * 2)
billing = scripted("billing-model",
    *[reply("INV-1 is paid.", tokens=(9, 4)), reply("Paid on May 2.", tokens=(12, 5))] * 2)
agents = [
    create_react_agent(front, [create_handoff_tool(agent_name="billing")], name="front_desk",
                       prompt="f"),
    create_react_agent(billing, [], name="billing", prompt="b"),
]
saver = InMemorySaver()
graph = create_swarm(agents, default_active_agent="front_desk").compile(checkpointer=saver)
"""
PAID_WHEN = {
    "id": "paid-when",
    "inputs": {"turns": ["Is INV-1 paid?", "When?"]},
    "outputs": {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["billing"]}]},
}


def test_each_repetition_of_a_conversation_runs_on_its_own_thread(tmp_path, invoke):
    run = Run(tmp_path, invoke, REPEATED_SWARM, [PAID_WHEN], extra="repetitions: 2\n")
    assert run.cli.exit_code == 0, run.cli.output
    module = run.module
    assert len({c.config["configurable"]["thread_id"] for c in module.saver.list(None)}) == 2
    # each repetition's first call saw only its own first message: nothing leaked
    assert [texts(r) for r in module.front.received] == [[("human", "Is INV-1 paid?")]] * 2
    assert [
        [text for kind, text in texts(r) if kind == "human"] for r in module.billing.received
    ] == [["Is INV-1 paid?"], ["Is INV-1 paid?", "When?"]] * 2
    for repetition in (0, 1):
        result = run.result("paid-when", repetition=repetition)
        first, second = result["turns"]
        # repetition 2 began at front_desk again, not at the billing agent left active
        assert agents_of(first) == ["front_desk", "billing"] and agents_of(second) == ["billing"]
        check_request_sums(result, [[(3, 1), (9, 4)], [(12, 5)]])
        scores = result["scores"]
        assert (scores["turns"], scores["resolved"], scores["agent_continuity"]) == (2, True, 1.0)
        assert (scores["conversation_handoffs"], scores["followup_model_calls"]) == (1, 1.0)
    metrics = run.experiments["t"]["metrics"]
    assert metrics["model_calls"] == 3.0
    # the conversation is the unit: one example, resolved in both repetitions
    resolved = run.experiments["t"]["pass_k"]["outcomes"]["resolved"]
    assert resolved["examples"] == 1 and resolved["repetitions"] == 2
    assert resolved["flaky"]["examples"] == 0 and resolved["flaky"]["of"] == 1
    assert [k["pass_hat_k"] for k in resolved["k"]] == [1.0, 1.0]


# the front desk hands off in one repetition and answers alone (wrongly) in the other
FLAKY_SWARM = """
from langgraph_swarm import create_handoff_tool, create_swarm

front = scripted("front-model", reply(tools=[("transfer_to_billing", {})], tokens=(3, 1)),
                 reply("I cannot help.", tokens=(3, 1)), reply("Still cannot.", tokens=(3, 1)))
billing = scripted("billing-model", reply("INV-1 is paid.", tokens=(9, 4)),
                   reply("Paid on May 2.", tokens=(12, 5)))
agents = [
    create_react_agent(front, [create_handoff_tool(agent_name="billing")], name="front_desk",
                       prompt="f"),
    create_react_agent(billing, [], name="billing", prompt="b"),
]
graph = create_swarm(agents, default_active_agent="front_desk").compile(
    checkpointer=InMemorySaver())
"""


def test_a_conversation_resolved_in_one_repetition_of_two_is_flaky(tmp_path, invoke):
    """One conversation, resolved in one repetition and not in the other (its first turn never
    reached billing): pass^1 = 1/2, pass^2 = C(1,2)/C(2,2) = 0, pass@2 = 1, flaky 1 of 1."""
    run = Run(tmp_path, invoke, FLAKY_SWARM, [PAID_WHEN], extra="repetitions: 2\n")
    assert run.cli.exit_code == 0, run.cli.output
    resolved = sorted(run.result("paid-when", repetition=r)["scores"]["resolved"] for r in (0, 1))
    assert resolved == [False, True]
    figures = run.experiments["t"]["pass_k"]
    found = figures["outcomes"]["resolved"]
    assert [(k["k"], k["pass_hat_k"], k["pass_at_k"]) for k in found["k"]] == [
        (1, 0.5, 0.5),
        (2, 0.0, 1.0),
    ]
    assert (found["flaky"]["examples"], found["flaky"]["of"]) == (1, 1)
    assert (figures["flaky"]["examples"], figures["flaky"]["of"]) == (1, 1)
    assert "resolved" in run.cli.output and "pass^k, k = 1 / 2" in run.cli.output


# --- a turn that could not be sent is no turn the conversation ran ------------------------

ECHO = """
from langgraph.graph import END, START, MessagesState, StateGraph

model = scripted("agent-model", reply("Hello.", tokens=(10, 1)))

def answer(state: MessagesState):
    return {"messages": [model.invoke(state["messages"])]}

builder = StateGraph(MessagesState)
builder.add_node("helper", answer)
builder.add_edge(START, "helper")
builder.add_edge("helper", END)
graph = builder.compile(checkpointer=CHECKPOINTER)
"""


@pytest.mark.parametrize("checkpointer", ["InMemorySaver()", "None"])
def test_a_resume_that_cannot_be_sent_is_not_counted_as_a_turn_or_a_follow_up(
    tmp_path, invoke, checkpointer
):
    row = {
        "id": "stray-resume",
        "inputs": {"turns": ["Hi", {"resume": "yes"}]},
        "outputs": {"turns": [{"must_mention": ["Hello"]}, {"expected_agents": ["helper"]}]},
    }
    run = Run(tmp_path, invoke, ECHO.replace("CHECKPOINTER", checkpointer), [row])
    assert run.cli.exit_code == 3, run.cli.output
    assert run.module.model.calls == 1
    result = run.result("stray-resume")
    assert result["status"] == "error"
    assert result["error"] == "turn 2 is a resume, but turn 1 did not stop at interrupt()"
    sent, unsent = result["turns"]  # the resume is kept, as the turn that ended it
    assert (sent["status"], unsent["status"]) == ("ok", "error")
    assert unsent["scores"] == {}  # nothing reached the target: nothing to score
    assert unsent["trace"]["model_calls"] == []
    scores = result["scores"]
    assert scores["turns"] == 1  # the turns the conversation ran
    assert scores["model_calls"] == 1
    assert scores["agent_continuity"] is None  # no follow-up ran
    assert scores["followup_model_calls"] is None
    assert scores["followup_cost_usd"] is None
    assert scores["conversation_handoffs"] == 0
    assert scores["routing_accuracy"] == 1.0 and result["comments"]["routing_accuracy"] == (
        "mean of 1 turns"
    )
    assert scores["resolved"] is False
    assert result["comments"]["resolved"].startswith("not resolved, turn 2:")
    assert tokens_of(sent) == [(10, 1)]
    assert (scores["input_tokens"], scores["output_tokens"]) == (10, 1)
    assert scores["cost_usd"] == pytest.approx(cost((10, 1)))
    assert result["comments"]["cost_usd"] == "sum of 1 turns"
    assert unsent["sent"] is False and sent["sent"] is True
    db = sqlite3.connect(run.store)
    try:
        (stored,) = db.execute("SELECT turns_json FROM results").fetchone()
    finally:
        db.close()
    assert [Turn.from_dict(t).sent for t in json.loads(stored)] == [True, False]


# --- compare pairs by conversation; --by-agent totals are the turns' sums -----------------

TWO_PATTERNS = """
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

sup = scripted("sup-model",
    reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
    reply("Invoice INV-7 is paid.", tokens=(20, 2)),
    reply(tools=[("transfer_to_billing", {})], tokens=(30, 1)),
    reply("The refund is on its way.", tokens=(40, 2)),
    reply(tools=[("transfer_to_account", {})], tokens=(50, 1)),
    reply("You are on the Pro plan.", tokens=(60, 2)),
)
sup_billing = scripted("billing-model", reply("Paid.", tokens=(5, 1)),
                       reply("Refunded.", tokens=(6, 1)))
sup_account = scripted("account-model", reply("Pro.", tokens=(7, 1)))
supervised = create_supervisor(
    [create_react_agent(sup_billing, [], name="billing", prompt="b"),
     create_react_agent(sup_account, [], name="account", prompt="a")],
    model=sup, output_mode="last_message", add_handoff_back_messages=False,
    supervisor_name="supervisor",
).compile(checkpointer=InMemorySaver())

front = scripted("front-model",
    reply(tools=[("transfer_to_billing", {})], tokens=(3, 1)),
    reply(tools=[("transfer_to_account", {})], tokens=(4, 1)))
billing = scripted("billing-model", reply("INV-7 is paid.", tokens=(9, 4)),
                   reply("The refund is on its way.", tokens=(12, 5)))
account = scripted("account-model", reply("You are on the Pro plan.", tokens=(15, 5)))
swarmed = create_swarm(
    [create_react_agent(front, [create_handoff_tool(agent_name="billing"),
                                create_handoff_tool(agent_name="account")],
                        name="front_desk", prompt="f"),
     create_react_agent(billing, [], name="billing", prompt="b"),
     create_react_agent(account, [], name="account", prompt="a")],
    default_active_agent="front_desk",
).compile(checkpointer=InMemorySaver())
"""
PAIRED = [
    {
        "id": "invoice-then-refund",
        "inputs": {"turns": ["Is INV-7 paid?", "Please refund INV-7."]},
        "outputs": {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["billing"]}]},
    },
    {
        "id": "plan",
        "inputs": {"turns": ["What plan am I on?"]},
        "outputs": {"turns": [{"expected_agents": ["account"]}]},
    },
]


def test_compare_pairs_by_conversation_and_by_agent_totals_are_the_turns_sums(tmp_path, invoke):
    run = Run(
        tmp_path,
        invoke,
        TWO_PATTERNS,
        PAIRED,
        targets="{supervisor: graph.py:supervised, swarm: graph.py:swarmed}",
        args=["--by-agent"],
    )
    assert run.cli.exit_code == 0, run.cli.output
    supervised = [run.result(r["id"], "supervisor") for r in PAIRED]
    swarmed = [run.result(r["id"], "swarm") for r in PAIRED]
    check_request_sums(supervised[0], [[(10, 1), (5, 1), (20, 2)], [(30, 1), (6, 1), (40, 2)]])
    check_request_sums(supervised[1], [[(50, 1), (7, 1), (60, 2)]])
    check_request_sums(swarmed[0], [[(3, 1), (9, 4)], [(12, 5)]])
    check_request_sums(swarmed[1], [[(4, 1), (15, 5)]])
    assert [r["scores"]["agent_continuity"] for r in supervised + swarmed] == [
        0.0,
        None,
        1.0,
        None,
    ]
    # per agent: every turn's calls, summed over the conversations
    for target, results in (("supervisor", supervised), ("swarm", swarmed)):
        totals: dict[str, list[int]] = {}
        for result in results:
            for turn in result["turns"]:
                for call in turn["trace"]["model_calls"]:
                    each = totals.setdefault(call["agent"], [0, 0, 0])
                    each[0] += 1
                    each[1] += call["input_tokens"]
                    each[2] += call["output_tokens"]
        agents = run.experiments[target]["agents"]
        assert {
            a: [v["model_calls"], v["input_tokens"], v["output_tokens"]] for a, v in agents.items()
        } == totals
    assert {a: v["model_calls"] for a, v in run.experiments["supervisor"]["agents"].items()} == {
        "supervisor": 6,
        "billing": 2,
        "account": 1,
    }
    # the run's --by-agent tables: runs, calls, tokens in / out and cost of all agents
    assert "│ supervisor │ 2 │ 6 │ 210 / 9 │ $0.000228 │" in run.cli.text
    assert "│ all agents │ 2 │ 9 │ 228 / 12 │ $0.000252 │" in run.cli.text
    assert "│ billing │ 1 │ 2 │ 21 / 9 │ $0.000039 │" in run.cli.text
    assert "│ all agents │ 2 │ 5 │ 43 / 16 │ $0.000075 │" in run.cli.text
    compared = invoke(  # wide enough for every label whole
        "compare",
        "supervisor",
        "swarm",
        "--store",
        run.store,
        "--by-agent",
        env={"COLUMNS": "120"},
    )
    assert compared.exit_code == 0, compared.output
    assert "2 paired examples" in compared.text
    rows = {
        " ".join(line.split()[:2]): line.split()[2:]
        for line in compared.output.splitlines()
        if line.strip()
    }
    # model calls: (6 + 3) / 2 against (3 + 2) / 2; paired differences -3 and -1: mean -2,
    # sd sqrt(2), standard error 1, t(1 df, 0.975) = 12.706: [-14.7, +10.7]
    assert rows["model calls"][:5] == ["4.5", "2.5", "\u22122.0", "[\u221215,", "+11]"]
    # handoffs: (2 + 2 + 2) / 2 against (1 + 0 + 1) / 2, paired differences -3 and -1
    assert rows["handoffs (conv.)"][:5] == ["3.0", "1.0", "\u22122.0", "[\u221215,", "+11]"]
    # a follow-up only in the first conversation: 3 calls against 1
    assert rows["follow-up calls"][:3] == ["3.0", "1.0", "\u22122.0"]
    assert rows["continuity 0.0%"][:2] == ["100.0%", "+100.0"]


# --- a function that sends its graph the history it is given ------------------------------

FROM_HISTORY = """
from langchain_core.messages import AIMessage

model = scripted("agent-model", reply("One.", tokens=(10, 1)), reply("Two.", tokens=(20, 2)),
                 reply("Three.", tokens=(30, 3)))
agent = create_react_agent(model, [], name="helper", prompt="h")
given = []

async def answer(inputs):
    history = [HumanMessage(h["content"]) if h["role"] == "user" else AIMessage(h["content"])
               for h in inputs["history"]]
    given.append(len(history))
    state = await agent.ainvoke({"messages": [*history, HumanMessage(inputs["question"])]})
    return {"final_response": state["messages"][-1].content}
"""


def test_a_function_sending_the_history_it_is_given_has_each_message_once_in_the_trace(
    tmp_path, invoke
):
    row = {"id": "abc", "inputs": {"turns": ["A", "B", "C"]}}
    run = Run(tmp_path, invoke, FROM_HISTORY, [row], targets="{t: graph.py:answer}")
    assert run.cli.exit_code == 0, run.cli.output
    assert run.module.given == [0, 2, 4]
    # the history rebuilt from agenteval's form (no agent name on the answers) is the
    # conversation so far, not new messages
    assert run.stored_messages("abc") == [
        ("user", "A"),
        ("assistant", "One."),
        ("user", "B"),
        ("assistant", "Two."),
        ("user", "C"),
        ("assistant", "Three."),
    ]
    result = run.result("abc")
    check_request_sums(result, [[(10, 1)], [(20, 2)], [(30, 3)]])
    assert result["scores"]["agent_continuity"] == 1.0


def test_history_rebuilt_from_text_is_matched_past_the_tool_calls_it_leaves_out():
    call = [{"type": "function", "id": "c1", "function": {"name": "lookup", "arguments": "{}"}}]
    first = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "name": "billing", "tool_calls": call, "content": ""},
        {"role": "tool", "name": "lookup", "tool_call_id": "c1", "content": "r"},
        {"role": "assistant", "name": "billing", "content": "a1"},
    ]
    rebuilt = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": ""},  # no tool call: not the one of turn 1
    ]
    merged = merge_turn_traces([Trace(messages=first), Trace(messages=rebuilt)])
    assert merged.messages == [*first, *rebuilt[2:]]


# --- a lone agent whose tool runs a graph that interrupts ---------------------------------

TOOL_RUNS_A_GRAPH = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class Ask(TypedDict):
    answer: str

def confirm(state: Ask):
    return {"answer": interrupt("Cancel your subscription?")}

asking = StateGraph(Ask)
asking.add_node("confirm", confirm)
asking.add_edge(START, "confirm")
asking.add_edge("confirm", END)
confirmation = asking.compile()

@tool
def cancel_subscription() -> str:
    \"\"\"Cancel the subscription, once the customer confirms.\"\"\"
    confirmed = confirmation.invoke({"answer": ""})["answer"] == "yes"
    return "cancelled" if confirmed else "kept"

model = scripted("account-model",
    reply(tools=[("cancel_subscription", {})], tokens=(10, 1)),
    reply("Your subscription will not renew.", tokens=(20, 2)),
    reply("You are welcome.", tokens=(30, 3)),
)
graph = create_react_agent(model, [cancel_subscription], name="account", prompt="a",
                           checkpointer=InMemorySaver())
"""


def test_a_lone_agent_that_runs_a_graph_in_its_tool_goes_on_across_the_resume(tmp_path, invoke):
    row = {
        "id": "cancel-thanks",
        "inputs": {"turns": [CANCEL, {"resume": "yes"}, "Thanks!"]},
        "outputs": {
            "turns": [
                {"expected_agents": ["account"]},
                {"must_mention": ["will not renew"]},
                {"must_mention": ["welcome"]},
            ]
        },
    }
    run = Run(tmp_path, invoke, TOOL_RUNS_A_GRAPH, [row])
    assert run.cli.exit_code == 0, run.cli.output
    result = run.result("cancel-thanks")
    asked, resumed, thanked = result["turns"]
    assert thanked["outputs"]["final_response"] == "You are welcome."
    assert (asked["status"], json.loads(asked["interrupt"])) == (
        "interrupted",
        "Cancel your subscription?",
    )
    assert resumed["outputs"]["final_response"] == "Your subscription will not renew."
    assert [agents_of(t) for t in result["turns"]] == [["account"]] * 3
    check_request_sums(result, [[(10, 1)], [(20, 2)], [(30, 3)]])
    scores = result["scores"]
    assert (scores["turns"], scores["resolved"], scores["turns_to_resolution"]) == (3, True, 3)
    # the one agent answered every follow-up, the resume included, and handed nothing on
    assert scores["agent_continuity"] == 1.0
    assert (scores["conversation_handoffs"], scores["conversation_ping_pong"]) == (0, False)
    assert scores["followup_model_calls"] == 1.0
    assert scores["followup_cost_usd"] == pytest.approx((cost((20, 2)) + cost((30, 3))) / 2)


COUNTING_SWARM = """
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from fakes import ScriptedChatModel
from langgraph_swarm import create_handoff_tool, create_swarm

class Counting(ScriptedChatModel):
    \"\"\"Answers with how many questions it was given; its input tokens: the messages.\"\"\"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self._received.append(list(messages))
        asked = sum(1 for m in messages if m.type == "human")
        usage = {"input_tokens": len(messages), "output_tokens": 1,
                 "total_tokens": len(messages) + 1}
        answer = AIMessage(f"{asked} question(s)", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=answer)])

front = scripted("front-model", *[reply(tools=[("transfer_to_billing", {})], tokens=(3, 1))] * 4,
                 delay_s=0.01)
billing = Counting(model_name="billing-model", delay_s=0.01)
agents = [
    create_react_agent(front, [create_handoff_tool(agent_name="billing")], name="front_desk",
                       prompt="f"),
    create_react_agent(billing, [], name="billing", prompt="b"),
]
saver = InMemorySaver()
graph = create_swarm(agents, default_active_agent="front_desk").compile(checkpointer=saver)
"""


def test_concurrent_repetitions_of_two_conversations_keep_their_threads_apart(tmp_path, invoke):
    rows = [{**PAID_WHEN, "id": name} for name in ("first", "second")]
    run = Run(tmp_path, invoke, COUNTING_SWARM, rows, extra="repetitions: 2\n", concurrency=4)
    assert run.cli.exit_code == 0, run.cli.output
    assert len({c.config["configurable"]["thread_id"] for c in run.module.saver.list(None)}) == 4
    for name in ("first", "second"):
        for repetition in (0, 1):
            result = run.result(name, repetition=repetition)
            first, second = result["turns"]
            assert agents_of(first) == ["front_desk", "billing"]
            # billing saw its own conversation only: one question, then two
            assert [t["outputs"]["final_response"] for t in result["turns"]] == [
                "1 question(s)",
                "2 question(s)",
            ]
            # turn 1: front_desk's call, then billing given (prompt, question, handoff call,
            # its tool message); turn 2: billing given those, its answer and the follow-up
            check_request_sums(result, [[(3, 1), (4, 1)], [(6, 1)]])
            assert agents_of(second) == ["billing"]
            assert result["scores"]["agent_continuity"] == 1.0
