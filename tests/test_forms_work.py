"""Only work counts as work: forms whose models make tool calls that are not steps of work,
run through the CLI, every metric held against the truth from the models' own log and the
trajectory evaluators against the work the log shows (see tests/forms/work.py).

- a supervisor whose model answers ``with_structured_output(Router)`` (LangGraph's supervisor
  tutorial): the ``Router`` calls are the model's output, no tool ran them;
- ``create_agent(response_format=ToolStrategy(Answer))``: its ``Answer`` call likewise;
- tools that raise under ``ToolNode(handle_tool_errors=True)``: a retry that succeeds is no
  wasted step, a required tool that failed every time is not used;
- the hand-written network: each tool a node runs itself is recorded once, and the
  ``transfer_to_<peer>`` call the node acted on is a handoff.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from forms import datasets
from forms.harness import BASE_EVALUATORS, Run, mismatches, report, run_spec, truths
from forms.model import Call
from forms.truth import Form
from forms.work import failed, workers_answer

STRICT = {"name": "trajectory_match", "mode": "strict"}
TRAJECTORY = [*BASE_EVALUATORS, STRICT, "unnecessary_steps"]


def work_made(calls: list[Call], *, not_work: Callable[[str], bool]) -> list[str]:
    """The work tools the models asked for, in order, from the log."""
    return [name for c in calls for name, _ in c.tools if not not_work(name)]


def score_problems(run: Run, target: str, want: Callable[[Any], dict[str, Any]]) -> list[str]:
    """Each row's scores against ``want(row)``, the truth the test derived for that row."""
    problems = []
    for row in run.rows[target]:
        for key, expected in want(row).items():
            got = row.scores.get(key, "missing")
            if got != expected:
                problems.append(
                    f"{target}/{row.example_id}: {key}: agenteval={got!r} truth={expected!r} "
                    f"({row.json['comments'].get(key)})"
                )
    return problems


# -- LangGraph's supervisor tutorial: with_structured_output(Router) ----------------------

TUTORIAL = Form(
    coordinators=frozenset({"supervisor"}),
    kinds={"Router": "output"},
    final_text=workers_answer,
)


def test_structured_output_router_calls_are_not_work(tmp_path):
    """The supervisor's ``Router`` calls, parsed from its reply and never run, are the model's
    output: the trajectory is the workers' tools, and no step is wasted. Detected from the
    tool-call parser ``with_structured_output`` puts after the model, and from the
    ``ls_structured_output_format`` a provider's model receives (``tutorial_with_format``)."""
    run = run_spec(
        tmp_path,
        targets={
            "tutorial": "forms.work:tutorial",
            "tutorial_with_format": "forms.work:tutorial_with_format",
        },
        rows=datasets.support(tools=True),
        evaluators=TRAJECTORY,
    )
    problems = []
    for target in ("tutorial", "tutorial_with_format"):
        truth = truths(run, target, TUTORIAL)
        both = truth["Refund my last invoice and fix the crash in the app."]
        assert both.path == ["supervisor", "billing", "supervisor", "tech", "supervisor"]
        assert both.tools["Router"] == 3  # the model routed three times

        def want(row: Any, truth: Any = truth) -> dict[str, Any]:
            calls = truth[row.question].calls
            made = work_made(calls, not_work=lambda name: name == "Router")
            return {
                "trajectory_match": made == row.reference["expected_tools"],
                "unnecessary_steps": 0.0,
            }

        problems += score_problems(run, target, want)
        problems += mismatches(run, target, TUTORIAL)
    assert not problems, report(problems)
    assert all(r.scores["trajectory_match"] is True for r in run.rows["tutorial"])


# -- create_agent(response_format=ToolStrategy(Answer)) -----------------------------------


def _support_rows() -> list[dict[str, Any]]:
    """The support requests (their domains, answer terms and tools), all for the one agent
    ``support``."""
    return [
        datasets.row(
            row["id"],
            row["inputs"]["question"],
            ["support"],
            domains=row["outputs"]["expected_agents"],
            tools=True,
        )
        for row in datasets.support()
    ]


def test_tool_strategy_answer_is_not_work(tmp_path):
    """``create_agent``'s structured-output call is answered by the agent's own ToolMessage,
    no tool run: kind ``output``, out of the trajectory and the steps."""
    run = run_spec(
        tmp_path,
        targets={"structured_agent": "forms.work:structured_agent"},
        rows=_support_rows(),
        evaluators=TRAJECTORY,
    )
    form = Form(kinds={"Answer": "output"})
    truth = truths(run, "structured_agent", form)
    assert all(t.tools["Answer"] == 1 for t in truth.values())

    def want(row: Any) -> dict[str, Any]:
        made = work_made(truth[row.question].calls, not_work=lambda name: name == "Answer")
        return {
            "trajectory_match": made == row.reference["expected_tools"],
            "unnecessary_steps": 0.0,
        }

    problems = score_problems(run, "structured_agent", want)
    problems += mismatches(run, "structured_agent", form)
    assert not problems, report(problems)
    assert all(r.scores["trajectory_match"] is True for r in run.rows["structured_agent"])
    # Named in the shorthand, the structured-output call is judged like any other.
    named = run_spec(
        tmp_path / "named",
        targets={"structured_agent": "forms.work:structured_agent"},
        rows=[
            {
                **row,
                "outputs": {
                    **row["outputs"],
                    "expected_tools": [*row["outputs"]["expected_tools"], "Answer"],
                },
            }
            for row in _support_rows()
        ],
        evaluators=[STRICT],
    )
    assert all(r.scores["trajectory_match"] is True for r in named.rows["structured_agent"]), [
        r.json["comments"] for r in named.rows["structured_agent"]
    ]


