"""Metrics per turn and per conversation, on conversations built by hand.

Each turn's trace is written out (its agents, handoffs, model calls, tool calls), so every
figure below is worked out by hand from it: a supervisor that routes every turn again, a
swarm that keeps the active agent, a bounce across two turns, a conversation that errored,
one that stopped at an interrupt, one whose own references were not met, one of one turn.
Model calls are priced at $1 / $2 per million input / output tokens, so a call of 1,000
input and 500 output tokens costs $0.002.
"""

from __future__ import annotations

import asyncio
import inspect
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agenteval_cli.core.records import (
    Example,
    Handoff,
    ModelCall,
    Result,
    Score,
    ToolCall,
    Trace,
    Turn,
)
from agenteval_cli.evaluators.conversation import score_conversation
from agenteval_cli.evaluators.loading import bind_evaluators, catalog_of
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.registry import metric, with_options
from agenteval_cli.results.figures import from_results
from agenteval_cli.spec.model import EvaluatorSpec

PRICING = {"m": {"input": 1.0, "output": 2.0}}
EVALUATORS: list[Any] = [
    "routing_accuracy",
    "resolution_coverage",
    "handoff_chain_length",
    "token_cost",
    "unnecessary_steps",
]


def bind(*items: Any, base_dir: Path = Path(".")) -> list:
    entries = [
        EvaluatorSpec(name=item) if isinstance(item, str) else EvaluatorSpec(**item)
        for item in items
    ]
    spec = SimpleNamespace(
        source=base_dir / "spec.yaml",
        base_dir=base_dir,
        pricing=PRICING,
        evaluators=entries,
        line_of=lambda *_: 1,
    )
    return bind_evaluators(spec)


def hop(source: str, target: str, *after: int) -> Handoff:
    return Handoff(source, target, tool=f"transfer_to_{target}", after=list(after))


def trace(
    path: list[str],
    handoffs: list[Handoff] = (),  # type: ignore[assignment]
    *,
    coordinators: list[str] = (),  # type: ignore[assignment]
    tools: list[ToolCall] = (),  # type: ignore[assignment]
) -> Trace:
    """One model call of 1,000 + 500 tokens ($0.002) per step of the path."""
    return Trace(
        agent_path=list(path),
        handoffs=list(handoffs),
        model_calls=[ModelCall(agent, "m", 1000, 500) for agent in path],
        tool_calls=list(tools),
        coordinators=list(coordinators),
    )


def turn(question: str, answer: str | None, steps: Trace, **more: Any) -> Turn:
    outputs = None if answer is None else {"final_response": answer}
    return Turn({"question": question}, outputs, steps, **more)


def conversation(
    turns: list[Turn], outputs: dict[str, Any], *, evaluators: list[Any] = EVALUATORS
) -> tuple[dict[str, Any], dict[str, str | None], list[Turn]]:
    """Score a conversation: its scores, their comments, and its turns (scored in place)."""
    example = Example("c1", {"turns": [t.inputs for t in turns]}, outputs)
    last = turns[-1]
    result = Result(
        "c1",
        0,
        last.outputs,
        Trace(
            agent_path=[a for t in turns for a in t.trace.agent_path],
            model_calls=[c for t in turns for c in t.trace.model_calls],
        ),
        error=last.error,
        interrupt=last.interrupt,
        turns=turns,
    )
    bound = bind(*evaluators)
    scores = asyncio.run(score_conversation(bound, example, result, catalog=catalog_of(bound)))
    assert len({s.key for s in scores}) == len(scores), "one score per key"
    return (
        {s.key: s.score for s in scores},
        {s.key: s.comment for s in scores},
        turns,
    )


