"""A simulated conversation stopped by its judge is resolved at the turn the judge said so:
the judge's scores of the turns before it (read against the whole conversation's
references) say how far it had got, not that a turn failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agenteval_cli.evaluators  # noqa: F401 (registers every family)
from agenteval_cli.core.records import Score, Trace, Turn
from agenteval_cli.evaluators import REGISTRY
from agenteval_cli.evaluators.conversation_metrics import resolution
from agenteval_cli.metrics.catalog import Catalog

GRAPH = """
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph


def answer(state: MessagesState) -> dict:
    asked = str(state["messages"][-1].content).lower()
    if "refund" in asked:
        return {"messages": [AIMessage("Refund of $49 issued for INV-2041.")]}
    return {"messages": [AIMessage("Looking into it.")]}


builder = StateGraph(MessagesState)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
graph = builder.compile(checkpointer=InMemorySaver())
"""

CUSTOMER = "agenteval_cli.demo.users:scripted_customer"
REFERENCES = {"must_mention": ["INV-2041", "$49"]}
ROWS = [
    {
        "id": "resolved-on-turn-2",
        "inputs": {"scenario": "I was charged twice on INV-2041.", "followups": ["Refund it."]},
        "outputs": REFERENCES,
    },
    {
        "id": "never-resolved",
        "inputs": {"scenario": "I was charged twice.", "followups": ["Anything?"]},
        "outputs": REFERENCES,
    },
]


def run(tmp_path: Path, invoke: Any, stop: str, *more: str) -> dict[str, dict[str, Any]]:
    (tmp_path / "graphs.py").write_text(GRAPH)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {data}\n"
        f"targets:\n  plain: {tmp_path / 'graphs.py'}:graph\n"
        "evaluators: [resolution_coverage]\n"
        f"simulated_user:\n  function: {CUSTOMER}\n  max_turns: 4\n{stop}"
    )
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out, *more)
    assert result.exit_code == 0, result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    return {r["example_id"]: r for r in experiment["results"]}


def figures(result: dict[str, Any]) -> tuple[Any, ...]:
    scores = result["scores"]
    return (
        scores["turns"],
        scores["resolved"],
        scores["turns_to_resolution"],
        scores["resolution_coverage"],
    )


def test_a_conversation_the_judge_stopped_is_resolved_at_that_turn(tmp_path, invoke):
    results = run(tmp_path, invoke, "  stop: {judge: resolution_coverage, threshold: 1}\n")
    # turn 1 "Looking into it." covers none of the terms (0), turn 2 both (1): the judge
    # stops it there, and the whole conversation covers both terms
    resolved = results["resolved-on-turn-2"]
    assert [t["scores"]["resolution_coverage"] for t in resolved["turns"]] == [0.0, 1.0]
    assert figures(resolved) == (2, 1.0, 2.0, 1.0)
    # the user ran out of follow-ups before the judge said resolved: not resolved
    assert figures(results["never-resolved"]) == (2, 0.0, None, 0.0)
    # scored again from the stored turns, no target called: the same
    again = run(tmp_path, invoke, "  stop: {judge: resolution_coverage, threshold: 1}\n", *RESCORE)
    assert [figures(again[key]) for key in results] == [(2, 1.0, 2.0, 1.0), (2, 0.0, None, 0.0)]


RESCORE = ("--rescore", "plain")


def test_without_a_stop_judge_every_turns_check_counts_as_before(tmp_path, invoke):
    results = run(tmp_path, invoke, "")
    # a simulated user's turns have no references of their own: nothing to fail on a turn,
    # the conversation's own coverage decides
    assert figures(results["resolved-on-turn-2"]) == (2, 1.0, 2.0, 1.0)
    assert figures(results["never-resolved"]) == (2, 0.0, None, 0.0)


def metrics_of(name: str) -> Any:
    return REGISTRY[name].metrics


def turn(coverage: float | None, ended: str | None = None) -> Turn:
    scores = [Score("resolution_coverage", coverage), Score("ping_pong", False)]
    return Turn({"question": "q"}, {"final_response": "a"}, Trace(), scores, ended=ended)


def test_the_stop_judges_word_with_the_reason_when_it_never_said_resolved():
    metrics = [
        m for name in ("resolution_coverage", "handoff_chain_length") for m in metrics_of(name)
    ]
    catalog = Catalog.of(metrics)
    stopped = [turn(0.0), turn(1.0, "judge: resolved (resolution_coverage scored 1 >= 1)")]
    limit = [turn(0.0), turn(0.5, "max_turns reached (2)")]
    failed = [turn(0.0), turn(None, "max_turns reached (2)")]

    def verdict(turns: list[Turn], judge: str | None = "resolution_coverage") -> list[Any]:
        scores = resolution(turns, [], None, catalog, judge=judge)
        return [(s.score, s.comment) for s in scores]

    assert verdict(stopped) == [
        (True, "every check met in 2 turn(s)"),
        (2.0, "every check met in 2 turn(s)"),
    ]
    unmet = "unmet: the stop judge resolution_coverage never said resolved (max_turns reached (2))"
    assert verdict(limit) == [(False, unmet), (None, unmet)]
    unknown = "unknown: turn 2 resolution_coverage (the stop judge's score of the last turn)"
    assert verdict(failed) == [(None, unknown), (None, unknown)]
    # without a stop judge every turn's score is a check, turn 1's 0% too
    assert verdict(stopped, judge=None)[0][0] is False
    # the other checks still count: a bounce on the turn the judge stopped at
    bounced = [turn(0.0), turn(1.0, stopped[1].ended)]
    bounced[1].scores[1] = Score("ping_pong", True)
    assert verdict(bounced)[0] == (False, "unmet: turn 2 ping_pong 100.0% (pass mark <= 0)")
