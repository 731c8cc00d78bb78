"""LangGraph multi-agent graph forms, run through the CLI, every metric held against the
truth from the models' own log (see tests/forms).

Each test writes a spec and a dataset, runs ``agenteval run SPEC --json OUT`` and compares
every result (routing accuracy, agent path, handoff chain length, ping-pong, tokens, cost,
coverage, usage per agent, tool calls and their kinds) with what the models logged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from forms import datasets
from forms.branches import finishing_order
from forms.harness import BASE_EVALUATORS, Run, mismatches, report, run_spec, truths
from forms.model import Call
from forms.truth import Form, same_request, truth_of

from agenteval_cli.core.records import Trace

SUPERVISED = Form(coordinators=frozenset({"supervisor"}))
STRICT = {"name": "trajectory_match", "mode": "strict"}


def assert_exact(run: Run, *targets: str, form: Form, **kw: Any) -> None:
    problems = [p for t in targets for p in mismatches(run, t, form, **kw)]
    assert not problems, report(problems)


# -- 1. the README's supervisor, and the bundled demo's style -------------------------------------


def test_plain_supervisor(tmp_path):
    run = run_spec(
        tmp_path,
        targets={
            "react_supervisor": "forms.supervisors:react_supervisor",
            "demo_supervisor": "forms.supervisors:demo_supervisor",
        },
        rows=datasets.support(),
    )
    truth = truths(run, "react_supervisor", SUPERVISED)
    assert truth["Refund my last invoice and fix the crash in the app."].path == [
        "supervisor", "billing", "supervisor", "tech", "supervisor",
    ]  # fmt: skip
    assert_exact(run, "react_supervisor", "demo_supervisor", form=SUPERVISED)


# -- 2. a swarm -----------------------------------------------------------------------------------


def test_swarm(tmp_path):
    run = run_spec(tmp_path, targets={"swarm": "forms.peers:swarm"}, rows=datasets.peers())
    form = Form()
    truth = truths(run, "swarm", form)
    bounce = truth[datasets.BOUNCE_ROW["inputs"]["question"]]
    assert (bounce.path, bounce.ping_pong) == (["billing", "tech", "billing"], True)
    both = truth["Refund my last invoice and fix the crash in the app."]
    assert (both.path, both.ping_pong) == (["billing", "tech"], False)
    assert_exact(run, "swarm", form=form)


# -- 3. Command networks --------------------------------------------------------------------------


def test_command_network(tmp_path):
    run = run_spec(tmp_path, targets={"network": "forms.peers:network"}, rows=datasets.peers())
    form = Form()
    bounce = truths(run, "network", form)[datasets.BOUNCE_ROW["inputs"]["question"]]
    assert (bounce.path, bounce.ping_pong) == (["triage", "billing", "tech", "billing"], True)
    assert_exact(run, "network", form=form)


def test_command_network_with_declared_coordinator(tmp_path):
    """Specialists hand back to ``triage`` by ``Command``: declared a coordinator in the spec,
    its return trips are no bounce; billing asking tech and finishing after still is."""
    run = run_spec(
        tmp_path,
        targets={
            "coordinated_network": {
                "target": "forms.peers:coordinated_network",
                "coordinators": ["triage"],
            }
        },
        rows=datasets.peers(),
    )
    form = Form(coordinators=frozenset({"triage"}))
    truth = truths(run, "coordinated_network", form)
    assert truth["Refund my last invoice and fix the crash in the app."].path == [
        "triage", "billing", "triage", "tech", "triage",
    ]  # fmt: skip
    assert truth[datasets.BOUNCE_ROW["inputs"]["question"]].ping_pong is True
    assert_exact(run, "coordinated_network", form=form)


# -- 4. and 11. plain functions that run the graph themselves -------------------------------------


def test_function_targets(tmp_path):
    run = run_spec(
        tmp_path,
        targets={
            "sync_function": "forms.supervisors:sync_function",
            "async_function": "forms.supervisors:async_function",
        },
        rows=datasets.support(),
    )
    assert_exact(run, "sync_function", "async_function", form=SUPERVISED)


def test_function_running_the_graph_on_a_worker_thread(tmp_path):
    """``ThreadPoolExecutor().submit(graph.invoke, state).result()`` is traced as inline."""
    run = run_spec(
        tmp_path,
        targets={
            "sync_function": "forms.supervisors:sync_function",
            "threaded_function": "forms.supervisors:threaded_function",
        },
        rows=datasets.support(),
    )
    assert_exact(run, "sync_function", "threaded_function", form=SUPERVISED)
    inline = {r.example_id: r for r in run.rows["sync_function"]}
    for row in run.rows["threaded_function"]:
        same = inline[row.example_id]
        assert row.json["trace"]["agent_path"] == same.json["trace"]["agent_path"]
        assert row.scores == same.scores


# -- 5. a supervisor of supervisors ---------------------------------------------------------------

HIERARCHY = Form(
    coordinators=frozenset({"top_supervisor", "money_supervisor", "tech_supervisor"}),
    teams={
        "money_supervisor": ("money_team",),
        "billing": ("money_team",),
        "account": ("money_team",),
        "tech_supervisor": ("tech_team",),
        "tech": ("tech_team",),
        "network": ("tech_team",),
    },
)


@pytest.fixture(scope="module")
def hierarchy_run(tmp_path_factory) -> Run:
    return run_spec(
        tmp_path_factory.mktemp("hierarchy"),
        targets={
            "hierarchy": "forms.nested:hierarchy",
            "hierarchy_named": "forms.nested:hierarchy_named",
        },
        rows=datasets.hierarchy(),
    )


def test_supervisor_of_supervisors(hierarchy_run):
    truth = truths(hierarchy_run, "hierarchy", HIERARCHY)
    billing = truth["My invoice INV-42 needs a refund."]
    assert billing.path == [
        "top_supervisor", "money_supervisor", "billing", "money_supervisor", "top_supervisor",
    ]  # fmt: skip
    assert billing.invoked == {"top_supervisor", "money_team", "money_supervisor", "billing"}
    assert_exact(hierarchy_run, "hierarchy", "hierarchy_named", form=HIERARCHY)


def test_json_reports_usage_per_agent_and_team(hierarchy_run):
    """``--json`` carries each result's usage per agent path (as ``Trace.by_agent()`` gives
    it, or the model calls to derive it from), equal to the log's."""
    truth = truths(hierarchy_run, "hierarchy", HIERARCHY)
    problems = []
    for row in hierarchy_run.rows["hierarchy"]:
        trace = row.json["trace"]
        if "by_agent" in trace:
            usage = trace["by_agent"]
        elif "model_calls" in trace:
            usage = Trace.from_dict({"model_calls": trace["model_calls"]}).by_agent()
        else:
            problems.append(f"{row.example_id}: no by_agent or model_calls in {sorted(trace)}")
            continue
        t = truth[row.question]
        want = dict(t.per_team)
        want.update({" > ".join(HIERARCHY.path_of(a)): f for a, f in t.per_leaf.items()})
        got = {
            k: (usage[k]["model_calls"], usage[k]["input_tokens"], usage[k]["output_tokens"])
            if k in usage
            else "missing"
            for k in want
        }
        if got != want:
            problems.append(f"{row.example_id}: agenteval={got} truth={want}")
    assert not problems, report(problems)