def supervisor() -> list[Turn]:
    """Each turn begins at the supervisor, which routes it and answers last."""
    return [
        turn(
            "Why was I charged twice?",
            "A refund is on its way.",
            trace(
                ["supervisor", "billing", "supervisor"],
                [hop("supervisor", "billing"), hop("billing", "supervisor", 0)],
                coordinators=["supervisor"],
            ),
        ),
        turn(
            "And please change my address.",
            "Your address is updated.",
            trace(
                ["supervisor", "account", "supervisor"],
                [hop("supervisor", "account"), hop("account", "supervisor", 0)],
                coordinators=["supervisor"],
            ),
        ),
    ]


ROUTES = {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["account"]}]}


def test_a_supervisor_routes_every_turn_again():
    scores, comments, turns = conversation(supervisor(), ROUTES)
    # each turn: 3 calls of 1,500 tokens, $0.006, 2 handoffs, the expected agent reached
    assert [t.score_map()["total_tokens"] for t in turns] == [4500.0, 4500.0]
    assert scores["routing_accuracy"] == 1.0  # the mean of 1.0 and 1.0
    assert scores["total_tokens"] == 9000.0  # summed over the turns
    assert scores["input_tokens"] == 6000.0
    assert scores["cost_usd"] == pytest.approx(0.012)
    assert scores["handoff_chain_length"] == 4.0
    assert scores["ping_pong"] == 0.0
    assert scores["turns"] == 2.0
    # turn 2 begins at the supervisor, not at billing (active after turn 1)
    assert scores["agent_continuity"] == 0.0
    assert comments["agent_continuity"] == "turn 2 began at supervisor, not billing"
    assert scores["model_calls"] == 6.0
    assert scores["followup_model_calls"] == 3.0
    assert scores["followup_cost_usd"] == pytest.approx(0.006)
    # 2 + 2 handoffs; turn 2 began where turn 1 ended (the supervisor): no re-entry
    assert scores["conversation_handoffs"] == 4.0
    assert scores["conversation_ping_pong"] is False  # the supervisor is a coordinator
    assert scores["resolved"] is True
    assert scores["turns_to_resolution"] == 2.0


def swarm_turns(second: Trace, third: Trace | None = None) -> list[Turn]:
    first = turn(
        "Why was I charged twice?",
        "A refund is on its way.",
        trace(["triage", "billing"], [hop("triage", "billing")]),
    )
    turns = [first, turn("When will it arrive?", "Within 5 days.", second)]
    if third is not None:
        turns.append(turn("And my address?", "Your address is updated.", third))
    return turns


SAME_AGENT = trace(["billing"])
HANDED_ON = trace(["billing", "account"], [hop("billing", "account")])


def test_a_swarm_answers_a_follow_up_with_the_active_agent():
    scores, comments, _ = conversation(swarm_turns(SAME_AGENT), {})
    assert scores["agent_continuity"] == 1.0
    assert comments["agent_continuity"] == "turn 2: billing went on"
    assert scores["model_calls"] == 3.0  # 2 + 1
    assert scores["followup_model_calls"] == 1.0
    assert scores["followup_cost_usd"] == pytest.approx(0.002)
    assert scores["conversation_handoffs"] == 1.0


def test_a_cross_domain_follow_up_handed_on_is_no_continuity():
    scores, comments, _ = conversation(swarm_turns(HANDED_ON), {})
    assert scores["agent_continuity"] == 0.0
    assert comments["agent_continuity"] == "turn 2: billing → account"
    assert scores["followup_model_calls"] == 2.0
    assert scores["conversation_handoffs"] == 2.0  # triage → billing, billing → account
    assert scores["conversation_ping_pong"] is False  # billing → account is no bounce


