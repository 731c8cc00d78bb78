"""Requests that fail or pause part way, and tool calls that fail, on forms built as
langgraph-supervisor, langgraph-swarm, deepagents and LangChain 1.x build them (see
tests/forms/failing.py), run through the CLI and held against the models' own log.

A request that raised (the recursion limit, a tool's error nothing handled, a provider
error, the timeout) or stopped at ``interrupt()`` is measured from its trace up to where it
stopped; the trajectory evaluators count as work only the calls that succeeded.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from forms import datasets
from forms.failing import (
    LOST_ONCE,
    PROVIDER_DOWN,
    TECH_DOWN,
    answer_text,
    error_answered,
    parallel_fails,
    raw_router_fails,
)
from forms.harness import BASE_EVALUATORS, Run, mismatches, report, run_spec, truths
from forms.stopped import RUNAWAY
from forms.truth import Form, same_request, truth_of

SUPERVISED = Form(coordinators=frozenset({"supervisor"}))
LIMIT = 12
WORK = [
    *BASE_EVALUATORS,
    {"name": "trajectory_match", "mode": "strict"},
    "unnecessary_steps",
    "required_tools",
]
THREE_PARTS_STOPPED = {"billing": "x", "both": "x", "both-reversed": "x"}


def unanswered(status: str, ids: dict[str, str] = THREE_PARTS_STOPPED) -> dict[str, str]:
    return dict.fromkeys(ids, status)


def assert_exact(run: Run, target: str, form: Form, **kw: Any) -> None:
    problems = mismatches(run, target, form, **kw)
    assert not problems, report(problems)


def by_example(run: Run, target: str) -> dict[str, dict[str, Any]]:
    return {row.example_id: row.json for row in run.rows[target]}


def required(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their expected tools required too."""
    return [
        {**r, "outputs": {**r["outputs"], "required_tools": r["outputs"]["expected_tools"]}}
        for r in rows
    ]