# -- 6. a supervisor that calls its agents as tools -----------------------------------------------


def test_tool_calling_supervisor(tmp_path):
    run = run_spec(
        tmp_path,
        targets={"tool_supervisor": "forms.nested:tool_supervisor"},
        rows=datasets.support(),
    )
    form = Form(
        coordinators=frozenset({"supervisor"}),
        kinds={"ask_billing": "agent", "ask_tech": "agent"},
        paths_known=False,  # whether a tool-run agent sits under its caller is left open
    )
    assert_exact(run, "tool_supervisor", form=form)
    for row in run.rows["tool_supervisor"]:
        for call in row.json["trace"]["tool_calls"]:
            if call["name"].startswith("ask_"):
                assert call.get("target") == call["name"].removeprefix("ask_"), call


# -- 7. a named subgraph under another node name --------------------------------------------------


def test_subgraph_added_under_another_node_name(tmp_path):
    run = run_spec(tmp_path, targets={"renamed": "forms.nested:renamed"}, rows=datasets.support())
    form = Form(coordinators=frozenset({"router"}))
    for row in run.rows["renamed"]:
        if row.reference["expected_agents"]:
            assert row.scores["routing_accuracy"] == 1.0, row.json["comments"]
    assert_exact(run, "renamed", form=form)


