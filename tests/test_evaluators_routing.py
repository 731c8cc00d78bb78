"""The routing family beside routing_accuracy: precision, forbidden agents, exact, confusion."""

from __future__ import annotations

import asyncio

import pytest

from agenteval_cli.core.records import ModelCall, Trace
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.evaluators.routing import confusion_matrix


def run(name, reference, trace, options=None):
    raw = build_evaluator(name, options)(reference_outputs=reference, trace=trace)
    [score] = normalize(raw, name)
    return score


SUPERVISOR = Trace(agent_path=["supervisor", "billing", "supervisor", "account", "supervisor"])
SWARM = Trace(agent_path=["account", "billing"])


class TestRoutingPrecision:
    def test_supervisor_is_not_a_specialist(self):
        s = run("routing_precision", {"expected_agents": ["billing", "account"]}, SUPERVISOR)
        assert s.score == 1.0

    def test_half_the_specialists_unexpected(self):
        s = run("routing_precision", {"expected_agents": ["billing"]}, SUPERVISOR)
        assert s.score == 0.5
        assert "unexpected ['account']" in s.comment

    def test_ignore_list_is_configurable(self):
        s = run(
            "routing_precision",
            {"expected_agents": ["billing"]},
            SWARM,
            options={"ignore_agents": ["account"]},
        )
        assert s.score == 1.0

    def test_no_specialist_invoked(self):
        assert run("routing_precision", {}, Trace(agent_path=["supervisor"])).score == 1.0
        assert run("routing_precision", {"expected_agents": ["billing"]}, Trace()).score == 0.0


class TestForbiddenAgents:
    def test_fails_when_a_forbidden_agent_ran(self):
        s = run("forbidden_agents", {"forbidden_agents": ["Billing"]}, SWARM)
        assert s.score is False
        assert "invoked forbidden ['billing']" in s.comment

    def test_passes_when_none_ran(self):
        s = run("forbidden_agents", {"forbidden_agents": ["tech_support"]}, SWARM)
        assert s.score is True

    def test_nothing_forbidden_passes(self):
        assert run("forbidden_agents", {}, SWARM).score is True


class TestRoutingExact:
    def test_set_equality(self):
        s = run("routing_exact", {"expected_agents": ["account", "billing"]}, SUPERVISOR)
        assert s.score is True

    def test_missing_and_unexpected_are_named(self):
        s = run("routing_exact", {"expected_agents": ["billing", "tech_support"]}, SUPERVISOR)
        assert s.score is False
        assert s.comment == "missing ['tech_support']; unexpected ['account']"


def test_confusion_matrix_counts_expected_by_invoked():
    rows = [
        (
            {"expected_agents": ["billing"]},
            Trace(agent_path=["supervisor", "billing", "supervisor"]),
        ),
        (
            {"expected_agents": ["billing"]},
            Trace(agent_path=["supervisor", "account", "supervisor"]),
        ),
        ({"expected_agents": ["tech_support", "account"]}, Trace(agent_path=["account"])),
        ({"expected_agents": ["account"]}, Trace(agent_path=["supervisor"])),
    ]
    matrix = confusion_matrix(rows)
    assert matrix == {
        "expected": ["account", "billing", "tech_support"],
        "invoked": ["account", "billing", "(none)"],
        "counts": [[1, 0, 1], [1, 1, 0], [0, 0, 1]],
    }


def test_multi_domain_hits_are_not_confusions_and_extras_go_to_the_none_row():
    rows = [
        ({"expected_agents": ["billing", "account"]}, Trace(agent_path=["billing", "account"])),
        ({"expected_agents": ["billing"]}, Trace(agent_path=["billing", "tech_support"])),
        ({}, Trace(agent_path=["supervisor"])),
    ]
    assert confusion_matrix(rows) == {
        "expected": ["account", "billing", "(none)"],
        "invoked": ["account", "billing", "tech_support", "(none)"],
        "counts": [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 1]],
    }


def test_confusion_matrix_is_none_without_expectations():
    assert confusion_matrix([({}, SWARM)]) is None


def test_routing_confusion_summary_evaluator():
    from agenteval_cli.core.records import Result
    from agenteval_cli.evaluators.scoring import BoundEvaluator
    from agenteval_cli.evaluators.summaries import run_summaries
    from agenteval_cli.store.results import StoredResult

    def stored(expected, path):
        result = Result("x", 0, {}, Trace(agent_path=path))
        return StoredResult(
            inputs={}, reference_outputs={"expected_agents": expected}, result=result
        )

    rows = [
        stored(["billing"], ["supervisor", "billing"]),
        stored(["billing"], ["supervisor", "account"]),
        stored(["billing", "account"], ["supervisor", "account"]),
    ]
    fn = build_evaluator("routing_confusion")
    [score] = asyncio.run(
        run_summaries([BoundEvaluator("routing_confusion", fn, summary=True)], rows)
    )
    # expected slots: billing x3, account x1; hits: billing once, account once
    assert score.score == pytest.approx(2 / 4)
    assert score.comment == "billing→(none) ×1, billing→account ×1"


def hierarchy_trace() -> Trace:
    """top_supervisor hands to money_team, whose supervisor sends the request to account."""
    return Trace(
        agent_path=["top_supervisor", "money_supervisor", "account", "money_supervisor"],
        model_calls=[
            ModelCall("top_supervisor", "m"),
            ModelCall("money_supervisor", "m", path=["money_team", "money_supervisor"]),
            ModelCall("account", "m", path=["money_team", "account"]),
            ModelCall("money_supervisor", "m", path=["money_team", "money_supervisor"]),
        ],
        coordinators=["top_supervisor", "money_supervisor"],
    )


def test_expected_agents_may_name_a_leaf_or_its_team() -> None:
    evaluate = build_evaluator("routing_accuracy")
    for expected, score in [
        (["account"], 1.0),
        (["money_team"], 1.0),
        (["Money_Team", "billing"], 0.5),
        (["research_team"], 0.0),
    ]:
        result = evaluate(reference_outputs={"expected_agents": expected}, trace=hierarchy_trace())
        assert result["score"] == score, expected


def test_precision_and_exact_skip_the_coordinators_the_trace_found() -> None:
    trace = hierarchy_trace()
    precision = build_evaluator("routing_precision", {"ignore_agents": []})
    exact = build_evaluator("routing_exact", {"ignore_agents": []})
    for expected in (["account"], ["money_team"]):
        reference = {"expected_agents": expected}
        assert precision(reference_outputs=reference, trace=trace)["score"] == 1.0
        assert exact(reference_outputs=reference, trace=trace)["score"] is True
    reference = {"expected_agents": ["account", "billing"]}
    assert exact(reference_outputs=reference, trace=trace)["score"] is False


def test_untraced_routing_is_null() -> None:
    trace = Trace(untraced="no LangChain run was seen")
    result = build_evaluator("routing_accuracy")(
        reference_outputs={"expected_agents": ["billing"]}, trace=trace
    )
    assert result["score"] is None and "untraced" in result["comment"]


def test_confusion_matrix_meets_an_expected_team_through_its_agents() -> None:
    rows = [({"expected_agents": ["money_team"]}, hierarchy_trace())]
    rows.append(({"expected_agents": ["research_team"]}, hierarchy_trace()))
    matrix = confusion_matrix(rows, ignore_agents=[])
    assert matrix == {
        "expected": ["money_team", "research_team"],
        "invoked": ["account", "money_team"],
        # the first request met its team; the second went to account instead
        "counts": [[0, 1], [1, 0]],
    }