def test_three_turns_continuity_is_the_share_of_follow_ups_and_steps_are_summed():
    lookup = ToolCall("billing", "lookup_invoice", {"id": 7})
    second = trace(["billing"], tools=[lookup, ToolCall("billing", "lookup_invoice", {"id": 7})])
    third = trace(["billing", "account"], [hop("billing", "account")], tools=[lookup])
    scores, _, turns = conversation(swarm_turns(second, third), {})
    assert scores["agent_continuity"] == 0.5  # turn 2 went on, turn 3 was handed on
    assert scores["model_calls"] == 5.0  # 2 + 1 + 2
    assert scores["followup_model_calls"] == 1.5  # (1 + 2) / 2
    # a repeat within turn 2 is wasted; turn 3 looking the invoice up again is its own turn
    assert [t.score_map()["unnecessary_steps"] for t in turns] == [0.0, 1.0, 0.0]
    assert scores["unnecessary_steps"] == 1.0
    assert scores["turns"] == 3.0


def test_a_bounce_across_two_turns_is_ping_pong_of_the_conversation():
    turns = [
        turn(
            "Refund?",
            "Account says yes.",
            trace(["billing", "account"], [hop("billing", "account")]),
        ),
        turn(
            "Then do it.", "Refunded.", trace(["account", "billing"], [hop("account", "billing")])
        ),
    ]
    scores, comments, _ = conversation(turns, {})
    assert scores["ping_pong"] == 0.0  # no turn bounced on its own
    assert scores["conversation_ping_pong"] is True
    assert comments["conversation_ping_pong"] == "billing → account (turn 1) → billing (turn 2)"
    assert scores["conversation_handoffs"] == 2.0
    assert scores["agent_continuity"] == 0.0  # account began turn 2 but handed on
    # conversation_ping_pong is a figure of its own: the turns' checks all passed
    assert scores["resolved"] is True


def test_a_follow_up_sent_to_the_entry_again_is_a_restart_not_a_handoff():
    """Without a checkpointer the follow-up starts at triage again: the graph started over
    at its entry, no agent passed control back to triage. Not a handoff, not continuity,
    and no bounce runs across it."""
    second = trace(["triage", "billing"], [hop("triage", "billing")])
    scores, comments, _ = conversation(swarm_turns(second), {})
    assert scores["conversation_handoffs"] == 2.0  # 1 + 1: the restart is none
    assert comments["conversation_handoffs"] == (
        "per turn 1 + 1; restarted (no handoff): turn 2 at triage"
    )
    assert scores["agent_continuity"] == 0.0
    assert comments["agent_continuity"] == "turn 2 began at triage, not billing (restarted)"
    assert scores["conversation_ping_pong"] is False


def test_an_errored_conversation_is_not_resolved_and_its_spend_counts():
    turns = swarm_turns(trace(["billing"]))
    turns[1] = Turn(turns[1].inputs, None, trace(["billing"]), error="RuntimeError: boom")
    scores, comments, checked = conversation(turns, ROUTES)
    assert scores["resolved"] is False
    assert (
        comments["resolved"]
        == "not resolved, turn 2: no answer: the target raised (RuntimeError: boom)"
    )
    assert scores["turns_to_resolution"] is None
    assert scores["model_calls"] == 3.0  # every call made, the failed turn's too
    assert scores["total_tokens"] == 4500.0
    # coverage needs an answer: over turn 1 alone
    assert checked[1].score_map()["resolution_coverage"] is None
    assert scores["resolution_coverage"] == 1.0


def test_an_interrupted_conversation_is_not_resolved():
    turns = swarm_turns(trace(["billing"]))
    turns[1] = Turn(turns[1].inputs, None, trace(["billing"]), interrupt="approve the refund?")
    scores, comments, _ = conversation(turns, ROUTES)
    assert scores["resolved"] is False
    assert comments["resolved"] == (
        "not resolved, turn 2: no answer: the graph stopped at interrupt() waiting for input "
        "(approve the refund?)"
    )
    assert scores["turns_to_resolution"] is None


def test_an_interrupt_the_next_turn_resumed_is_resolved():
    turns = [
        Turn(
            {"question": "Refund me."},
            None,
            trace(["billing"]),
            interrupt="approve the refund?",
        ),
        Turn({"resume": "yes"}, {"final_response": "Refunded."}, trace(["billing"])),
    ]
    scores, _, checked = conversation(turns, {"turns": [{}, {"must_mention": ["refund"]}]})
    assert checked[0].score_map()["resolution_coverage"] is None  # no answer of its own
    assert scores["resolved"] is True
    assert scores["agent_continuity"] == 1.0  # billing took the answer and went on