# -- 8. handoff messages off ----------------------------------------------------------------------


def test_supervisor_without_handoff_messages(tmp_path):
    run = run_spec(
        tmp_path,
        targets={
            "no_back_messages": "forms.supervisors:no_back_messages",
            "no_handoff_messages": "forms.supervisors:no_handoff_messages",
        },
        rows=datasets.support(),
    )
    for target in ("no_back_messages", "no_handoff_messages"):
        pongs = {r.example_id: r.scores["ping_pong"] for r in run.rows[target]}
        assert not any(pongs.values()), (target, pongs)
    assert_exact(run, "no_back_messages", "no_handoff_messages", form=SUPERVISED)


# -- 9. custom handoff tools ----------------------------------------------------------------------


def test_custom_handoff_tools(tmp_path):
    run = run_spec(
        tmp_path,
        targets={
            "assign_supervisor": "forms.supervisors:assign_supervisor",
            "delegate_supervisor": "forms.supervisors:delegate_supervisor",
        },
        rows=datasets.support(tools=True),
        evaluators=[*BASE_EVALUATORS, STRICT, "unnecessary_steps"],
    )
    handoffs = {
        f"{p}{a}": "handoff" for p in ("assign_to_", "delegate_to_") for a in ("billing", "tech")
    }
    form = Form(coordinators=frozenset({"supervisor"}), kinds=handoffs)
    problems = []
    for target in ("assign_supervisor", "delegate_supervisor"):
        truth = truths(run, target, form)
        for row in run.rows[target]:
            made = [n for c in truth[row.question].calls for n, _ in c.tools if n not in handoffs]
            assert made == row.reference["expected_tools"]  # the graph did what the row expects
            for key, want in (("trajectory_match", True), ("unnecessary_steps", 0.0)):
                if row.scores.get(key) != want:
                    problems.append(
                        f"{target}/{row.example_id}: {key}: agenteval={row.scores.get(key)!r} "
                        f"truth={want!r} ({row.json['comments'].get(key)})"
                    )
        problems += mismatches(run, target, form)
    assert not problems, report(problems)


# -- 10. a Send fan-out, five runs ----------------------------------------------------------------

FANOUT = Form(coordinators=frozenset({"router"}), branches=("billing", "tech"))


def test_send_fan_out_is_exact_and_deterministic(tmp_path):
    rows = datasets.support()
    problems: list[str] = []
    seen: list[dict[str, Any]] = []
    for attempt in range(5):
        run = run_spec(
            tmp_path / f"run{attempt}",
            targets={"fanout": "forms.branches:fanout"},
            rows=rows,
            concurrency=4,
        )
        truth = truths(run, "fanout", FANOUT)
        for question in ("Refund my last invoice and fix the crash in the app.",
                         "The app has an error and I want a refund."):  # fmt: skip
            both = truth[question]
            assert (both.path, both.chain, both.ping_pong) == (
                ["router", "billing", "tech", "router"], 4, False,
            )  # fmt: skip
        # The branches finished in both orders, so the fixed order is agenteval's own.
        assert finishing_order(
            truth["Refund my last invoice and fix the crash in the app."].calls
        ) == ["tech", "billing"]
        assert finishing_order(truth["The app has an error and I want a refund."].calls) == [
            "billing",
            "tech",
        ]
        problems += [f"run {attempt}: {p}" for p in mismatches(run, "fanout", FANOUT)]
        seen.append(
            {r.example_id: (r.json["trace"]["agent_path"], r.scores) for r in run.rows["fanout"]}
        )
    for attempt, outcome in enumerate(seen[1:], start=1):
        for example_id, value in outcome.items():
            if value != seen[0][example_id]:
                first = seen[0][example_id]
                problems.append(
                    f"run {attempt} differs from run 0 on {example_id}: {value} vs {first}"
                )
    assert not problems, report(problems)


