"""Coordinators and answers in further forms built as their libraries' docs build them,
through the CLI, every metric held against the truth from the models' own log (see
tests/forms): routing precision and exact routing too, for which a coordinator is no
specialist, also in the requests it answers alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from forms import coordinated, datasets
from forms.harness import BASE_EVALUATORS, Run, mismatches, report, run_spec, truths
from forms.truth import Form

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVALUATORS = [*BASE_EVALUATORS, "routing_precision", "routing_exact"]
AGENTS = ("billing", "tech")


def routing_problems(run: Run, target: str, form: Form, *, question_key: str = "question") -> list:
    """Routing precision and exact routing against the truth: the agents that made model
    calls, the form's coordinators left out."""
    truth = truths(run, target, form)
    problems = []
    for row in run.rows[target]:
        t = truth[str(row.inputs[question_key])]
        expected = set(row.reference.get("expected_agents") or [])
        invoked = {c.agent for c in t.calls} - form.coordinators
        precision = (len(invoked & expected) / len(invoked)) if invoked else float(not expected)
        want = {"routing_precision": precision, "routing_exact": invoked == expected}
        for key, value in want.items():
            if row.scores.get(key) != value:
                problems.append(
                    f"{target}/{row.example_id}: {key}: agenteval={row.scores.get(key)!r} "
                    f"truth={value!r}"
                )
    return problems


def assert_exact(run: Run, target: str, form: Form, **kw: Any) -> None:
    problems = mismatches(run, target, form, **kw)
    problems += routing_problems(run, target, form, question_key=kw.get("question_key", "question"))
    assert not problems, report(problems)


def test_single_agent_supervisor_with_a_custom_name(tmp_path):
    """langgraph-supervisor over one agent, ``supervisor_name="manager"``: the manager
    coordinates in every request, also the ones it answers alone."""
    rows = [r for r in datasets.support() if r["id"] in ("billing", "hours")]
    run = run_spec(
        tmp_path,
        targets={"solo_manager": "forms.coordinated:solo_manager"},
        rows=rows,
        evaluators=EVALUATORS,
    )
    form = Form(coordinators=frozenset({"manager"}))
    hours = truths(run, "solo_manager", form)[datasets.HOURS]
    assert hours.path == ["manager"]
    assert_exact(run, "solo_manager", form)


@pytest.mark.parametrize("target", ["tutorial_exact", "tutorial_agents"])
def test_supervisor_tutorial_as_written(tmp_path, target):
    """The structured-output router, workers answering as named human messages: the
    supervisor coordinates, its ``Router`` calls are no work, the answer is the last
    worker's message."""
    run = run_spec(
        tmp_path,
        targets={target: f"forms.coordinated:{target}"},
        rows=datasets.support(tools=True),
        evaluators=[*EVALUATORS, "trajectory_match", "unnecessary_steps"],
    )
    form = Form(
        coordinators=frozenset({"supervisor"}),
        kinds={"Router": "output"},
        final_text=coordinated.workers_answer,
    )
    assert_exact(run, target, form)
    for row in run.rows[target]:
        assert row.scores["trajectory_match"] is True, row.json
        assert row.scores["unnecessary_steps"] == 0, row.json