def test_the_conversation_s_own_references_are_checked_on_the_whole_conversation():
    outputs = {"must_mention": ["refund", "password"], **ROUTES}
    scores, comments, turns = conversation(supervisor(), outputs)
    # each turn has no must_mention of its own: nothing to miss
    assert [t.score_map()["resolution_coverage"] for t in turns] == [1.0, 1.0]
    # no turn has a must_mention of its own, so the key is the whole conversation's: its
    # answers mention the refund, never the password; unmet, it leaves it unresolved
    assert scores["resolution_coverage"] == 0.5
    assert comments["resolution_coverage"].startswith("whole conversation: ")
    assert "password" in comments["resolution_coverage"]
    # routing_accuracy has each turn's own expected_agents: it keeps the turns' value
    assert comments["routing_accuracy"] == "mean of 2 turns"
    assert scores["resolved"] is False
    assert comments["resolved"] == (
        "unmet: conversation resolution_coverage 50.0% (pass mark >= 1)"
    )
    assert scores["turns_to_resolution"] is None


def test_an_unmet_turn_names_the_turn():
    outputs = {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["billing"]}]}
    scores, comments, _ = conversation(supervisor(), outputs)
    assert scores["routing_accuracy"] == 0.5
    assert comments["resolved"] == "unmet: turn 2 routing_accuracy 0.0% (pass mark >= 1)"


def test_a_one_turn_conversation_has_no_follow_up():
    scores, comments, _ = conversation(supervisor()[:1], {"turns": ROUTES["turns"][:1]})
    assert scores["turns"] == 1.0
    assert scores["agent_continuity"] is None
    assert comments["agent_continuity"] == "a one-turn conversation has no follow-up"
    assert scores["followup_model_calls"] is None
    assert scores["followup_cost_usd"] is None
    assert scores["model_calls"] == 3.0
    assert scores["resolved"] is True and scores["turns_to_resolution"] == 1.0


def test_without_token_cost_the_follow_up_cost_is_unknown_and_says_why():
    scores, comments, _ = conversation(swarm_turns(SAME_AGENT), {}, evaluators=["routing_accuracy"])
    assert scores["followup_cost_usd"] is None
    assert comments["followup_cost_usd"] == "no cost_usd per turn: add token_cost to the evaluators"
    assert scores["followup_model_calls"] == 1.0


def test_an_untraced_turn_leaves_the_trace_figures_unknown():
    turns = swarm_turns(Trace(untraced="no LangChain run was seen"))
    scores, comments, _ = conversation(turns, {})
    assert scores["turns"] == 2.0
    for key in ("agent_continuity", "model_calls", "conversation_ping_pong"):
        assert scores[key] is None
        assert comments[key] == "turn 2 untraced: no LangChain run was seen"


def test_coordinators_given_to_the_conversation_evaluator_are_not_the_active_agent():
    """triage declared a coordinator: after turn 1 (triage → billing → triage) billing is
    still the active agent, so a follow-up billing answers is continuity."""
    first = turn(
        "Refund?",
        "Yes.",
        trace(
            ["triage", "billing", "triage"], [hop("triage", "billing"), hop("billing", "triage", 0)]
        ),
    )
    turns = [first, turn("When?", "Soon.", trace(["billing"]))]
    plain, _, _ = conversation(turns, {})
    assert plain["agent_continuity"] == 0.0  # active: triage, the last agent
    given, _, _ = conversation(
        turns,
        {},
        evaluators=[*EVALUATORS, {"name": "conversation", "options": {"coordinators": ["triage"]}}],
    )
    assert given["agent_continuity"] == 1.0


