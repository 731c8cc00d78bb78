"""Blame: which agent, at which step, started a request's failure.

The planted cases run scripted graphs (:mod:`blame_graphs`: langgraph-supervisor,
langgraph-swarm, a supervisor of supervisors, deepagents) through the CLI, a failure planted
at a known agent and step of each; the attribution ``--json`` shows must name that agent and
step on every one, and be null on the request that did not fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agenteval_cli.core.records import Handoff, ModelCall, Result, Score, ToolCall, Trace
from agenteval_cli.evaluators.blame import blame, failed_checks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GRAPHS = Path(__file__).resolve().parent / "blame_graphs.py"
PLANTS = ("none", "misroute", "dropped", "tool_error", "fault")

# graph -> (its function, the row's expected agents, the faulted variant's fault)
SHAPES = {
    "supervisor": ("supervisor", ["billing"]),
    "swarm": ("swarm", ["billing", "account"]),
    "hierarchy": ("hierarchy", ["money_team", "billing"]),
    "deep": ("deep", ["billing"]),
}
# (graph, plant) -> (agent, step, kind): where the failure was planted. ``fault`` runs on the
# variant whose spec fails lookup_invoice, ``model_down`` is the request that should succeed
# (``none``) on the variant whose spec fails billing's model calls; the others run on the
# graph as it is.
PLANTED = {
    ("supervisor", "misroute"): ("boss", 0, "misroute"),
    ("supervisor", "forbidden"): ("boss", 0, "misroute"),
    ("supervisor", "dropped"): ("boss", 0, "ended_early"),
    ("supervisor", "tool_error"): ("billing", 1, "tool_error"),
    ("supervisor", "fault"): ("billing", 1, "fault"),
    ("supervisor", "model_down"): ("billing", 1, "fault"),
    ("swarm", "misroute"): ("desk", 0, "misroute"),
    ("swarm", "dropped"): ("billing", 1, "ended_early"),
    ("swarm", "tool_error"): ("billing", 1, "tool_error"),
    ("swarm", "fault"): ("billing", 1, "fault"),
    ("swarm", "model_down"): ("billing", 1, "fault"),
    ("hierarchy", "misroute"): ("lead", 1, "misroute"),
    ("hierarchy", "dropped"): ("lead", 1, "ended_early"),
    ("hierarchy", "tool_error"): ("billing", 2, "tool_error"),
    ("hierarchy", "fault"): ("billing", 2, "fault"),
    ("hierarchy", "model_down"): ("billing", 2, "fault"),
    ("deep", "misroute"): ("orchestrator", 0, "misroute"),
    ("deep", "dropped"): ("orchestrator", 0, "ended_early"),
    ("deep", "tool_error"): ("billing", 1, "tool_error"),
    ("deep", "fault"): ("billing", 1, "fault"),
    ("deep", "model_down"): ("billing", 1, "fault"),
}


def _rows(graph: str) -> list[dict[str, Any]]:
    expected = SHAPES[graph][1]
    rows = [
        {
            "id": plant,
            "inputs": {"question": "Can I see my latest invoice?", "plant": plant},
            "outputs": {"expected_agents": expected, "must_mention": ["INV-1042"]},
        }
        for plant in PLANTS
    ]
    if graph == "supervisor":  # the misroute again, to an agent the row forbids
        rows.append(
            {
                "id": "forbidden",
                "inputs": {"question": "Can I see my latest invoice?", "plant": "misroute"},
                "outputs": {"forbidden_agents": ["account"], "must_mention": ["INV-1042"]},
            }
        )
    return rows


def _run(invoke: Any, folder: Path, graph: str) -> dict[str, dict[str, Any]]:
    """``{target: {example id: result}}`` from ``--json``: the graph, its variant whose
    lookup_invoice calls a fault fails, and the one whose billing agent's model is down."""
    folder.mkdir(parents=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(graph)))
    function = SHAPES[graph][0]
    (folder / "spec.yaml").write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  clean: {GRAPHS}:{function}\n"
        f"  faulted: {{target: {GRAPHS}:{function},"
        " faults: [{tool: lookup_invoice, fail: error}]}\n"
        f"  model_down: {{target: {GRAPHS}:{function},"
        " faults: [{agent: billing, fail: model_error}]}\n"
        "evaluators: [routing_accuracy, forbidden_agents, resolution_coverage, recovery]\n"
        "max_error_rate: 1\n"
    )
    out = folder / "out.json"
    result = invoke("run", folder / "spec.yaml", "--store", folder / "a.db", "--json", out)
    assert result.exit_code == 0, result.output
    return {
        e["target"]: {r["example_id"]: r for r in e["results"]}
        for e in json.loads(out.read_text())["experiments"]
    }