def one_agent(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows for a single agent, ``support``: it is expected wherever some part is."""
    return [
        {
            **r,
            "outputs": {
                **r["outputs"],
                "expected_agents": ["support"] if r["outputs"]["expected_agents"] else [],
            },
        }
        for r in rows
    ]


def statuses(row: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["name"], c["kind"], c["status"]) for c in row["trace"]["tool_calls"]]


# -- the recursion limit ----------------------------------------------------------------------


def test_a_supervisor_sending_a_request_to_one_agent_until_the_limit_is_measured(tmp_path):
    """supervisor -> billing -> supervisor ... until ``recursion_limit``: the supervisor is a
    coordinator, so no ping-pong, but every handoff counts in the chain and every call in
    the cost."""
    runaway = datasets.row("runaway", f"Refund my invoice, {RUNAWAY}.", ["billing"])
    run = run_spec(
        tmp_path,
        targets={
            "looping_supervisor": {
                "target": "forms.failing:looping_supervisor",
                "config": {"recursion_limit": LIMIT},
            }
        },
        rows=[*datasets.support(), runaway],
        exit_code=3,
    )
    loop = truths(run, "looping_supervisor", SUPERVISED)[runaway["inputs"]["question"]]
    assert loop.path == ["supervisor", "billing"] * (LIMIT // 2)  # one agent per superstep
    assert (loop.chain, loop.ping_pong) == (LIMIT - 1, False)
    assert_exact(run, "looping_supervisor", SUPERVISED, unanswered={"runaway": "error"})
    errored = by_example(run, "looping_supervisor")["runaway"]
    assert errored["error"].startswith("GraphRecursionError: Recursion limit of 12")
    assert errored["scores"]["handoff_chain_length"] == LIMIT - 1


def test_a_swarm_of_react_agents_ping_ponging_into_the_limit_is_measured(tmp_path):
    row = datasets.row(
        "runaway", f"Refund my invoice and fix the crash, {RUNAWAY}.", ["billing", "tech"]
    )
    run = run_spec(
        tmp_path,
        targets={
            "react_runaway_swarm": {
                "target": "forms.failing:react_runaway_swarm",
                "config": {"recursion_limit": LIMIT},
            }
        },
        rows=[*datasets.peers(), row],
        exit_code=3,
    )
    loop = truths(run, "react_runaway_swarm", Form())[row["inputs"]["question"]]
    assert (loop.chain, loop.ping_pong) == (LIMIT - 1, True)
    assert_exact(run, "react_runaway_swarm", Form(), unanswered={"runaway": "error"})
    assert math.isclose(run.metrics("react_runaway_swarm")["ping_pong"], 2 / 6)


# -- a request that raised part way -------------------------------------------------------------


def test_a_tool_error_nothing_handles_ends_the_request_measured_up_to_it(tmp_path):
    """tech's tool raises and its ToolNode has no error handling: every request reaching it
    errors after the agents before it ran; the failed call is no work done."""
    run = run_spec(
        tmp_path,
        targets={"crashing_supervisor": "forms.failing:crashing_supervisor"},
        rows=required(datasets.support(tools=True)),
        evaluators=WORK,
        exit_code=3,
    )
    stopped = {"tech": "error", "both": "error", "both-reversed": "error"}
    assert_exact(run, "crashing_supervisor", SUPERVISED, unanswered=stopped)
    results = by_example(run, "crashing_supervisor")
    both = results["both"]
    assert both["error"] == f"RuntimeError: {TECH_DOWN}"
    assert both["trace"]["agent_path"] == ["supervisor", "billing", "supervisor", "tech"]
    assert statuses(both) == [
        ("transfer_to_billing", "handoff", "ok"),
        ("lookup_invoice", "tool", "ok"),
        ("transfer_back_to_supervisor", "handoff", "ok"),
        ("transfer_to_tech", "handoff", "ok"),
        ("run_diagnostics", "tool", "error"),
    ]
    # from the log: billing's lookup succeeded, tech's diagnostics never did
    assert both["scores"]["required_tools"] is False
    assert both["scores"]["trajectory_match"] is False
    assert both["scores"]["unnecessary_steps"] == 0
    assert results["billing"]["scores"]["required_tools"] is True


def test_a_model_raising_after_the_handoffs_reaches_its_agent_and_spends_nothing(tmp_path):
    """tech's provider fails on a "broken" request: the handoff to tech happened (tech was
    reached), its failed call adds no tokens."""
    broken = datasets.row(
        "broken", "Refund my invoice and fix the crash, it is broken.", ["billing", "tech"]
    )
    run = run_spec(
        tmp_path,
        targets={"provider_error_supervisor": "forms.failing:provider_error_supervisor"},
        rows=[*datasets.support(), broken],
        exit_code=3,
    )
    truth = truths(run, "provider_error_supervisor", SUPERVISED)[broken["inputs"]["question"]]
    assert [c.error for c in truth.calls][-1] == f"RuntimeError: {PROVIDER_DOWN}"
    assert truth.path == ["supervisor", "billing", "supervisor", "tech"]
    assert (truth.chain, truth.routing_accuracy(["billing", "tech"])) == (3, 1.0)
    assert_exact(run, "provider_error_supervisor", SUPERVISED, unanswered={"broken": "error"})
    row = by_example(run, "provider_error_supervisor")["broken"]
    assert [(m["agent"], m["failed"]) for m in row["trace"]["model_calls"]][-1] == ("tech", True)


def test_a_request_timing_out_while_a_specialist_runs_has_unknown_tokens(tmp_path):
    """The tech model is still running when ``timeout_s`` cuts the request off: tech was
    reached, the calls that finished are in the trace as the log has them, and the call in
    flight may be billed, so the request's tokens and cost are unknown, with that reason."""
    slow = datasets.row("slow", "Refund my invoice and fix the crash slowly.", ["billing", "tech"])
    run = run_spec(
        tmp_path,
        targets={"slow_supervisor": "forms.failing:slow_supervisor"},
        rows=[*datasets.support(), slow],
        exit_code=3,
        timeout_s=2,
    )
    # the other rows match the log exactly; the cut-off one is checked by hand below, as the
    # log has no entry for a call that never returned
    problems = mismatches(run, "slow_supervisor", SUPERVISED, unanswered={"slow": "error"})
    assert not [p for p in problems if not p.startswith("slow_supervisor/slow:")], report(problems)
    rows = {r.example_id: r for r in run.rows["slow_supervisor"]}
    finished = truths(run, "slow_supervisor", SUPERVISED)[slow["inputs"]["question"]]
    assert finished.path == ["supervisor", "billing", "supervisor"]  # what returned
    cut = rows["slow"]
    assert cut.json["status"] == "error" and cut.json["error"].startswith("TimeoutError")
    assert cut.json["trace"]["agent_path"] == [*finished.path, "tech"]
    assert cut.scores["handoff_chain_length"] == finished.chain + 1
    assert cut.scores["routing_accuracy"] == 1.0
    for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
        assert cut.scores[key] is None, key
        assert (
            "1 model call(s) of ['tech'] still running when the request stopped"
            in (cut.json["comments"][key])
        )
    calls = cut.trace.model_calls
    assert [(c.agent, c.input_tokens, c.output_tokens) for c in calls[:-1]] == [
        (c.agent, c.input_tokens, c.output_tokens) for c in finished.calls
    ]
    assert (calls[-1].agent, calls[-1].cut_off, calls[-1].input_tokens) == ("tech", True, None)
    others = {k: v for k, v in rows.items() if k != "slow"}
    # the cut-off request is left out of the means of the figures it does not know (their
    # counts say so), and is in the others
    experiment = run.document["experiments"][0]
    assert experiment["metric_counts"]["total_tokens"] == len(others)
    assert experiment["metric_counts"]["handoff_chain_length"] == len(rows)


