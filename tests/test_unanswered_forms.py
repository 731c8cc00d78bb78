"""Requests that end without an answer, run through the CLI, held against the models' log.

A swarm whose peers hand a request back and forth until LangGraph's recursion limit raises
``GraphRecursionError``: the result stays an error, but its trace up to the failure is
measured (chain length, ping-pong, tokens, cost, per agent) and counts in the experiment's
figures. A graph that stops at ``interrupt()`` (a node calling it, or LangChain 1.x's
``HumanInTheLoopMiddleware``) is ``interrupted``: never a success, counted in the interrupt
rate, and the run fails (exit 3) unless the spec's ``max_interrupt_rate`` allows it.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from forms import datasets
from forms.harness import Run, mismatches, report, run_spec, truths
from forms.model import Call
from forms.stopped import APPROVAL, RUNAWAY
from forms.truth import Form, truth_of
from typer.testing import CliRunner

from agenteval_cli.cli import app

RUNAWAY_ROW = datasets.row(
    "runaway", f"Refund my invoice and fix the crash, {RUNAWAY}.", ["billing", "tech"]
)
LIMIT = 12  # the spec's recursion_limit: supersteps before GraphRecursionError


def assert_exact(run: Run, target: str, form: Form, unanswered: dict[str, str]) -> None:
    problems = mismatches(run, target, form, unanswered=unanswered)
    assert not problems, report(problems)


def by_example(run: Run, target: str) -> dict[str, dict[str, Any]]:
    return {row.example_id: row.json for row in run.rows[target]}


def mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def test_a_swarm_that_ping_pongs_into_the_recursion_limit_is_measured_and_stays_an_error(
    tmp_path,
):
    rows = [*datasets.peers(), RUNAWAY_ROW]
    run = run_spec(
        tmp_path,
        targets={
            "runaway_swarm": {
                "target": "forms.stopped:runaway_swarm",
                "config": {"recursion_limit": LIMIT},
            }
        },
        rows=rows,
        exit_code=3,  # the error is still an error: above max_error_rate 0, the run fails
    )
    form = Form()
    truth = truths(run, "runaway_swarm", form)
    loop = truth[RUNAWAY_ROW["inputs"]["question"]]
    # the log: one model call per superstep, billing and tech in turn, 11 handoffs
    assert [c.agent for c in loop.calls] == ["billing", "tech"] * (LIMIT // 2)
    assert (loop.chain, loop.ping_pong) == (LIMIT - 1, True)
    assert_exact(run, "runaway_swarm", form, unanswered={"runaway": "error"})

    results = by_example(run, "runaway_swarm")
    errored = results["runaway"]
    assert errored["status"] == "error"
    assert errored["error"].startswith(f"GraphRecursionError: Recursion limit of {LIMIT} reached")
    assert errored["scores"]["handoff_chain_length"] == loop.chain
    assert errored["scores"]["ping_pong"] is True
    assert errored["scores"]["total_tokens"] == loop.total_tokens
    assert math.isclose(errored["scores"]["cost_usd"], loop.cost_usd)
    assert errored["scores"]["resolution_coverage"] is None
    assert errored["comments"]["resolution_coverage"].startswith(
        "no answer: the target raised (GraphRecursionError: Recursion limit of 12"
    )

    # the experiment's figures, derived by hand from the log: every row in the trace's,
    # the answered ones in coverage's, the error beside them
    per_row = [truth[r["inputs"]["question"]] for r in rows]
    metrics = run.metrics("runaway_swarm")
    assert math.isclose(metrics["ping_pong"], mean([float(t.ping_pong) for t in per_row]))
    assert math.isclose(metrics["ping_pong"], 2 / 6)  # the bounce row and the runaway loop
    assert math.isclose(metrics["cost_usd"], mean([t.cost_usd for t in per_row]))
    assert math.isclose(metrics["handoff_chain_length"], mean([t.chain for t in per_row]))
    answered = [
        t.coverage(r["outputs"]["must_mention"])
        for t, r in zip(per_row[:-1], rows[:-1], strict=True)
    ]
    assert math.isclose(metrics["resolution_coverage"], mean(answered))
    assert math.isclose(metrics["error_rate"], 1 / 6)
    experiment = run.document["experiments"][0]
    assert experiment["metric_counts"]["ping_pong"] == 6
    assert experiment["metric_counts"]["resolution_coverage"] == 5
    assert experiment["statuses"] == {"ok": 5, "error": 1, "interrupted": 0}

    # per agent (the --json agents section, as --by-agent): every call made, the loop's too
    assert_agents_match_the_log(experiment["agents"], run.calls)
    assert (
        "trace figures (agents, handoffs, tokens, cost) count every request, the 1 errored too"
        in run.output
    )
    assert "errors: runaway_swarm: 1 of 6 call(s) failed" in run.output


def assert_agents_match_the_log(agents: dict[str, Any], calls: list[Call]) -> None:
    """Each agent's model calls and tokens in the export are the sums of its logged calls."""
    logged: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for c in calls:
        logged[c.agent][0] += 1
        logged[c.agent][1] += c.input_tokens or 0
        logged[c.agent][2] += c.output_tokens or 0
    got = {k: [v["model_calls"], v["input_tokens"], v["output_tokens"]] for k, v in agents.items()}
    assert got == dict(logged)


