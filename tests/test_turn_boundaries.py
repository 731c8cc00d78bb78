"""One reading of turn boundaries (agenteval_cli.trace.boundaries) behind agent continuity,
the conversation's handoffs and its ping-pong: real LangGraph conversations, run by the
runner turn by turn, their models scripted, each figure worked out by hand from the script.

Three conversations on which the three figures used to disagree: a swarm without a
checkpointer that restarts each follow-up at its entry agent, an agent inside a named
subgraph that ends one turn and begins the next, and a resume turn that runs no model.
Beside them: three turns, a supervisor team inside a swarm, a resume answered by a tool
with a bounce across it, and a checkpointed swarm that keeps its active agent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakes import reply, scripted
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from langgraph_swarm import SwarmState, create_handoff_tool, create_swarm

from agenteval_cli.core.records import Example, Result
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.targets import adapt
from agenteval_cli.trace.attribution import graph_coordinators

pytestmark = pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning")

KEYS = ("agent_continuity", "conversation_handoffs", "conversation_ping_pong")


def converse(graph: Any, turns: list[Any]) -> Result:
    """One conversation run as the runner runs a spec's: the graph's coordinators found as
    the loader finds them, the conversation scored."""
    target = adapt(graph, name="t", import_path="x:t")
    target.coordinators = tuple(graph_coordinators(graph))
    runner = Runner(targets=[target], evaluators=[], settings=RunSettings())
    return asyncio.run(runner.run_one(WorkItem(target, Example("c1", {"turns": turns}), 0)))


def figures(result: Result) -> tuple[Any, ...]:
    scores = {s.key: s.score for s in result.scores}
    return tuple(scores[key] for key in KEYS)


def comments(result: Result) -> dict[str, str | None]:
    return {s.key: s.comment for s in result.scores if s.key in KEYS}


def paths(result: Result) -> list[list[str]]:
    return [t.trace.agent_path for t in result.turns]


def peer(name: str, model: Any, *to: str, tools: list[Any] = ()) -> Any:  # type: ignore[assignment]
    handoffs = [create_handoff_tool(agent_name=other) for other in to]
    return create_agent(model, [*tools, *handoffs], name=name)


# --- 1. a swarm without a checkpointer: each follow-up restarts at the entry agent ---------


def test_a_swarm_without_a_checkpointer_restarts_the_follow_up_at_its_entry():
    """Turn 1: front_desk → billing. Turn 2 the graph starts over at front_desk (nothing
    kept its active agent), which hands to billing again. The restart is no handoff and no
    bounce: 1 + 1 handoffs, no ping-pong, and no continuity (turn 2 did not begin at
    billing). The old figures said 3 handoffs (billing → front_desk counted) and no bounce
    over those same handoffs."""
    front = scripted(
        "f", reply(tools=[("transfer_to_billing", {})]), reply(tools=[("transfer_to_billing", {})])
    )
    billing = scripted("b", reply("A refund is on its way."), reply("Within 5 days."))
    graph = create_swarm(
        [peer("front_desk", front, "billing"), peer("billing", billing)],
        default_active_agent="front_desk",
    ).compile()
    result = converse(graph, ["Refund my invoice.", "When will it arrive?"])
    assert paths(result) == [["front_desk", "billing"], ["front_desk", "billing"]]
    assert figures(result) == (0.0, 2.0, False)
    assert comments(result) == {
        "agent_continuity": "turn 2 began at front_desk, not billing (restarted)",
        "conversation_handoffs": "per turn 1 + 1; restarted (no handoff): turn 2 at front_desk",
        "conversation_ping_pong": "no bounce",
    }


def test_three_turns_of_a_swarm_without_a_checkpointer():
    """Turn 1 front_desk → billing, turn 2 front_desk → account, turn 3 front_desk answers
    itself: two restarts, 1 + 1 + 0 handoffs, no follow-up kept its agent, no bounce (the
    old figures: 4 handoffs, two of them the restarts)."""
    front = scripted(
        "f",
        reply(tools=[("transfer_to_billing", {})]),
        reply(tools=[("transfer_to_account", {})]),
        reply("Our hours are 9 to 5."),
    )
    billing = scripted("b", reply("Refunded."))
    account = scripted("a", reply("Email updated."))
    graph = create_swarm(
        [
            peer("front_desk", front, "billing", "account"),
            peer("billing", billing),
            peer("account", account),
        ],
        default_active_agent="front_desk",
    ).compile()
    result = converse(graph, ["Refund INV-1.", "Update my email.", "When are you open?"])
    assert paths(result) == [["front_desk", "billing"], ["front_desk", "account"], ["front_desk"]]
    assert figures(result) == (0.0, 2.0, False)
    assert comments(result)["conversation_handoffs"] == (
        "per turn 1 + 1 + 0; restarted (no handoff): turn 2 at front_desk, turn 3 at front_desk"
    )


# --- 2. an agent inside a named subgraph ends one turn and begins the next -----------------


@tool
def update_email(address: str) -> str:
    """Update the customer's email address."""
    return f"email set to {address}"