EVALS = """
SEEN = []


def transcript(inputs, outputs, reference_outputs, trace):
    SEEN.append((inputs, outputs, reference_outputs, trace))
    said = [m["content"] for m in outputs["transcript"]]
    return {"score": len(said) / 4, "comment": " | ".join(said)}
"""


def test_a_conversation_level_evaluator_runs_once_on_the_whole_transcript(tmp_path):
    (tmp_path / "evals.py").write_text(textwrap.dedent(EVALS))
    item = {
        "name": "whole",
        "options": {"type": "custom", "target": "evals.py:transcript", "level": "conversation"},
    }
    (bound,) = bind(item, base_dir=tmp_path)
    assert bound.level == "conversation" and bound.metrics[0].level == "conversation"
    turns = supervisor()
    example = Example("c1", {"turns": [t.inputs for t in turns]}, {"goal": "both", **ROUTES})
    merged = Trace(agent_path=["supervisor", "billing", "supervisor", "account", "supervisor"])
    result = Result("c1", 0, turns[-1].outputs, merged, turns=turns)
    scores = asyncio.run(score_conversation([bound], example, result))
    seen = inspect.unwrap(bound.fn).__globals__["SEEN"]
    assert len(seen) == 1  # once, not once per turn
    inputs, outputs, reference, whole_trace = seen[0]
    assert inputs == {"turns": [t.inputs for t in turns]}
    assert reference == {"goal": "both"}  # the conversation's references, not the turns'
    assert whole_trace.agent_path == merged.agent_path
    assert outputs["final_response"] == "A refund is on its way.\n\nYour address is updated."
    found = {s.key: s for s in scores}
    assert found["whole"].score == 1.0  # four messages
    assert found["whole"].comment == (
        "whole conversation: Why was I charged twice? | A refund is on its way. | "
        "And please change my address. | Your address is updated."
    )
    assert all(t.score_map() == {} for t in turns)  # no turn was scored by it


def test_request_and_conversation_figures_in_the_summary_and_the_gate():
    from agenteval_cli.gating.thresholds import (
        check_thresholds,
        known_metric_keys,
        thresholds_for,
    )
    from agenteval_cli.results.sources import ExperimentData

    scores, _, turns = conversation(supervisor(), ROUTES)
    result = Result("c1", 0, {}, Trace(), [Score(k, v) for k, v in scores.items()], turns=turns)
    summary = from_results([result])
    assert summary.conversations == 1
    metrics = summary.metrics()
    assert metrics["resolved"] == 1.0 and metrics["agent_continuity"] == 0.0
    assert {"resolved", "agent_continuity", "turns"} <= set(known_metric_keys(["routing_accuracy"]))
    thresholds = thresholds_for({"agent_continuity": 0.5, "turns": 3}, "sup")
    assert [str(thresholds[k]) for k in ("agent_continuity", "turns")] == [">= 0.5", "<= 3"]
    from agenteval_cli.core.records import Run

    side = ExperimentData("e", "sup", [Run.from_result(result)])
    assert check_thresholds(side, thresholds) == [
        "agent continuity = 0.0%, threshold >= 0.5 (off by −50.0 pp)"
    ]


def test_the_run_table_says_request_figures_are_per_conversation():
    import io

    from rich.console import Console

    from agenteval_cli.report.table import comparison_table

    scores, _, turns = conversation(supervisor(), ROUTES)
    result = Result("c1", 0, {}, Trace(), [Score(k, v) for k, v in scores.items()], turns=turns)
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(
        comparison_table([("sup", from_results([result]))])
    )
    lines = out.getvalue().splitlines()
    text = " ".join(out.getvalue().split())
    assert (
        "conversations: 1; a request metric of a conversation is the sum of its turns' for" in text
    )
    assert "the metrics under the line are per conversation" in text
    names = [line.split("│")[1].strip() for line in lines if line.startswith("│ ")]
    assert names.index("tokens / request") < names.index("resolved")
    assert names.index("resolved") < names.index("error rate")