# -- tools that raise under ToolNode(handle_tool_errors=True) -----------------------------

RETRIES = Form(fails=failed)


def _retry_rows() -> list[dict[str, Any]]:
    rows = _support_rows()
    for row in rows:
        row["outputs"]["required_tools"] = list(row["outputs"]["expected_tools"])
    return rows


def test_failed_calls_and_retries(tmp_path):
    """Billing's first lookup is refused and its retry succeeds: the tool is used, the retry
    no wasted step. The diagnostics fail on both tries: the required tool is not used and the
    trajectory misses it, though the model called it twice."""
    run = run_spec(
        tmp_path,
        targets={"retrying_agent": "forms.work:retrying_agent"},
        rows=_retry_rows(),
        evaluators=[
            *TRAJECTORY,
            "required_tools",
            {"name": "soundness", "outcome": "must_mention"},
        ],
    )
    truth = truths(run, "retrying_agent", RETRIES)
    tech = truth["The mobile app shows a crash on start."]
    assert [(n, json.loads(a)) for c in tech.calls for n, a in c.tools] == [
        ("run_diagnostics", {"app": "mobile"}), ("run_diagnostics", {"app": "mobile"}),
    ]  # fmt: skip

    def want(row: Any) -> dict[str, Any]:
        calls = [(n, json.loads(a)) for c in truth[row.question].calls for n, a in c.tools]
        succeeded = [name for name, args in calls if not failed(name, args)]
        used = set(row.reference["required_tools"]) <= set(succeeded)
        return {
            "trajectory_match": succeeded == row.reference["expected_tools"],
            "unnecessary_steps": 0.0,
            "required_tools": used,
            "used_required_tools": used,
            "trajectory_sound": used,
        }

    problems = score_problems(run, "retrying_agent", want)
    problems += mismatches(run, "retrying_agent", RETRIES)
    assert not problems, report(problems)
    scores = {r.example_id: r.scores for r in run.rows["retrying_agent"]}
    assert scores["billing"]["required_tools"] is True
    assert scores["tech"]["required_tools"] is False
    comments = {r.example_id: r.json["comments"] for r in run.rows["retrying_agent"]}
    assert comments["tech"]["required_tools"] == "failed every time ['run_diagnostics']"
    assert comments["tech"]["trajectory_match"].endswith(
        "; failed, left out ['run_diagnostics', 'run_diagnostics']"
    )


# -- the docs' hand-written network ---------------------------------------------------------


def _network_rows() -> list[dict[str, Any]]:
    bounce = datasets.row(
        "bounce",
        datasets.BOUNCE_ROW["inputs"]["question"],
        ["billing", "tech"],
        tools=True,
    )
    return [*datasets.support(tools=True), bounce]


def test_hand_written_network_records_each_call_once(tmp_path):
    """Nodes run their tools themselves (with the model's call, or with its arguments only)
    and act on ``transfer_to_<peer>`` with ``Command(goto=peer)``: each call is in the trace
    once, the transfer a handoff to the peer, and the trajectory the work tools."""
    targets = ("inline_network", "inline_network_args")
    run = run_spec(
        tmp_path,
        targets={t: f"forms.work:{t}" for t in targets},
        rows=_network_rows(),
        evaluators=TRAJECTORY,
    )
    form = Form()
    problems = []
    for target in targets:
        truth = truths(run, target, form)
        bounce = truth[datasets.BOUNCE_ROW["inputs"]["question"]]
        assert (bounce.path, bounce.ping_pong) == (["billing", "tech", "billing"], True)

        def want(row: Any, truth: Any = truth) -> dict[str, Any]:
            made = work_made(
                truth[row.question].calls, not_work=lambda n: n.startswith("transfer_")
            )
            return {
                "trajectory_match": made == row.reference["expected_tools"],
                "unnecessary_steps": 0.0,
            }

        problems += score_problems(run, target, want)
        problems += mismatches(run, target, form)
        for row in run.rows[target]:
            for call in row.json["trace"]["tool_calls"]:
                if call["name"].startswith("transfer_to_"):
                    assert call["target"] == call["name"].removeprefix("transfer_to_"), call
    assert not problems, report(problems)