def test_supervisor_with_parallel_tool_calls(tmp_path):
    """``create_supervisor(..., parallel_tool_calls=True)`` whose model hands both parts off
    in one turn: whatever the graph then runs, the metrics are the log's."""
    run = run_spec(
        tmp_path,
        targets={"parallel_supervisor": "forms.supervisors:parallel_supervisor"},
        rows=datasets.support(),
    )
    truth = truths(run, "parallel_supervisor", SUPERVISED)
    first = truth["Refund my last invoice and fix the crash in the app."].calls[0]
    assert [name for name, _ in first.tools] == ["transfer_to_billing", "transfer_to_tech"]
    assert_exact(run, "parallel_supervisor", form=SUPERVISED)


# -- 12. a checkpointer and no config -------------------------------------------------------------


def test_checkpointer_without_config(tmp_path):
    run = run_spec(
        tmp_path,
        targets={"checkpointed": "forms.supervisors:checkpointed"},
        rows=datasets.support(),
        repetitions=2,
    )
    errors = {(r.example_id, r.repetition): r.json["error"] for r in run.rows["checkpointed"]}
    assert not any(errors.values()), errors
    leaked = [c for c in run.calls if c.humans != 1]
    assert not leaked, f"an earlier request's messages reached {len(leaked)} model calls"
    # Each request (a question's first human message) must have made the same calls.
    requests: dict[str, dict[Any, list[Call]]] = {}
    for call in run.calls:
        requests.setdefault(call.question, {}).setdefault(call.request, []).append(call)
    first_requests: list[Call] = []
    for question, by_request in requests.items():
        shapes = {
            tuple((c.agent, c.input_tokens, c.output_tokens) for c in calls)
            for calls in by_request.values()
        }
        assert len(by_request) == 2 and len(shapes) == 1, (question, by_request.keys(), shapes)
        first_requests += next(iter(by_request.values()))
    assert_exact(dataclasses.replace(run, calls=first_requests), "checkpointed", form=SUPERVISED)


# -- 13. a state without messages -----------------------------------------------------------------


def _specialists_answer(calls):
    return " ".join(c.text for c in calls if c.agent != "classifier") or calls[-1].text


def test_state_without_messages(tmp_path):
    run = run_spec(
        tmp_path,
        targets={
            "query_graph": {
                "target": "forms.shapes:query_graph",
                "input": {"query": "{question}"},
                "output": "answer",
            }
        },
        rows=datasets.support(),
    )
    form = Form(final_text=_specialists_answer)
    assert_exact(run, "query_graph", form=form)
    for row in run.rows["query_graph"]:
        calls = [c for c in run.calls if c.question == row.question]
        assert row.json["outputs"]["final_response"] == _specialists_answer(
            sorted(calls, key=lambda c: c.seq)
        )


# -- 14. a model without usage --------------------------------------------------------------------


def test_model_without_usage(tmp_path):
    run = run_spec(
        tmp_path, targets={"no_usage": "forms.supervisors:no_usage"}, rows=datasets.support()
    )
    truth = truths(run, "no_usage", SUPERVISED)
    assert truth["The mobile app shows a crash on start."].total_tokens is None
    assert truth["My invoice INV-42 needs a refund."].total_tokens is not None
    assert_exact(run, "no_usage", form=SUPERVISED)


# -- 15. OpenAI messages without tool-call ids ----------------------------------------------------


def test_openai_messages_without_ids(tmp_path):
    from forms.shapes import RETURNED
    from openevals.trajectory.match import create_trajectory_match_evaluator

    RETURNED.clear()
    run = run_spec(
        tmp_path,
        targets={"openai_trajectory": "forms.shapes:openai_trajectory"},
        rows=datasets.weather(),
        evaluators=[*BASE_EVALUATORS, STRICT],
    )
    assert_exact(run, "openai_trajectory", form=Form())
    match = create_trajectory_match_evaluator(
        trajectory_match_mode="strict", tool_args_match_mode="exact"
    )
    verdicts = {}
    for row in run.rows["openai_trajectory"]:
        truth = bool(
            match(outputs=RETURNED[row.question], reference_outputs=row.reference["trajectory"])[
                "score"
            ]
        )
        verdicts[row.example_id] = (row.scores.get("trajectory_match"), truth)
    assert verdicts["sf"][1] is True and verdicts["nyc-against-sf"][1] is False
    assert all(got == want for got, want in verdicts.values()), verdicts


# -- 16. output_mode="last_message" and the specialists' tools ------------------------------------