# -- interrupt() inside a sub-agent ---------------------------------------------------------------


def run_interrupting(tmp_path: Any, target: str, **spec: Any) -> Run:
    return run_spec(
        tmp_path,
        targets={target: f"forms.failing:{target}"},
        rows=required(datasets.support(tools=True)),
        evaluators=WORK,
        **spec,
    )


def assert_paused_refund(run: Run, target: str, form: Form) -> None:
    """Every request with a billing part stops at billing's refund, which did no work."""
    assert_exact(run, target, form, unanswered=unanswered("interrupted"))
    results = by_example(run, target)
    for example in THREE_PARTS_STOPPED:
        row = results[example]
        assert row["status"] == "interrupted", example
        refunds = [c for c in row["trace"]["tool_calls"] if c["name"] == "lookup_invoice"]
        assert [c["status"] for c in refunds] == ["not_run"], example
        assert row["scores"]["required_tools"] is False, example
        assert row["scores"]["trajectory_match"] is False, example
        assert row["scores"]["unnecessary_steps"] == 0, example
    assert results["tech"]["status"] == "ok" and results["tech"]["scores"]["required_tools"]
    assert math.isclose(run.metrics(target)["interrupt_rate"], 3 / 5)
    assert run.document["experiments"][0]["statuses"] == {"ok": 2, "error": 0, "interrupted": 3}


def test_interrupt_inside_a_sub_agents_tool_pauses_the_request_and_the_tool_did_no_work(
    tmp_path,
):
    """billing's tool calls ``interrupt()`` (a supervisor with a checkpointer): the request is
    interrupted, and the paused tool call never answered, so it is no work done."""
    target = "tool_interrupt_supervisor"
    strict = run_interrupting(tmp_path / "strict", target, exit_code=3)
    assert "above max_interrupt_rate 0" in strict.output
    assert_paused_refund(strict, target, SUPERVISED)
    interrupt = json.loads(by_example(strict, target)["billing"]["interrupt"])
    assert interrupt == {"approve_refund": "INV-42"}
    allowed = run_interrupting(tmp_path / "allowed", target, max_interrupt_rate=0.6)
    assert_paused_refund(allowed, target, SUPERVISED)


def test_human_in_the_loop_middleware_in_a_supervisors_sub_agent(tmp_path):
    target = "hitl_sub_agent_supervisor"
    run = run_interrupting(tmp_path, target, max_interrupt_rate=0.6)
    assert_paused_refund(run, target, SUPERVISED)
    [request] = json.loads(by_example(run, target)["billing"]["interrupt"])["action_requests"]
    assert request["name"] == "lookup_invoice"