def test_a_single_turn_table_has_no_conversation_note():
    import io

    from rich.console import Console

    from agenteval_cli.report.table import comparison_table

    result = Result("e", 0, {}, Trace(), [Score("routing_accuracy", 1.0)])
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(
        comparison_table([("t", from_results([result]))])
    )
    assert "conversation" not in out.getvalue()


def test_level_and_across_turns_round_trip_through_a_stored_catalog():
    declared = metric("hops", lower=True, fmt="count", level="conversation", across_turns="sum")
    catalog = Catalog.of([declared, metric("plain")], ["hops", "plain"])
    stored = catalog.to_json()
    assert stored["metrics"][0]["level"] == "conversation"
    assert stored["metrics"][0]["across_turns"] == "sum"
    assert "level" not in stored["metrics"][1]  # defaults are left out
    assert Catalog.from_json(stored) == catalog
    older = {"format": 1, "keys": ["hops"], "metrics": [{"key": "hops", "direction": "lower"}]}
    read = Catalog.from_json(older).info("hops")
    assert (read.level, read.across_turns) == ("request", "mean")


def test_with_options_sets_level_and_across_turns_and_refuses_other_values():
    changed = with_options(metric("steps"), {"across_turns": "sum", "level": "conversation"})
    assert (changed.across_turns, changed.level) == ("sum", "conversation")
    with pytest.raises(ValueError, match="across_turns must be one of mean, sum, got 'total'"):
        with_options(metric("steps"), {"across_turns": "total"})


def test_the_built_ins_say_how_a_conversation_carries_them():
    from agenteval_cli.metrics.catalog import BUILT_IN

    summed = {
        "input_tokens",
        "total_tokens",
        "cost_usd",
        "handoff_chain_length",
        "unnecessary_steps",
        "judge_cost_usd",
    }
    for key in summed:
        assert BUILT_IN.info(key).across_turns == "sum", key
    for key in ("ping_pong", "cache_share", "routing_accuracy", "resolution_coverage"):
        assert BUILT_IN.info(key).across_turns == "mean", key
    assert BUILT_IN.info("resolved").level == "conversation"
    assert BUILT_IN.info("routing_accuracy").level == "request"


def test_a_level_that_is_neither_is_refused():
    from agenteval_cli.core.errors import UserError

    with pytest.raises(UserError, match="level must be one of request, conversation, got 'chat'"):
        bind({"name": "routing_accuracy", "options": {"level": "chat"}})


def test_a_conversation_s_reference_fields_are_read_inside_its_turns():
    from agenteval_cli.evaluators.reference_fields import Reads, reference_warnings

    reads = [Reads("routing_accuracy", ("expected_agents",))]
    given = Example("c", {"turns": ["a", "b"]}, {"turns": [{"expected_agents": ["billing"]}, {}]})
    assert reference_warnings(reads, [given], "data.jsonl") == []  # not "turns, unread"
    typo = Example("c", {"turns": ["a"]}, {"turns": [{"expected_agent": ["billing"]}]})
    (line,) = reference_warnings(reads, [typo], "data.jsonl")
    assert "rows have 'expected_agent', which no evaluator reads: did you mean" in line


def test_a_conversation_level_judge_reads_the_transcript_once(monkeypatch):
    from openai_server import openai_server

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with openai_server() as server:
        server.replies = [{"score": True, "reasoning": "both requests handled"}]
        item = {
            "name": "conversation_quality",
            "options": {
                "type": "llm_judge",
                "level": "conversation",
                "prompt": "Was every request resolved? {outputs[transcript]}",
                "model": "openai:gpt-4o-mini",
                "base_url": server.base_url,
                "model_kwargs": {"max_retries": 0},
            },
        }
        scores, comments, turns = conversation(
            supervisor(), ROUTES, evaluators=["routing_accuracy", item]
        )
    [request] = server.requests  # one call for the conversation, none per turn
    content = request["messages"][-1]["content"]
    assert content.startswith("Was every request resolved? [")
    assert '{"role": "user", "content": "And please change my address."}' in content
    assert '{"role": "assistant", "content": "Your address is updated."}' in content
    assert scores["conversation_quality"] is True
    assert comments["conversation_quality"] == "whole conversation: both requests handled"
    assert scores["judge_input_tokens"] == 120.0  # the server's usage, once
    assert all("conversation_quality" not in t.score_map() for t in turns)
    assert scores["resolved"] is True