def test_last_message_mode_trajectory_from_the_trace(tmp_path):
    run = run_spec(
        tmp_path,
        targets={"last_message": "forms.supervisors:last_message"},
        rows=datasets.support(tools=True),
        evaluators=[*BASE_EVALUATORS, STRICT],
    )
    truth = truths(run, "last_message", SUPERVISED)
    problems = []
    for row in run.rows["last_message"]:
        made = [
            n
            for c in truth[row.question].calls
            for n, _ in c.tools
            if not n.startswith("transfer_")
        ]
        assert made == row.reference["expected_tools"]
        if row.scores.get("trajectory_match") is not True:
            problems.append(
                f"last_message/{row.example_id}: trajectory_match: "
                f"agenteval={row.scores.get('trajectory_match')!r} truth=True "
                f"({row.json['comments'].get('trajectory_match')})"
            )
    problems += mismatches(run, "last_message", SUPERVISED)
    assert not problems, report(problems)


def test_truth_of_a_fan_out_counts_each_branch():
    """The fan-out rule on a hand-made log: out to k branches and back counts 2k."""

    def call(seq: int, agent: str) -> Call:
        return Call(seq, "g", agent, "form-small", "q", None, 1, 1, 11, 3, "", ())

    calls = [call(0, "router"), call(1, "tech"), call(2, "billing"), call(3, "tech"),
             call(4, "router")]  # fmt: skip
    truth = truth_of(calls, FANOUT)
    assert (truth.path, truth.chain, truth.ping_pong) == (
        ["router", "billing", "tech", "router"], 4, False,
    )  # fmt: skip
    one = truth_of([call(0, "router"), call(1, "billing"), call(2, "router")], FANOUT)
    assert (one.path, one.chain) == (["router", "billing", "router"], 2)


# -- a request retried after a transient failure ---------------------------------------------------


def test_a_retried_request_spends_every_attempts_calls_and_routes_as_its_last(tmp_path):
    """The first attempt of each request runs the whole supervisor, then loses its answer to a
    connection reset; ``retries:`` calls it again. Tokens, cost and usage per agent count the
    calls of both attempts (each was made and billed); agents, handoffs and routing are the
    last attempt's, the one whose answer is the result."""
    from forms.supervisors import FAILED_ONCE

    FAILED_ONCE.clear()
    run = run_spec(
        tmp_path,
        targets={"flaky_function": "forms.supervisors:flaky_function"},
        rows=datasets.support(),
        retries={"max": 2, "on": ["connection"], "initial_delay_s": 0, "max_delay_s": 0},
    )
    by_question: dict[str, list[Call]] = {}
    for c in run.calls:
        by_question.setdefault(c.question, []).append(c)
    for row in run.rows["flaky_function"]:
        attempts = same_request(by_question[row.question])
        assert len(attempts) == 2 and row.json["attempts"] == 2, row.example_id
        last, spent = (
            truth_of(attempts[-1], SUPERVISED),
            truth_of(attempts[0] + attempts[1], SUPERVISED),
        )
        scores = row.scores
        assert scores["total_tokens"] == spent.total_tokens == 2 * last.total_tokens
        assert scores["input_tokens"] == spent.input_tokens
        assert scores["cost_usd"] == pytest.approx(spent.cost_usd, rel=1e-12)
        assert row.json["trace"]["agent_path"] == last.path
        assert scores["handoff_chain_length"] == last.chain
        assert scores["routing_accuracy"] == last.routing_accuracy(row.reference["expected_agents"])
        per_agent = {
            key: (u["model_calls"], u["input_tokens"], u["output_tokens"])
            for key, u in row.trace.by_agent().items()
        }
        assert per_agent == spent.per_leaf
        retried = [c for c in row.trace.model_calls if c.retried]
        assert len(retried) == len(attempts[0])
        assert [c["retried"] for c in row.json["trace"]["model_calls"]] == [True] * len(
            attempts[0]
        ) + [False] * len(attempts[1])
    spent_all = [
        truth_of(by_question[r.question], SUPERVISED).cost_usd for r in run.rows["flaky_function"]
    ]
    assert run.metrics("flaky_function")["cost_usd"] == pytest.approx(
        sum(spent_all) / len(spent_all), rel=1e-12
    )