def test_a_deep_agents_sub_agent_with_interrupt_on(tmp_path):
    """``SubAgent(interrupt_on={"lookup_invoice": True})`` under ``create_deep_agent(...,
    checkpointer=...)``: the task stops inside the sub-agent."""
    target = "deep_interrupting"
    form = Form(coordinators=frozenset({target}), kinds={"task": "agent"}, paths_known=False)
    run = run_interrupting(tmp_path, target, max_interrupt_rate=0.6)
    assert_paused_refund(run, target, form)
    first = by_example(run, target)["billing"]["trace"]["tool_calls"][0]
    assert (first["name"], first["kind"], first["status"]) == ("task", "agent", "not_run")


# -- tool calls that fail, retried or not --------------------------------------------------------


def test_a_tool_answering_status_error_itself_then_a_second_try(tmp_path):
    """The tool returns ``ToolMessage(status="error")`` for a bad id; the model tries again
    with the right one: the failed call is no work and no repeated step."""
    rows = required(
        [
            datasets.row("billing", "My invoice INV-42 needs a refund.", ["billing"], tools=True),
            datasets.row("hours", datasets.HOURS, [], tools=True),
        ]
    )
    run = run_spec(
        tmp_path,
        targets={"second_try_agent": "forms.failing:second_try_agent"},
        rows=rows,
        evaluators=WORK,
    )
    assert_exact(run, "second_try_agent", Form(fails=error_answered))
    billing = by_example(run, "second_try_agent")["billing"]
    assert statuses(billing) == [
        ("lookup_invoice", "tool", "error"),
        ("lookup_invoice", "tool", "ok"),
    ]
    scores = billing["scores"]
    assert (scores["required_tools"], scores["trajectory_match"]) == (True, True)
    assert scores["unnecessary_steps"] == 0


def test_a_tool_strategy_answer_refused_by_its_schema_then_given_again(tmp_path):
    """``ToolStrategy(Answer)`` refuses the first ``Answer`` (a domain the schema does not
    allow) and the model answers again: both calls are the model's output, the refused one
    failed, and the answer is the accepted one."""
    rows = one_agent(datasets.support(tools=True))
    run = run_spec(
        tmp_path,
        targets={"revalidated_agent": "forms.failing:revalidated_agent"},
        rows=rows,
        evaluators=WORK,
    )
    form = Form(
        kinds={"Answer": "output"},
        final_text=answer_text,
        fails=lambda name, args: name == "Answer" and "sales" in args["domains"],
    )
    assert_exact(run, "revalidated_agent", form)
    for example, row in by_example(run, "revalidated_agent").items():
        answers = [s for s in statuses(row) if s[0] == "Answer"]
        assert answers == [("Answer", "output", "error"), ("Answer", "output", "ok")], example
        assert row["scores"]["trajectory_match"] is True, example
        assert row["scores"]["unnecessary_steps"] == 0, example


def test_parallel_tool_calls_one_of_which_fails(tmp_path):
    """Both tools in one turn under ``ToolNode(handle_tool_errors=True)``; the diagnostics
    fail: the required diagnostics were never used successfully."""
    rows = required(one_agent(datasets.support(tools=True)))
    run = run_spec(
        tmp_path,
        targets={"parallel_failing_agent": "forms.failing:parallel_failing_agent"},
        rows=rows,
        evaluators=WORK,
    )
    assert_exact(run, "parallel_failing_agent", Form(fails=parallel_fails))
    results = by_example(run, "parallel_failing_agent")
    assert statuses(results["both-reversed"]) == [
        ("run_diagnostics", "tool", "error"),
        ("lookup_invoice", "tool", "ok"),
    ]
    want = {  # from the log: the diagnostics fail every time
        "billing": (True, True),
        "tech": (False, False),
        "both": (False, False),
        "both-reversed": (False, False),
        "hours": (True, True),
    }
    got = {
        k: (r["scores"]["required_tools"], r["scores"]["trajectory_match"])
        for k, r in results.items()
    }
    assert got == want
    assert {r["scores"]["unnecessary_steps"] for r in results.values()} == {0}


# -- a graph target retried after a transient failure ---------------------------------------