def asking_rows() -> list[dict[str, Any]]:
    return [
        datasets.row(
            "approval", f"Refund INV-42, {APPROVAL} needed.", ["triage"], domains=["billing"]
        ),
        datasets.row(
            "refund", "My invoice INV-42 needs a refund.", ["triage"], domains=["billing"]
        ),
        datasets.row("hours", datasets.HOURS, ["triage"], domains=[]),
    ]


def assert_interrupted_run(run: Run, target: str, form: Form) -> dict[str, Any]:
    """The approval row is interrupted, measured from its trace, and in the interrupt rate
    of the table and the --json document; the other rows answered."""
    assert_exact(run, target, form, unanswered={"approval": "interrupted"})
    stopped = by_example(run, target)["approval"]
    assert stopped["status"] == "interrupted" and stopped["error"] is None
    assert stopped["scores"]["resolution_coverage"] is None
    assert stopped["comments"]["resolution_coverage"].startswith(
        "no answer: the graph stopped at interrupt() waiting for input ("
    )
    metrics = run.metrics(target)
    assert math.isclose(metrics["interrupt_rate"], 1 / 3)
    assert metrics["error_rate"] == 0.0
    assert run.document["experiments"][0]["statuses"] == {"ok": 2, "error": 0, "interrupted": 1}
    table_row = next(line for line in run.output.splitlines() if "interrupt rate" in line)
    assert "33.3%" in table_row
    assert "the 1 stopped at interrupt() too" in run.output
    return stopped


def assert_reports_show_the_interrupt(folder: Path, target: str, other: Path) -> None:
    """compare, the Markdown and the HTML report give the interrupt rate a row and say what
    the figures include; JUnit fails the interrupted example."""
    db = folder / "agenteval.db"
    reports = ["-o", str(folder / "r.html"), "--markdown", str(folder / "r.md")]
    reports += ["--junit", str(folder / "r.xml")]
    out = CliRunner().invoke(app, ["report", target, "--store", str(db), *reports])
    assert out.exit_code == 0, out.output
    markdown = (folder / "r.md").read_text()
    assert "| interrupt rate | 33.3% |" in markdown
    assert f"- **Interrupted** `{target}`: 1 of 3 request(s) stopped at `interrupt()`" in markdown
    assert "count every request, the 1 stopped at interrupt() too" in markdown
    html = (folder / "r.html").read_text()
    assert "interrupt rate" in html
    assert "count every request, the 1 stopped at interrupt() too" in html
    assert "interrupted: stopped at interrupt() waiting for" in html  # the example's own view
    junit = (folder / "r.xml").read_text()
    assert f'classname="{target}.approval"' in junit
    assert "interrupted: stopped at interrupt() waiting for" in junit
    # the stored experiment beside another run's --json export: both read statuses back
    compared = CliRunner().invoke(
        app, ["compare", target, str(other / "out.json"), "--store", str(db)]
    )
    assert compared.exit_code == 0, compared.output
    assert "interrupt rate" in compared.output
    assert (
        compared.output.count(
            f"stopped at interrupt(): {target}: 1 of 3 request(s) waiting for input"
        )
        == 2
    )


def test_a_node_calling_interrupt_is_interrupted_and_fails_the_run_unless_allowed(tmp_path):
    form = Form()
    target = {"asking_graph": "forms.stopped:asking_graph"}
    run = run_spec(tmp_path / "strict", targets=target, rows=asking_rows(), exit_code=3)
    stopped = assert_interrupted_run(run, "asking_graph", form)
    assert json.loads(stopped["interrupt"]) == {
        "options": ["yes", "no"],
        "question": "Refund INV-42?",
    }
    assert "above max_interrupt_rate 0" in run.output
    allowed = run_spec(
        tmp_path / "allowed", targets=target, rows=asking_rows(), max_interrupt_rate=0.5
    )
    assert_interrupted_run(allowed, "asking_graph", form)
    assert "run failed" not in allowed.output
    assert_reports_show_the_interrupt(tmp_path / "strict", "asking_graph", tmp_path / "allowed")


def test_human_in_the_loop_middleware_is_interrupted_and_fails_the_run_unless_allowed(tmp_path):
    form = Form()
    target = {"approval_agent": "forms.stopped:approval_agent"}
    rows = [
        {**r, "outputs": {**r["outputs"], "expected_agents": ["billing"]}} for r in asking_rows()
    ]
    run = run_spec(tmp_path / "strict", targets=target, rows=rows, exit_code=3)
    stopped = assert_interrupted_run(run, "approval_agent", form)
    [request] = json.loads(stopped["interrupt"])["action_requests"]
    assert (request["name"], request["args"]) == ("lookup_invoice", {"invoice_id": "INV-42"})
    [call] = [c for c in run.calls if c.question == rows[0]["inputs"]["question"]]
    assert truth_of([call], form).tools == {"lookup_invoice": 1}  # asked for, never run
    allowed = run_spec(tmp_path / "allowed", targets=target, rows=rows, max_interrupt_rate=0.34)
    assert_interrupted_run(allowed, "approval_agent", form)
    assert "run failed" not in allowed.output