def test_an_example_is_checked_on_resolved_only_where_it_was_scored():
    from agenteval_cli.core.records import Run
    from agenteval_cli.gating.examples import example_checks, example_thresholds

    defaults = example_thresholds({})
    assert str(defaults["resolved"]) == ">= 1"
    errored = Run("single", error="RuntimeError: boom", scores={"routing_accuracy": 1.0})
    assert "resolved" not in {c.key for c in example_checks([errored], defaults)}
    scores, comments, _ = conversation(supervisor(), {"must_mention": ["password"], **ROUTES})
    unresolved = Run("c1", scores=scores, comments={k: v for k, v in comments.items() if v})
    (check,) = [c for c in example_checks([unresolved], defaults) if c.key == "resolved"]
    assert not check.passed
    assert check.comment == "unmet: conversation resolution_coverage 0.0% (pass mark >= 1)"


# Real graphs, driven turn by turn on one thread (a checkpointer keeps the conversation), each
# turn traced by its own recorder: the figures worked out from the scripted models' replies.


def run_turns(graph: Any, questions: list[str], coordinators: list[str]) -> list[Turn]:
    from langchain_core.messages import HumanMessage

    from agenteval_cli.trace.recorder import TraceRecorder

    turns = []
    for question in questions:
        recorder = TraceRecorder(coordinators=coordinators)
        config = {"configurable": {"thread_id": "c1"}, "callbacks": [recorder]}
        state = graph.invoke({"messages": [HumanMessage(question)]}, config=config)
        answer = {"final_response": state["messages"][-1].content}
        turns.append(Turn({"question": question}, answer, recorder.trace()))
    return turns


QUESTIONS = ["billing: charged twice?", "billing: when is the refund?", "account: new address"]


def test_a_real_swarm_keeps_the_active_agent_across_turns():
    """create_swarm with a checkpointer: turn 1 triage → billing; turn 2 billing answers
    (the active agent, no routing); turn 3 billing hands the address over to account."""
    from fakes import reply, scripted
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph_swarm import create_handoff_tool, create_swarm

    triage = create_agent(
        scripted("m", reply(tools=[("transfer_to_billing", {})], tokens=(100, 10))),
        tools=[create_handoff_tool(agent_name="billing")],
        name="triage",
    )
    billing = create_agent(
        scripted(
            "m",
            reply("A refund is on its way.", tokens=(200, 20)),
            reply("Within 5 days.", tokens=(300, 30)),
            reply(tools=[("transfer_to_account", {})], tokens=(400, 40)),
        ),
        tools=[create_handoff_tool(agent_name="account")],
        name="billing",
    )
    account = create_agent(
        scripted("m", reply("Your address is updated.", tokens=(500, 50))),
        tools=[],
        name="account",
    )
    graph = create_swarm([triage, billing, account], default_active_agent="triage").compile(
        checkpointer=InMemorySaver()
    )
    turns = run_turns(graph, QUESTIONS, [])
    assert [t.trace.agent_path for t in turns] == [
        ["triage", "billing"],
        ["billing"],
        ["billing", "account"],
    ]
    outputs = {
        "turns": [
            {"expected_agents": ["billing"]},
            {"expected_agents": ["billing"]},
            {"expected_agents": ["account"]},
        ]
    }
    scores, comments, _ = conversation(turns, outputs)
    assert scores["agent_continuity"] == 0.5
    assert comments["agent_continuity"] == ("turn 2: billing went on; turn 3: billing → account")
    assert scores["model_calls"] == 5.0
    assert scores["followup_model_calls"] == 1.5  # (1 + 2) / 2
    # $1 / $2 per million: turn 2 is 300 + 60 millionths, turn 3 (400 + 80) + (500 + 100)
    assert scores["followup_cost_usd"] == pytest.approx((0.00036 + 0.00108) / 2)
    assert scores["total_tokens"] == 110 + 220 + 330 + 440 + 550
    assert scores["conversation_handoffs"] == 2.0
    assert scores["conversation_ping_pong"] is False
    assert scores["routing_accuracy"] == 1.0
    assert scores["resolved"] is True and scores["turns_to_resolution"] == 3.0