def test_a_retried_graph_spends_every_attempts_calls_and_routes_as_its_last(tmp_path):
    """The graph's last node loses the connection the first time it sees a request; the
    spec's ``retries:`` runs the graph again. Tokens, cost and usage per agent count both
    attempts' calls; agents, handoffs and routing are the last attempt's."""
    LOST_ONCE.clear()
    run = run_spec(
        tmp_path,
        targets={"flaky_graph": "forms.failing:flaky_graph"},
        rows=datasets.support(),
        retries={"max": 2, "on": ["connection"], "initial_delay_s": 0, "max_delay_s": 0},
    )
    form = Form()
    by_question: dict[str, list[Any]] = {}
    for c in run.calls:
        by_question.setdefault(c.question, []).append(c)
    costs = []
    for row in run.rows["flaky_graph"]:
        attempts = same_request(by_question[row.question])
        assert len(attempts) == 2 == row.json["attempts"], row.example_id
        last, spent = truth_of(attempts[-1], form), truth_of(by_question[row.question], form)
        scores = row.scores
        assert scores["total_tokens"] == spent.total_tokens == 2 * last.total_tokens
        assert math.isclose(scores["cost_usd"], spent.cost_usd)
        assert row.json["trace"]["agent_path"] == last.path
        assert scores["handoff_chain_length"] == last.chain
        assert scores["routing_accuracy"] == last.routing_accuracy(row.reference["expected_agents"])
        per_agent = {
            k: (u["model_calls"], u["input_tokens"], u["output_tokens"])
            for k, u in row.trace.by_agent().items()
        }
        assert per_agent == spent.per_leaf
        assert Counter(c["retried"] for c in row.json["trace"]["model_calls"]) == Counter(
            {True: len(attempts[0]), False: len(attempts[1])}
        )
        costs.append(spent.cost_usd)
    assert math.isclose(run.metrics("flaky_graph")["cost_usd"], sum(costs) / len(costs))


# -- routers, networks and loops that fail or pause part way --------------------------------------


def test_a_raw_function_calling_router_over_workers_that_retry_a_failed_tool(tmp_path):
    """``with_structured_output(Route, method="function_calling", include_raw=True)``: the
    ``Route`` calls are the model's output; billing's first lookup fails and its retry
    succeeds, which is neither a wasted step nor a missing tool."""
    from forms.work import workers_answer

    run = run_spec(
        tmp_path,
        targets={"raw_router": "forms.failing:raw_router"},
        rows=required(datasets.support(tools=True)),
        evaluators=WORK,
    )
    form = Form(
        coordinators=frozenset({"supervisor"}),
        kinds={"Route": "output"},
        final_text=workers_answer,
        fails=raw_router_fails,
    )
    assert_exact(run, "raw_router", form)
    for example, row in by_example(run, "raw_router").items():
        scores = row["scores"]
        assert (scores["trajectory_match"], scores["required_tools"]) == (True, True), example
        assert scores["unnecessary_steps"] == 0, example
    assert [s for s in statuses(by_example(run, "raw_router")["billing"])] == [
        ("Route", "output", "ok"),
        ("lookup_invoice", "tool", "error"),
        ("lookup_invoice", "tool", "ok"),
        ("Route", "output", "ok"),
    ]


def test_a_network_handing_off_by_command_to_the_parent_then_a_provider_error(tmp_path):
    """The docs' network: react agents as nodes, each handoff tool returning
    ``Command(goto=peer, graph=Command.PARENT)``; tech's provider fails on a "broken"
    request after billing handed it over."""
    broken = datasets.row(
        "broken", "Refund my invoice and fix the crash, it is broken.", ["billing", "tech"]
    )
    run = run_spec(
        tmp_path,
        targets={"parent_command_network": "forms.failing:parent_command_network"},
        rows=[*datasets.peers(), broken],
        exit_code=3,
    )
    assert_exact(run, "parent_command_network", Form(), unanswered={"broken": "error"})
    results = by_example(run, "parent_command_network")
    assert [h["via"] for h in results["bounce"]["trace"]["handoffs"]] == ["tool", "tool"]
    assert results["bounce"]["scores"]["ping_pong"] is True
    assert results["broken"]["trace"]["agent_path"] == ["billing", "tech"]