def account_team_swarm(*replies: Any) -> Any:
    """A swarm of front_desk and account_team: a named subgraph whose ``account`` node
    calls its model and loops through its tools (a hand-built agent), with a checkpointer.
    The loop's fixed edge back makes ``account`` a coordinator of its graph."""
    front = scripted("f", reply(tools=[("transfer_to_account_team", {})]))
    model = scripted("a", *replies)

    async def account(state: SwarmState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(SwarmState)
    builder.add_node("account", account)
    builder.add_node("tools", ToolNode([update_email]))
    builder.add_edge(START, "account")
    builder.add_conditional_edges("account", tools_condition)
    builder.add_edge("tools", "account")
    team = builder.compile(name="account_team")
    return create_swarm(
        [peer("front_desk", front, "account_team"), team], default_active_agent="front_desk"
    ).compile(checkpointer=InMemorySaver())


def test_an_agent_in_a_named_subgraph_that_ends_a_turn_begins_the_next_one():
    """Turn 1: front_desk → account_team > account, which updates the email and answers.
    Turn 2 the swarm goes on with account_team, whose account answers alone. It ended
    turn 1 and began turn 2 (one path, account_team > account): continuity 1.0 (it was
    0.0: account, a coordinator of its own loop, was passed over for front_desk), and the
    1 handoff of turn 1."""
    graph = account_team_swarm(
        reply(tools=[("update_email", {"address": "a@b.c"})]),
        reply("Your email is updated."),
        reply("It is a@b.c."),
    )
    assert "account" in graph_coordinators(graph)
    result = converse(graph, ["Update my email to a@b.c.", "What is it now?"])
    assert paths(result) == [["front_desk", "account"], ["account"]]
    assert [c.path for c in result.turns[1].trace.model_calls] == [["account_team", "account"]]
    assert figures(result) == (1.0, 1.0, False)
    assert comments(result)["agent_continuity"] == "turn 2: account_team > account went on"


def test_three_turns_with_the_nested_agent():
    """As above, and a third turn in which account uses its tool again: both follow-ups
    went on with account_team > account without routing (1.0; the old figure was 0.0)."""
    graph = account_team_swarm(
        reply(tools=[("update_email", {"address": "a@b.c"})]),
        reply("Your email is updated."),
        reply("It is a@b.c."),
        reply(tools=[("update_email", {"address": "c@d.e"})]),
        reply("Changed to c@d.e."),
    )
    result = converse(graph, ["Update my email to a@b.c.", "What is it now?", "Make it c@d.e."])
    assert paths(result) == [["front_desk", "account"], ["account"], ["account"]]
    assert figures(result) == (1.0, 1.0, False)


def test_a_supervisor_team_inside_a_swarm_routes_each_follow_up_again():
    """A swarm of alice and support_team (a create_supervisor team of billing), with a
    checkpointer. Turn 1: alice → team_supervisor → billing → team_supervisor (3
    handoffs); turn 2 the swarm goes on with the team, whose supervisor routes again (2).
    Turn 1 left the user with support_team > billing (the supervisor got control back);
    turn 2 began at support_team > team_supervisor, where turn 1 ended: no restart, no
    handoff between the turns, no continuity (it routed again), no bounce."""
    import warnings

    from langgraph_supervisor import create_supervisor

    alice = scripted("alice", reply(tools=[("transfer_to_support_team", {})]))
    billing = scripted("bill", reply("Refunded."), reply("In 5 days."))
    boss = scripted(
        "team",
        reply(tools=[("transfer_to_billing", {})]),
        reply("Your refund is done."),
        reply(tools=[("transfer_to_billing", {})]),
        reply("It arrives in 5 days."),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        team = create_supervisor(
            [create_agent(billing, [], name="billing")],
            model=boss,
            supervisor_name="team_supervisor",
        ).compile(name="support_team")
    graph = create_swarm(
        [peer("alice", alice, "support_team"), team], default_active_agent="alice"
    ).compile(checkpointer=InMemorySaver())
    result = converse(graph, ["Refund INV-1.", "When does it arrive?"])
    assert paths(result) == [
        ["alice", "team_supervisor", "billing", "team_supervisor"],
        ["team_supervisor", "billing", "team_supervisor"],
    ]
    assert figures(result) == (0.0, 5.0, False)
    assert comments(result)["agent_continuity"] == (
        "turn 2 began at support_team > team_supervisor, not support_team > billing"
    )


# --- 3. a resume turn that runs no model --------------------------------------------------


@tool(return_direct=True)
def cancel_subscription() -> str:
    """Cancel the subscription, once the customer confirms."""
    answer = interrupt("Cancel your subscription?")
    return "Cancelled." if answer == "yes" else "Kept."


@tool(return_direct=True)
def cancel_now() -> str:
    """Cancel the subscription."""
    return "Cancelled."


def triage_graph(cancel: Any) -> Any:
    """triage (a model) sends each turn to billing or account by a ``Command``; account
    cancels with ``cancel``, which answers the customer itself (``return_direct``): a
    resume runs no model. A checkpointer, but every turn starts at triage."""
    triage_model = scripted("t", reply("account"), reply("billing"))
    account = create_agent(
        scripted("a", reply(tools=[(cancel.name, {})])), [cancel], name="account"
    )
    billing = create_agent(scripted("b", reply("Refunded.")), [], name="billing")

    def triage(state: MessagesState) -> Command:
        return Command(goto=triage_model.invoke(state["messages"]).content)

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage, destinations=("account", "billing"))
    builder.add_node("account", account)
    builder.add_node("billing", billing)
    builder.add_edge(START, "triage")
    builder.add_edge("account", END)
    builder.add_edge("billing", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_a_resume_that_runs_no_model_carries_the_agent_over():
    """Turn 1: triage → account, whose cancel tool stops at interrupt(). Turn 2 resumes it:
    the tool answers, no model runs, so account is carried over (kept: nothing routed the
    resume). Turn 3 starts at triage again (the entry): a restart, then triage → billing.
    1 + 0 + 1 handoffs, continuity 1/2, no bounce. The old figures: 2 handoffs here and 3
    for the same requests without the interrupt (the restart counted only when no
    model-less turn stood between)."""
    result = converse(
        triage_graph(cancel_subscription),
        ["Cancel my subscription.", {"resume": "yes"}, "Refund INV-1."],
    )
    assert [t.status for t in result.turns] == ["interrupted", "ok", "ok"]
    assert [len(t.trace.model_calls) for t in result.turns] == [2, 0, 2]
    assert paths(result) == [["triage", "account"], [], ["triage", "billing"]]
    assert figures(result) == (0.5, 2.0, False)
    assert comments(result)["agent_continuity"] == (
        "turn 2: no model call, account carried over; "
        "turn 3 began at triage, not account (restarted)"
    )


def test_the_same_requests_without_the_interrupt_count_the_same_handoffs():
    """Turn 1: triage → account cancels at once; turn 2 restarts at triage → billing: the
    2 handoffs of the interrupted conversation, and no continuity (the old figure: 3)."""
    result = converse(triage_graph(cancel_now), ["Cancel my subscription.", "Refund INV-1."])
    assert paths(result) == [["triage", "account"], ["triage", "billing"]]
    assert figures(result) == (0.0, 2.0, False)


def cancelling_swarm(*account_replies: Any) -> Any:
    """billing and account peers with a checkpointer; account's cancel tool stops at
    interrupt() and answers the customer itself."""
    billing = scripted("b", reply(tools=[("transfer_to_account", {})]), reply("Refunded."))
    account = scripted("a", *account_replies)
    return create_swarm(
        [
            peer("billing", billing, "account"),
            peer("account", account, "billing", tools=[cancel_subscription]),
        ],
        default_active_agent="billing",
    ).compile(checkpointer=InMemorySaver())


def test_a_bounce_across_a_resume_that_runs_no_model():
    """Turn 1: billing → account, which stops at interrupt(); turn 2 the resume runs no
    model (account carried over); turn 3 account hands the refund back to billing:
    billing → account (turn 1) → billing (turn 3) is a bounce across the turns, 1 + 0 + 1
    handoffs, and continuity 1/2 (the resume kept account; turn 3 handed on). The old
    continuity was 0.0: turn 3 was said not to begin at the active agent."""
    graph = cancelling_swarm(
        reply(tools=[("cancel_subscription", {})]), reply(tools=[("transfer_to_billing", {})])
    )
    result = converse(graph, ["Cancel my subscription.", {"resume": "yes"}, "Refund INV-1."])
    assert paths(result) == [["billing", "account"], [], ["account", "billing"]]
    assert figures(result) == (0.5, 2.0, True)
    assert comments(result)["conversation_ping_pong"] == (
        "billing → account (turn 1) → billing (turn 3)"
    )


def test_a_checkpointed_swarm_keeps_its_active_agent():
    """billing → account in turn 1; account answers turns 2 and 3 itself (the swarm keeps
    it active): both follow-ups kept, 1 handoff, no bounce."""
    graph = cancelling_swarm(reply("Email updated."), reply("It is a@b.c."), reply("Done."))
    result = converse(graph, ["Update my email.", "What is it?", "Thanks."])
    assert paths(result) == [["billing", "account"], ["account"], ["account"]]
    assert figures(result) == (1.0, 1.0, False)
    assert comments(result)["agent_continuity"] == (
        "turn 2: account went on; turn 3: account went on"
    )


# --- the reading itself, on traces written out by hand ------------------------------------


def hand_turn(*steps: tuple[str, ...], hops: list[tuple[str, str, list[int]]] = ()) -> Any:  # type: ignore[assignment]
    """A turn whose agents made one model call each, at these paths, in order."""
    from agenteval_cli.core.records import Handoff, ModelCall, Trace, Turn

    trace = Trace(
        agent_path=[s[-1] for s in steps],
        handoffs=[Handoff(a, b, f"transfer_to_{b}", after=after) for a, b, after in hops],
        model_calls=[ModelCall(s[-1], "m", 10, 1, path=list(s)) for s in steps],
    )
    return Turn({"question": "?"}, {"final_response": "."}, trace)


def scored(turns: list[Any]) -> tuple[tuple[Any, ...], dict[str, str | None]]:
    from agenteval_cli.evaluators.conversation_metrics import conversation_scores

    scores = conversation_scores(turns, frozenset())
    found = {s.key: s for s in scores}
    return tuple(found[k].score for k in KEYS), {k: found[k].comment for k in KEYS}


def test_a_turn_handed_over_between_turns_is_a_handoff_a_bounce_can_run_across():
    """Turn 1 triage → billing; turn 2 begins at account (not billing, not the entry
    triage): handed over, one handoff billing → account; turn 3 account hands back to
    billing: billing → account (turn 2) → billing (turn 3) bounces. 1 + 0 + 1 handoffs and
    the one between turns; no follow-up kept its agent."""
    turns = [
        hand_turn(("triage",), ("billing",), hops=[("triage", "billing", [])]),
        hand_turn(("account",)),
        hand_turn(("account",), ("billing",), hops=[("account", "billing", [])]),
    ]
    (continuity, handoffs, pong), said = scored(turns)
    assert (continuity, handoffs, pong) == (0.0, 3.0, True)
    assert (
        said["conversation_handoffs"]
        == "per turn 1 + 0 + 1; between turns: turn 2: billing → account"
    )
    assert said["conversation_ping_pong"] == "billing → account (turn 2) → billing (turn 3)"
    assert said["agent_continuity"] == (
        "turn 2 began at account, not billing (handed over); turn 3: account → billing"
    )


def test_agents_of_one_name_in_two_teams_are_two():
    """Turn 1 ends at money_team > lead, turn 2 begins at tech_team > lead: by name the
    same agent, by path another: handed over (a handoff), not continuity."""
    turns = [hand_turn(("money_team", "lead")), hand_turn(("tech_team", "lead"))]
    (continuity, handoffs, pong), said = scored(turns)
    assert (continuity, handoffs, pong) == (0.0, 1.0, False)
    assert said["agent_continuity"] == (
        "turn 2 began at tech_team > lead, not money_team > lead (handed over)"
    )
    same = [hand_turn(("money_team", "lead")), hand_turn(("money_team", "lead"))]
    assert scored(same)[0] == (1.0, 0.0, False)