@pytest.mark.parametrize("graph", list(SHAPES))
def test_blame_names_the_planted_agent_and_step(invoke, tmp_path, graph):
    found = _run(invoke, tmp_path / graph, graph)
    assert found["clean"]["none"]["blame"] is None  # it did not fail
    got = {}
    for shape, plant in PLANTED:
        if shape != graph:
            continue
        if plant == "model_down":
            result = found["model_down"]["none"]
        else:
            result = found["faulted" if plant == "fault" else "clean"][plant]
        named = result["blame"]
        got[plant] = (named["agent"], named["step"], named["kind"])
        assert result["trace"]["agent_path"][named["step"]] == named["agent"]
        assert named["why"]
    want = {plant: truth for (shape, plant), truth in PLANTED.items() if shape == graph}
    assert got == want


def test_a_request_that_did_not_fail_has_no_blame():
    trace = Trace(agent_path=["boss", "billing", "boss"], coordinators=["boss"])
    result = Result("a", 0, {"final_response": "ok"}, trace, [Score("routing_accuracy", 1.0)])
    assert failed_checks(result) == []
    assert blame(result, {"expected_agents": ["billing"]}) is None


def test_which_checks_count_as_failed():
    scores = [
        Score("routing_accuracy", 0.5),
        Score("forbidden_agents", False),
        Score("routing_exact", True),
        Score("resolution_coverage", 0.9),
        Score("recovered", False),
        Score("routing_precision", 0.0),  # no check of its own
    ]
    result = Result("a", 0, None, Trace(), scores, error="boom")
    assert failed_checks(result) == [
        "routing_accuracy",
        "forbidden_agents",
        "resolution_coverage",
        "recovered",
        "error",
    ]
    assert failed_checks(result, {"resolution_coverage": ">= 0.5"})[2] == "recovered"
    assert failed_checks(result, {"resolution_coverage": "> 0.9"})[2] == "resolution_coverage"


def test_agents_unknown_blame_no_agent_and_say_why():
    trace = Trace(untraced="the target made no LangChain run")
    result = Result("a", 0, None, trace, [Score("resolution_coverage", 0.0)])
    assert blame(result, {}) == {
        "agent": None,
        "step": None,
        "kind": "unknown",
        "why": "failed resolution_coverage; untraced: the target made no LangChain run",
    }


def _calls(*agents: tuple[str, float, list[str] | None]) -> list[ModelCall]:
    return [ModelCall(a, "m", started_at=t, path=p or [a]) for a, t, p in agents]


def test_the_earliest_step_wins_and_a_tool_error_is_placed_by_time():
    # billing runs twice; its tool fails in its second step, after it was routed back to
    path = ["boss", "billing", "boss", "billing", "boss"]
    model_calls = _calls(*[(a, float(i), None) for i, a in enumerate(path)])
    tool = ToolCall("billing", "ledger", status="error", started_at=3.5)
    trace = Trace(agent_path=path, model_calls=model_calls, tool_calls=[tool])
    trace.coordinators = ["boss"]
    result = Result("a", 0, {}, trace, [Score("resolution_coverage", 0.0)])
    found = blame(result, {"expected_agents": ["billing"]})
    assert found == {
        "agent": "billing",
        "step": 3,
        "kind": "tool_error",
        "why": "tool ledger failed: gave up",
    }
    # the same tool made again with success afterwards: it did not give up
    again = ToolCall("billing", "ledger", status="ok", started_at=3.7)
    trace.tool_calls.append(again)
    assert blame(result, {"expected_agents": ["billing"]})["kind"] == "outcome"


def test_a_return_from_a_team_is_not_where_the_request_ended():
    path = ["top", "lead", "top"]
    calls = _calls(("top", 0.0, None), ("lead", 1.0, ["team", "lead"]), ("top", 2.0, None))
    trace = Trace(
        agent_path=path,
        model_calls=calls,
        handoffs=[Handoff("top", "lead"), Handoff("lead", "top", via="edge")],
        coordinators=["top"],
    )
    result = Result("a", 0, {}, trace, [Score("routing_accuracy", 0.5)])
    found = blame(result, {"expected_agents": ["team", "billing"]})
    assert (found["agent"], found["step"], found["kind"]) == ("lead", 1, "ended_early")
    # a flat supervisor that answers after its worker: the supervisor ended it
    flat = Trace(
        agent_path=["boss", "billing", "boss"],
        model_calls=_calls(("boss", 0.0, None), ("billing", 1.0, None), ("boss", 2.0, None)),
        coordinators=["boss"],
    )
    result = Result("a", 0, {}, flat, [Score("routing_accuracy", 0.5)])
    found = blame(result, {"expected_agents": ["billing", "account"]})
    assert (found["agent"], found["step"], found["kind"]) == ("boss", 2, "ended_early")