def test_a_real_supervisor_routes_every_turn_again():
    """create_supervisor with a checkpointer: every turn begins at the supervisor, which
    hands over and answers once the specialist hands back."""
    import warnings

    from fakes import reply, scripted
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph_supervisor import create_supervisor

    from agenteval_cli.trace.attribution import graph_coordinators

    billing = create_agent(
        scripted("m", reply("Refund issued.", tokens=(10, 1)), reply("In 5 days.", tokens=(10, 1))),
        tools=[],
        name="billing",
    )
    account = create_agent(
        scripted("m", reply("Address changed.", tokens=(10, 1))), tools=[], name="account"
    )
    boss = scripted(
        "m",
        reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
        reply("A refund is on its way.", tokens=(10, 1)),
        reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
        reply("Within 5 days.", tokens=(10, 1)),
        reply(tools=[("transfer_to_account", {})], tokens=(10, 1)),
        reply("Your address is updated.", tokens=(10, 1)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        workflow = create_supervisor([billing, account], model=boss, supervisor_name="supervisor")
    graph = workflow.compile(checkpointer=InMemorySaver())
    turns = run_turns(graph, QUESTIONS, graph_coordinators(graph))
    assert [t.trace.agent_path for t in turns] == [
        ["supervisor", "billing", "supervisor"],
        ["supervisor", "billing", "supervisor"],
        ["supervisor", "account", "supervisor"],
    ]
    scores, comments, _ = conversation(turns, {})
    assert scores["agent_continuity"] == 0.0  # every follow-up began at the supervisor
    assert comments["agent_continuity"] == (
        "turn 2 began at supervisor, not billing; turn 3 began at supervisor, not billing"
    )
    assert scores["model_calls"] == 9.0
    assert scores["followup_model_calls"] == 3.0
    assert scores["conversation_handoffs"] == 6.0  # 2 a turn: there and back
    # billing → supervisor → billing across turns 1 and 2 is the supervisor's routing
    assert scores["conversation_ping_pong"] is False


def test_compare_pairs_conversations_and_says_what_their_request_figures_are():
    from agenteval_cli.core.records import Run
    from agenteval_cli.report import comparison
    from agenteval_cli.results.sources import ExperimentData

    def side(target: str, turns: list[Turn]) -> ExperimentData:
        scores, _, scored = conversation(turns, ROUTES)
        result = Result("c1", 0, {}, Trace(), [Score(k, v) for k, v in scores.items()])
        result.turns = scored
        return ExperimentData(f"exp-{target}", target, [Run.from_result(result)])

    swarm = swarm_turns(trace(["billing", "account"], [hop("billing", "account")]))
    built = comparison.build([side("sup", supervisor()), side("swarm", swarm)])
    rows = {row.key: row.means for row in built.rows}
    assert rows["agent_continuity"] == [0.0, 0.0]
    assert rows["followup_model_calls"] == [3.0, 2.0]
    assert rows["total_tokens"] == [9000.0, 6000.0]  # 3 + 3 calls, 2 + 2 calls
    assert built.note is not None
    assert built.note.startswith(
        "conversations: 1 / 1 (per target); a request metric of a conversation is the sum of "
        "its turns' for "
    )