def test_supervisor_over_agents_with_middleware(tmp_path):
    run = run_spec(
        tmp_path,
        targets={"middleware_supervisor": "forms.coordinated:middleware_supervisor"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    assert_exact(run, "middleware_supervisor", Form(coordinators=frozenset({"supervisor"})))


def test_async_subagent_tools_in_parallel(tmp_path):
    run = run_spec(
        tmp_path,
        targets={"async_subagents": "forms.coordinated:async_subagents"},
        rows=datasets.support(),
        evaluators=EVALUATORS,
    )
    form = Form(
        coordinators=frozenset({"async_subagents"}),
        branches=AGENTS,
        kinds={f"ask_{a}": "agent" for a in AGENTS},
        paths_known=False,
    )
    assert_exact(run, "async_subagents", form)


def test_router_with_a_structured_classifier(tmp_path):
    rows = [{**r, "inputs": {"query": r["inputs"]["question"]}} for r in datasets.support()]
    run = run_spec(
        tmp_path,
        targets={"classified_router": "forms.coordinated:classified_router"},
        rows=rows,
        evaluators=EVALUATORS,
    )
    # the classify node dispatches, the synthesize node joins: neither is routed to
    form = Form(
        coordinators=frozenset({"classify", "synthesize_results"}),
        branches=AGENTS,
        kinds={"Classification": "output"},
    )
    assert_exact(run, "classified_router", form, question_key="query")
    for row in run.rows["classified_router"]:
        assert set(row.json["trace"]["coordinators"]) <= form.coordinators, row.json["trace"]


def concierge_rows() -> list[dict[str, Any]]:
    row = datasets.row
    return [
        row("billing", "My invoice INV-42 needs a refund.", []),  # the main agent's own tool
        row("tech", "The mobile app shows a crash on start.", ["tech"]),
        row("account", "Please change my email address.", ["general-purpose"], domains=["account"]),
        row(
            "billing-tech",
            "Refund my last invoice and fix the crash in the app.",
            ["tech"],
            domains=["billing", "tech"],
        ),
        row("network", "My wifi router is down.", ["network"], domains=[]),
        row("hours", datasets.HOURS, []),
    ]


def test_deep_agent_with_its_own_tools_and_the_general_purpose_subagent(tmp_path):
    """``create_deep_agent(tools=[...], subagents=[...], name="concierge")``: the main agent
    does billing with its own tool, hands tech to ``tech`` and account to the default
    general-purpose sub-agent (running on the main agent's model), and names a sub-agent
    that does not exist for network (deepagents answers with an error text, no agent runs)."""
    run = run_spec(
        tmp_path,
        targets={"concierge": "forms.coordinated:concierge"},
        rows=concierge_rows(),
        evaluators=EVALUATORS,
    )
    form = Form(coordinators=frozenset({"concierge"}), kinds={"task": "agent"}, paths_known=False)
    truth = truths(run, "concierge", form)
    assert truth["Please change my email address."].path == [
        "concierge", "general-purpose", "concierge",
    ]  # fmt: skip
    problems = mismatches(run, "concierge", form)
    problems += routing_problems(run, "concierge", form)
    # The task call naming no sub-agent ran the task tool, which ran no agent and answered
    # with an error text (not ``status="error"``): an ordinary, successful call as the trace
    # shows it. Whether it should count as a failed delegation instead is left open.
    failed_task = "concierge/network: tool call kinds: agenteval={'task': 'tool'} truth="
    problems = [p for p in problems if not p.startswith(failed_task)]
    assert not problems, report(problems)
    network = next(r for r in run.rows["concierge"] if r.example_id == "network")
    (task,) = network.json["trace"]["tool_calls"]
    assert (task["kind"], task["status"], task.get("target")) == ("tool", "ok", None), task


@pytest.mark.parametrize(
    ("target", "lead", "ids"),
    [
        ("deep_team", "supervisor", None),
        ("deep_solo_team", "lead", ("billing", "hours")),  # one agent under a custom name
    ],
)
def test_deep_agent_with_a_supervisor_team_as_compiled_subagent(tmp_path, target, lead, ids):
    rows = [r for r in datasets.support() if ids is None or r["id"] in ids]
    run = run_spec(
        tmp_path,
        targets={target: f"forms.coordinated:{target}"},
        rows=rows,
        evaluators=EVALUATORS,
    )
    form = Form(
        coordinators=frozenset({target, lead}),
        kinds={"task": "agent"},
        paths_known=False,  # checked below: the team sits under the main agent
    )
    assert_exact(run, target, form)
    truth = truths(run, target, form)
    for row in run.rows[target]:
        want: dict[str, int] = {}
        for c in truth[row.question].calls:
            path = [target] if c.agent == target else [target, "support_team", c.agent]
            for depth in range(1, len(path) + 1):
                want[" > ".join(path[:depth])] = want.get(" > ".join(path[:depth]), 0) + 1
        got = {k: v["model_calls"] for k, v in row.trace.by_agent().items()}
        assert got == want, (row.example_id, got, want)


def test_hierarchical_teams_tutorial(tmp_path):
    """Teams with supervisors of their own, built like the top one: every ``supervisor``
    coordinates (none of its return trips is a bounce), the two in different places stay
    two steps, each team's usage is its members' and its supervisor's."""
    run = run_spec(
        tmp_path,
        targets={"hierarchical_teams": "forms.coordinated:hierarchical_teams"},
        rows=datasets.hierarchy(),
    )
    form = Form(
        coordinators=frozenset({"supervisor"}),
        teams={
            member: (team,) for team, members in coordinated.TEAMS.items() for member in members
        },
        kinds={"Router": "output"},
        final_text=coordinated.workers_answer,
    )
    both = truths(run, "hierarchical_teams", form)["Refund my invoice and fix the app crash."]
    assert both.path == [
        "supervisor", "supervisor", "billing", "supervisor", "supervisor",
        "supervisor", "tech", "supervisor", "supervisor",
    ]  # fmt: skip
    problems = mismatches(run, "hierarchical_teams", form)
    for row in run.rows["hierarchical_teams"]:
        calls = truths(run, "hierarchical_teams", form)[row.question].calls
        want = [[*c.team, c.agent] if c.team else form.path_of(c.agent) for c in calls]
        got = [c["path"] for c in row.json["trace"]["model_calls"]]
        if got != want:
            problems.append(f"{row.example_id}: model call paths: agenteval={got} truth={want}")
    assert not problems, report(problems)