def test_a_forbidden_first_agent_is_blamed_on_itself():
    trace = Trace(agent_path=["refunds"], model_calls=_calls(("refunds", 0.0, None)))
    result = Result("a", 0, {}, trace, [Score("forbidden_agents", False)])
    found = blame(result, {"forbidden_agents": ["refunds"]})
    assert found == {
        "agent": "refunds",
        "step": 0,
        "kind": "misroute",
        "why": "the request started at forbidden agent refunds",
    }


def test_the_store_keeps_the_blame_with_the_result(tmp_path):
    from agenteval_cli.core.records import Example
    from agenteval_cli.store.db import Store

    found = {"agent": "boss", "step": 0, "kind": "misroute", "why": "routed to 'account'"}
    with Store(tmp_path / "a.db") as store:
        exp = store.create_experiment(prefix="p", target="t", target_path="m:g", spec={})
        failed = Result("e1", 0, {"final_response": "no"}, Trace(), blame=found)
        store.add_result(exp.id, Example("e1", {"q": 1}), failed)
        store.add_result(exp.id, Example("e2", {"q": 2}), Result("e2", 0, {}, Trace()))
        read = {s.result.example_id: s.result.blame for s in store.results(exp.id)}
    assert read == {"e1": found, "e2": None}


def test_the_views_show_where_failures_start(invoke, tmp_path):
    folder = tmp_path / "views"
    folder.mkdir()
    rows = [r for r in _rows("supervisor") if r["id"] in ("none", "misroute", "tool_error")]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "spec.yaml").write_text(
        f"dataset: data.jsonl\ntargets:\n  sup: {GRAPHS}:supervisor\n"
        "evaluators: [routing_accuracy, resolution_coverage]\n"
    )
    md, page, out = folder / "r.md", folder / "r.html", folder / "r.json"
    result = invoke(
        "run",
        *(folder / "spec.yaml", "--store", folder / "a.db", "--markdown", md, "--html", page),
        *("--json", out),
    )
    assert result.exit_code == 0, result.output
    # a --json file read back (compare, report) keeps each result's blame
    from agenteval_cli.results.sources import from_json_file

    [side] = from_json_file(out)
    assert {run.example_id: (run.blame or {}).get("kind") for run in side.runs} == {
        "none": None,
        "misroute": "misroute",
        "tool_error": "tool_error",
    }
    # under the run's table: agent x kind, with counts
    table = result.output[result.output.index("where failures start · sup") :]
    cells = [line.split() for line in table.splitlines()]
    header = cells.index(["agent", "misroute", "tool_error", "all"])
    assert cells[header + 2 : header + 4] == [["billing", "·", "1", "1"], ["boss", "1", "·", "1"]]
    text = md.read_text()
    assert "| agent | misroute | tool\\_error | all |" in text
    assert "| boss | 1 | 0 | 1 |" in text
    assert (
        "- `misroute` #0: misroute at step 0 (boss): routed to unexpected agent account (step 1)"
        in text
    )
    html = page.read_text()
    assert 'class="agent blamed" data-step="1" title="first wrong step: tool_error">billing' in html
    assert 'class="agent blamed" data-step="0" title="first wrong step: misroute">boss' in html
    assert html.count('class="agent blamed"') == 2 and "<h2>Where failures start</h2>" in html


def test_a_team_lead_is_no_misroute_when_the_request_raised_before_returning_to_it():
    # a model fault in billing: control never came back to lead, so the trace names no
    # coordinator; lead handed over to a member of its own team, so it is the team's lead
    calls = _calls(
        ("top", 0.0, None),
        ("lead", 1.0, ["money_team", "lead"]),
        ("billing", 2.0, ["money_team", "billing"]),
    )
    calls[-1].failed, calls[-1].injected = True, "model_error"
    trace = Trace(
        agent_path=["top", "lead", "billing"],
        model_calls=calls,
        handoffs=[Handoff("top", "lead"), Handoff("lead", "billing")],
    )
    result = Result("a", 0, None, trace, [Score("recovered", False)], error="ModelAPIError")
    found = blame(result, {"expected_agents": ["billing"]})
    assert (found["agent"], found["step"], found["kind"]) == ("billing", 2, "fault")