def test_a_sub_agent_looping_on_its_tool_until_the_limit(tmp_path):
    """On a "forever" request billing calls its tool again and again; its react loop stops
    it short of its step limit ("need more steps") and the supervisor sends it back, until
    the graph's recursion limit. Every repeated lookup is a wasted step."""
    runaway = datasets.row("runaway", f"Refund my invoice, {RUNAWAY}.", ["billing"], tools=True)
    run = run_spec(
        tmp_path,
        targets={
            "tool_loop_supervisor": {
                "target": "forms.failing:tool_loop_supervisor",
                "config": {"recursion_limit": LIMIT},
            }
        },
        rows=required([*datasets.support(tools=True), runaway]),
        evaluators=WORK,
        exit_code=3,
    )
    assert_exact(run, "tool_loop_supervisor", SUPERVISED, unanswered={"runaway": "error"})
    loop = truths(run, "tool_loop_supervisor", SUPERVISED)[runaway["inputs"]["question"]]
    row = by_example(run, "tool_loop_supervisor")["runaway"]
    lookups = Counter(s for n, _, s in statuses(row) if n == "lookup_invoice")
    visits = loop.path.count("billing")
    # the last call of each visit was cut short by the react loop: asked for, never run
    assert lookups == {"ok": loop.tools["lookup_invoice"] - visits, "not_run": visits}
    assert row["scores"]["unnecessary_steps"] == lookups["ok"] - 1
    assert row["scores"]["required_tools"] is True
    assert row["scores"]["trajectory_match"] is False


def test_interrupt_in_a_node_of_a_named_subgraph(tmp_path):
    """The parent's ``billing`` node is a compiled subgraph (``compile(name="billing")``)
    whose ``confirm`` node calls ``interrupt()`` on an approval request."""
    from forms.stopped import APPROVAL

    rows = [
        datasets.row(
            "approval",
            f"Refund INV-42, {APPROVAL} needed.",
            ["triage", "billing"],
            domains=["billing"],
        ),
        datasets.row(
            "refund",
            "My invoice INV-42 needs a refund.",
            ["triage", "billing"],
            domains=["billing"],
        ),
        datasets.row("hours", datasets.HOURS, ["triage"], domains=[]),
    ]
    run = run_spec(
        tmp_path,
        targets={"subgraph_interrupt": "forms.failing:subgraph_interrupt"},
        rows=rows,
        max_interrupt_rate=0.5,
    )
    form = Form(teams={"work": ("billing",)})
    assert_exact(run, "subgraph_interrupt", form, unanswered={"approval": "interrupted"})
    stopped = by_example(run, "subgraph_interrupt")["approval"]
    assert json.loads(stopped["interrupt"]) == {"confirm": "refund INV-42"}
    assert math.isclose(run.metrics("subgraph_interrupt")["interrupt_rate"], 1 / 3)


def test_a_model_failing_over_to_its_fallback_after_the_handoff(tmp_path):
    """tech's model is ``primary.with_fallbacks([backup])``; on a "broken" request the
    primary raises and the backup answers each turn: the failed calls add no tokens and no
    handoffs (LangChain reports the attempts beside the fallback run, not inside it)."""
    broken = datasets.row(
        "broken", "Refund my invoice and fix the crash, it is broken.", ["billing", "tech"]
    )
    run = run_spec(
        tmp_path,
        targets={"fallback_supervisor": "forms.failing:fallback_supervisor"},
        rows=[*datasets.support(), broken],
    )
    assert_exact(run, "fallback_supervisor", SUPERVISED)
    truth = truths(run, "fallback_supervisor", SUPERVISED)[broken["inputs"]["question"]]
    assert [c.agent for c in truth.calls if c.error] == ["tech", "tech"]
    assert (truth.chain, truth.path) == (
        4,
        ["supervisor", "billing", "supervisor", "tech", "supervisor"],
    )
    row = by_example(run, "fallback_supervisor")["broken"]
    assert [h["target"] for h in row["trace"]["handoffs"]] == [
        "billing",
        "supervisor",
        "tech",
        "supervisor",
    ]


def test_parallel_handoffs_of_which_the_first_raises(tmp_path):
    """langgraph-supervisor with ``parallel_tool_calls=True`` asks for both specialists in
    one turn; the first handed to runs, and tech's tool raises with nothing handling it."""
    run = run_spec(
        tmp_path,
        targets={"parallel_crash_supervisor": "forms.failing:parallel_crash_supervisor"},
        rows=datasets.support(),
        exit_code=3,
    )
    stopped = {"tech": "error", "both": "error", "both-reversed": "error"}
    assert_exact(run, "parallel_crash_supervisor", SUPERVISED, unanswered=stopped)
