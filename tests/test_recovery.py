"""Faults injected from the outside (a target's ``faults:``) and the recovery metrics.

Each graph is someone else's (create_agent with retry middleware, langgraph-supervisor,
langgraph-swarm, the prebuilt ReAct agent, the demo), built per call with scripted models
(:mod:`recovery_graphs`), and ChatOpenAI against a local OpenAI-compatible server; the
figures are derived by hand from the scripts and the scripted models' (and the server's)
own call logs, which a failed call never reaches.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.exceptions import ModelRateLimitError
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from openai_server import openai_server

from agenteval_cli.core.faults import injected_fault
from agenteval_cli.core.retry import RetryPolicy
from agenteval_cli.spec.faults import FaultSpec
from agenteval_cli.trace.faults import FaultInjector, fault_error
from agenteval_cli.trace.recorder import capture

GRAPHS = Path(__file__).resolve().parent / "recovery_graphs.py"
QUESTION = {
    "id": "invoice",
    "inputs": {"question": "Can I see my latest invoice?"},
    "outputs": {"must_mention": ["INV-1042"]},
}


def run_spec(
    invoke: Any,
    folder: Path,
    target: str,
    faults: str,
    *,
    rows: list[dict[str, Any]] | None = None,
    extra: str = "",
    hits: bool = True,
    evaluators: str = "[recovery]",
) -> list[dict[str, Any]]:
    """Run ``recovery_graphs:target`` with ``faults`` (YAML flow list) on ``rows``; the
    faulted target's results from ``--json``. ``hits``: some fault failed a call, so the
    run has no note saying none did."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows or [QUESTION]))
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  faulted: {{target: {GRAPHS}:{target}, faults: {faults}}}\n"
        f"evaluators: {evaluators}\n"
        "max_error_rate: 1\n" + extra
    )
    out = folder / "out.json"
    result = invoke("run", spec, "--store", folder / "a.db", "--json", out)
    assert result.exit_code == 0, result.output
    assert ("its faults failed none" not in result.text) is hits  # the note after the run
    return json.loads(out.read_text())["experiments"][0]["results"]


def injected(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind of call, its name, the fault) of every call a fault failed."""
    trace = result["trace"]
    return [("tool", t["name"], t["injected"]) for t in trace["tool_calls"] if t["injected"]] + [
        ("model", m["model"], m["injected"]) for m in trace["model_calls"] if m["injected"]
    ]


def test_a_transient_rate_limit_retried_by_model_retry_middleware_recovers(invoke, tmp_path):
    [result] = run_spec(
        invoke, tmp_path, "model_retry", "[{agent: billing, fail: rate_limit, calls: [1]}]"
    )
    # The middleware sent the first request again: both scripted replies were handed out,
    # the failed call never reached the model.
    assert result["outputs"]["calls"] == {"gpt-4o": 2}
    assert result["status"] == "ok" and result["attempts"] == 1
    models = result["trace"]["model_calls"]
    assert [(m["injected"], m["failed"]) for m in models] == [
        ("rate_limit", True),
        (None, False),
        (None, False),
    ]
    assert injected(result) == [("model", "gpt-4o", "rate_limit")]
    # after the fault, both replies: (100 + 10) + (150 + 20)
    assert result["scores"] == {
        "recovered": True,
        "graceful": True,
        "fault_retries": 1.0,
        "fault_handoffs": 0.0,
        "tokens_after_fault": 280.0,
    }


def test_a_tool_down_through_tool_retry_middleware_is_graceful_not_recovered(invoke, tmp_path):
    [result] = run_spec(invoke, tmp_path, "tool_retry", "[{tool: lookup_invoice, fail: error}]")
    assert result["outputs"]["calls"] == {"gpt-4o": 2}  # the tool call, then the apology
    tools = result["trace"]["tool_calls"]
    # the first call and the middleware's two retries, each failed
    assert [(t["name"], t["status"], t["injected"]) for t in tools] == [
        ("lookup_invoice", "error", "error")
    ] * 3
    assert tools[0]["output"] == "ToolException: lookup_invoice failed (injected fault)"
    assert result["scores"] == {
        "recovered": False,
        "graceful": True,
        "fault_retries": 2.0,
        "fault_handoffs": 0.0,
        "tokens_after_fault": None,  # the script reports no usage: unknown, not zero
    }
    assert "missing ['INV-1042']" in result["comments"]["recovered"]


def test_a_supervisor_routes_around_a_failed_tool(invoke, tmp_path):
    row = {**QUESTION, "outputs": {"must_mention": ["Priya Shah"]}}
    [result] = run_spec(
        invoke, tmp_path, "supervisor", "[{tool: lookup_invoice, fail: error}]", rows=[row]
    )
    assert result["outputs"]["calls"] == {"boss-model": 3, "billing-model": 2, "account-model": 2}
    assert injected(result) == [("tool", "lookup_invoice", "error")]
    [failed] = [t for t in result["trace"]["tool_calls"] if t["injected"]]
    assert failed["agent"] == "billing"
    # after the fault: the boss's transfer_to_account (billing's return to the boss is the
    # graph's own edge, which no tool ran)
    # tokens of the calls after it: billing's second reply (55), the boss's second (22),
    # both of account's (66 + 77) and the boss's answer (33)
    assert result["scores"] == {
        "recovered": True,
        "graceful": True,
        "fault_retries": 0.0,
        "fault_handoffs": 1.0,
        "tokens_after_fault": 253.0,
    }


def test_a_model_error_in_a_swarm_agent_without_retry_is_not_graceful(invoke, tmp_path):
    # the run's own retries would retry a 500: an injected one is the graph's to handle
    [result] = run_spec(
        invoke,
        tmp_path,
        "swarm",
        "[{agent: account, fail: model_error}]",
        extra="retries: {max: 2, on: [server], initial_delay_s: 0}\n",
    )
    assert result["status"] == "error" and result["attempts"] == 1
    assert result["error"] == (
        "ModelAPIError: Error code: 500 - the server had an error serving account-model "
        "(injected fault)"
    )
    assert injected(result) == [("model", "account-model", "model_error")]
    assert result["trace"]["agent_path"] == ["desk", "account"]
    assert result["scores"] == {
        "recovered": False,
        "graceful": False,
        "fault_retries": 0.0,
        "fault_handoffs": 0.0,
        "tokens_after_fault": 0.0,  # nothing ran after it
    }
    assert result["comments"]["graceful"].startswith("it raised (ModelAPIError: ")


def test_an_agent_looping_on_a_failed_tool_into_the_recursion_limit(invoke, tmp_path):
    [result] = run_spec(invoke, tmp_path, "looping_agent", "[{tool: '*', fail: error}]")
    assert result["status"] == "error"
    assert "GraphRecursionError" in result["error"]
    # limit 6: model, tools, model, tools, model, tools; the 7th step is refused
    assert [m["injected"] for m in result["trace"]["model_calls"]] == [None] * 3
    assert injected(result) == [("tool", "lookup_invoice", "error")] * 3
    assert result["scores"]["graceful"] is False
    assert result["comments"]["graceful"].startswith("it looped into the recursion limit")
    assert result["scores"]["fault_retries"] == 2.0


def test_the_prebuilt_agent_answers_when_its_steps_run_out(invoke, tmp_path):
    # create_react_agent stops itself one step before the limit, with an apology: graceful
    [result] = run_spec(invoke, tmp_path, "looping", "[{tool: lookup_invoice, fail: error}]")
    assert result["status"] == "ok"
    assert result["outputs"]["final_response"] == "Sorry, need more steps to process this request."
    assert result["outputs"]["calls"] == {"gpt-4o": 3}
    assert result["scores"]["graceful"] is True and result["scores"]["recovered"] is False


def test_a_timeout_waits_after_s_then_raises_timeout_error(invoke, tmp_path):
    [result] = run_spec(
        invoke, tmp_path, "one_tool_call", "[{tool: lookup_invoice, fail: timeout, after_s: 0.2}]"
    )
    [tool] = result["trace"]["tool_calls"]
    assert tool["injected"] == "timeout"
    assert tool["output"] == "TimeoutError: lookup_invoice timed out after 0.2 s (injected fault)"
    assert tool["ended_at"] - tool["started_at"] >= 0.2


def test_requests_no_fault_reached_are_null_with_the_reason(invoke, tmp_path):
    [result] = run_spec(
        invoke, tmp_path, "one_tool_call", "[{tool: refund, fail: error}]", hits=False
    )
    assert injected(result) == []
    assert result["scores"] == dict.fromkeys(
        ["recovered", "graceful", "fault_retries", "fault_handoffs", "tokens_after_fault"]
    )
    assert result["comments"]["recovered"] == "no fault injected into this request"


def _draw(*parts: Any) -> float:
    """The hash the spec's rate is drawn from, written out again."""
    digest = hashlib.sha256(json.dumps(list(parts), sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def test_a_rate_fails_the_calls_its_seed_draws_whatever_the_concurrency(invoke, tmp_path):
    rows = [{**QUESTION, "id": f"r{i}"} for i in range(8)]
    faults = "[{tool: lookup_invoice, fail: error, rate: 0.5, seed: 7}]"
    runs = [
        run_spec(
            invoke,
            tmp_path / str(c),
            "one_tool_call",
            faults,
            rows=rows,
            extra=f"concurrency: {c}\nrepetitions: 2\n",
        )
        for c in (1, 4)
    ]
    # each request makes one call of the tool: its index is 1; the fault is the first (0)
    expected = {
        (f"r{i}", rep)
        for i in range(8)
        for rep in range(2)
        if _draw(7, f"r{i}", rep, 0, "lookup_invoice", 1) < 0.5
    }
    for results in runs:
        failed = {(r["example_id"], r["repetition"]) for r in results if injected(r)}
        assert failed == expected
    assert 0 < len(expected) < 16  # the rate chose some calls, not all or none


def test_the_demo_supervisor_with_its_billing_tools_down_raises(invoke, tmp_path):
    row = {
        "id": "invoice",
        "inputs": {"question": "Please send me a copy of my latest invoice."},
        "outputs": {"must_mention": ["invoice"]},
    }
    folder = tmp_path
    (folder / "data.jsonl").write_text(json.dumps(row) + "\n")
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        "  down: {target: agenteval_cli.demo.supervisor:graph,"
        " faults: [{agent: billing, tool: '*', fail: error}]}\n"
        "evaluators: [recovery]\nmax_error_rate: 1\n"
    )
    out = folder / "out.json"
    assert invoke("run", spec, "--store", folder / "a.db", "--json", out).exit_code == 0
    [result] = json.loads(out.read_text())["experiments"][0]["results"]
    # the demo's create_agent specialists leave tool errors to ToolNode's default, which
    # raises anything but a bad tool call: the request ends in the injected error
    assert result["error"] == "ToolException: lookup_invoice failed (injected fault)"
    assert injected(result) == [("tool", "lookup_invoice", "error")]
    assert result["trace"]["agent_path"] == ["supervisor", "billing"]
    assert result["scores"]["graceful"] is False and result["scores"]["recovered"] is False


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("{tool: x, fail: eror}", "unknown fault 'eror' (did you mean 'error'?)"),
        ("{tool: x, fail: model_error}", "a tool cannot fail with 'model_error'"),
        ("{agent: a, fail: error}", "a model call cannot fail with 'error'"),
        ("{fail: error}", "a fault names no call to fail"),
        ("{tool: x, model: m, fail: error}", "'tool' and 'model' both given"),
        ("{tool: x, fail: error, after_s: 2}", "'after_s' is the wait of a timeout"),
        ("{tool: x, fail: error, rate: 2}", "expected a number from 0 to 1, got 2"),
        ("{tool: x, fail: error, calls: []}", "'calls' lists no call, so the fault fails none"),
    ],
)
def test_a_bad_fault_is_one_line_naming_its_line(invoke, tmp_path, fault, message):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: data.jsonl\ntargets:\n  t:\n    target: x.py:f\n    faults:\n      - {fault}\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "spec.yaml:6:" in result.text and message in result.text


def test_faults_on_a_served_graph_are_refused(invoke, tmp_path):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\ntargets:\n  t:\n    remote: {url: 'http://127.0.0.1:1', graph: g}\n"
        "    faults: [{tool: x, fail: error}]\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == 2
    assert (
        "spec.yaml:5:" in result.text
        and "faults cannot be injected into a served graph" in result.text
    )


def test_injected_errors_look_like_the_providers_own():
    # langchain_openai is loaded (imported above): its error classes are used
    error = fault_error("rate_limit", "gpt-4o", provider="openai", model=True)
    assert isinstance(error, openai.RateLimitError) and isinstance(error, ModelRateLimitError)
    assert error.status_code == 429 and injected_fault(error) == "rate_limit"
    plain = fault_error("rate_limit", "mine", provider="scripted", model=True)
    assert isinstance(plain, ModelRateLimitError) and plain.status_code == 429  # type: ignore[attr-defined]
    # what a real 429 is, the run retries; an injected one, never
    real = fault_error("rate_limit", "x", model=True)
    delattr(real, "agenteval_fault")
    assert RetryPolicy(max=2).retries(real) and not RetryPolicy(max=2).retries(error)
    wrapped = RuntimeError("graph failed")
    wrapped.__cause__ = error
    assert injected_fault(wrapped) == "rate_limit"


def test_a_faulted_target_never_shares_a_cached_answer_with_its_fault_free_twin(invoke, tmp_path):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  clean: {GRAPHS}:one_tool_call\n"
        f"  faulted: {{target: {GRAPHS}:one_tool_call,"
        " faults: [{tool: lookup_invoice, fail: error}]}\n"
        "evaluators: [recovery]\ncache: true\nmax_error_rate: 1\n"
    )
    for attempt in ("first", "cached"):
        out = tmp_path / f"{attempt}.json"
        assert invoke("run", spec, "--store", tmp_path / "a.db", "--json", out).exit_code == 0
        results = {e["target"]: e["results"][0] for e in json.loads(out.read_text())["experiments"]}
        assert results["clean"]["cached"] is results["faulted"]["cached"] is (attempt == "cached")
        assert injected(results["clean"]) == []
        assert injected(results["faulted"]) == [("tool", "lookup_invoice", "error")]
        assert results["faulted"]["outputs"]["final_response"] == "Your latest invoice is INV-1042."


def test_faults_that_fail_no_call_are_named_in_a_note(invoke, tmp_path):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        "  typo:\n"
        f"    target: {GRAPHS}:one_tool_call\n"
        "    faults: [{tool: lookup_invoce, fail: error}]\n"
        "evaluators: [recovery]\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == 0
    assert (
        "spec.yaml:5: target 'typo': its faults failed none of the 1 request(s) run: no call "
        "matched them, or their calls:/rate: chose none"
    ) in result.text


def test_a_conversation_counts_the_calls_of_all_its_turns(invoke, tmp_path):
    row = {
        "id": "two-invoices",
        "inputs": {"turns": ["Can you send me invoice INV-2041?", "And invoice INV-2042?"]},
        "outputs": {"turns": [{"must_mention": ["INV-2041"]}, {"must_mention": ["INV-2042"]}]},
    }
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        "  sup: {target: agenteval_cli.demo.supervisor:conversational_graph,"
        " faults: [{tool: lookup_invoice, fail: error, calls: [2]}]}\n"
        "evaluators: [recovery]\nmax_error_rate: 1\n"
    )
    out = tmp_path / "out.json"
    assert invoke("run", spec, "--store", tmp_path / "a.db", "--json", out).exit_code == 0
    [result] = json.loads(out.read_text())["experiments"][0]["results"]
    first, second = result["turns"]
    # the conversation's second lookup_invoice is the second turn's first
    assert [
        t["injected"] for t in first["trace"]["tool_calls"] if t["name"] == "lookup_invoice"
    ] == [None]
    assert [
        t["injected"] for t in second["trace"]["tool_calls"] if t["name"] == "lookup_invoice"
    ] == ["error"]
    assert second["error"] == "ToolException: lookup_invoice failed (injected fault)"
    assert first["scores"]["recovered"] is None and second["scores"]["graceful"] is False


@pytest.mark.parametrize(("graph", "code"), [("model_retry", 0), ("tool_retry", 1)])
def test_the_gate_reads_recovered_as_any_metric(invoke, tmp_path, graph, code):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    faults = {
        "model_retry": "[{agent: billing, fail: rate_limit, calls: [1]}]",
        "tool_retry": "[{tool: lookup_invoice, fail: error}]",
    }[graph]
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  faulted: {{target: {GRAPHS}:{graph}, faults: {faults}}}\n"
        "evaluators: [recovery]\n"
        "thresholds: {faulted: {recovered: '>= 0.9'}}\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == code, result.output
    if code:  # the gate's exit code
        assert "faulted: recovered under faults = 0.0%, threshold >= 0.9" in result.text


def test_an_unnamed_agent_is_the_targets_own(invoke, tmp_path):
    # the target is called "faulted" (run_spec): the agent its graph does not name
    [result] = run_spec(
        invoke, tmp_path, "unnamed_agent", "[{agent: faulted, fail: timeout, calls: [2]}]"
    )
    # the second model call (after the tool) timed out; the middleware sent it again
    assert [m["injected"] for m in result["trace"]["model_calls"]] == [None, "timeout", None]
    assert result["outputs"]["calls"] == {"gpt-4o": 2}
    assert result["scores"]["recovered"] is True and result["scores"]["fault_retries"] == 1.0


def test_fault_cost_pairs_each_faulted_request_with_its_fault_free_twin(invoke, tmp_path):
    (tmp_path / "data.jsonl").write_text(json.dumps(QUESTION) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets:\n"
        f"  swarm: {GRAPHS}:swarm\n"
        f"  swarm_account_down: {{target: {GRAPHS}:swarm,"
        " faults: [{agent: account, fail: model_error}]}\n"
        "evaluators: [recovery, token_cost, fault_cost]\n"
        "repetitions: 2\nmax_error_rate: 1\n"
        "pricing:\n"
        "  desk-model: {input: 1.0, output: 2.0}\n"
        "  account-model: {input: 1.0, output: 2.0}\n"
    )
    out = tmp_path / "out.json"
    assert invoke("run", spec, "--store", tmp_path / "a.db", "--json", out).exit_code == 0
    experiments = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}
    # fault-free: desk 10 + 1, account 20 + 2 and 30 + 3 = 66 tokens, $72 per 1M;
    # faulted: the desk's 11 tokens ($12 per 1M), then account's first call fails
    faulted = experiments["swarm_account_down"]["dataset_results"]
    assert faulted["fault_cost_tokens"]["score"] == -55.0
    assert faulted["fault_cost_usd"]["score"] == pytest.approx(-60e-6)
    assert faulted["fault_cost_tokens"]["comment"] == "over 2 paired request(s)"
    clean = experiments["swarm"]["dataset_results"]
    assert clean["fault_cost_tokens"] == {
        "score": None,
        "comment": "no fault injected into any request",
    }


def test_fault_cost_without_a_fault_free_twin_says_what_to_add(invoke, tmp_path):
    results = run_spec(
        invoke,
        tmp_path,
        "swarm",
        "[{agent: account, fail: model_error}]",
        evaluators="[recovery, fault_cost]",
    )
    assert results[0]["scores"]["graceful"] is False
    [experiment] = json.loads((tmp_path / "out.json").read_text())["experiments"]
    comment = experiment["dataset_results"]["fault_cost_tokens"]["comment"]
    assert comment.startswith("no fault-free twin in this run: add the same target without")


def test_a_model_down_is_recovered_by_the_fallback_model(invoke, tmp_path):
    [result] = run_spec(invoke, tmp_path, "model_fallback", "[{model: gpt-4o, fail: model_error}]")
    # gpt-4o never answered; the fallback did, once
    assert result["outputs"]["calls"] == {"gpt-4o": 0, "claude-haiku": 1}
    assert [(m["model"], m["injected"]) for m in result["trace"]["model_calls"]] == [
        ("gpt-4o", "model_error"),
        ("claude-haiku", None),
    ]
    assert result["scores"] == {
        "recovered": True,
        "graceful": True,
        "fault_retries": 1.0,  # the agent's next step was a model call: the request sent again
        "fault_handoffs": 0.0,
        "tokens_after_fault": 9.0,
    }


def test_a_rate_limit_on_chat_openai_is_openais_own_error_and_never_reaches_the_server():
    fault = FaultSpec(model="gpt-4o", fail="rate_limit", calls=[1])
    with openai_server(["Your latest invoice is INV-1042."] * 2, model="gpt-4o") as server:
        model = ChatOpenAI(
            model="gpt-4o", base_url=server.base_url, api_key="sk-test", max_retries=0
        )
        for middleware, answered in (
            ([], False),
            ([ModelRetryMiddleware(initial_delay=0.0)], True),
        ):
            agent = create_agent(model, [], name="billing", middleware=middleware)
            with capture(own_agent="t") as recorder:
                injector = FaultInjector([fault], ["invoice", 0], recorder)
                config = {"callbacks": [recorder, injector]}
                if answered:
                    state = agent.invoke({"messages": [HumanMessage("My invoice?")]}, config)
                    assert state["messages"][-1].text == "Your latest invoice is INV-1042."
                else:
                    with pytest.raises(openai.RateLimitError) as raised:
                        agent.invoke({"messages": [HumanMessage("My invoice?")]}, config)
                    assert raised.value.status_code == 429
            calls = recorder.trace().model_calls
            assert [(c.injected, c.failed) for c in calls] == (
                [("rate_limit", True), (None, False)] if answered else [("rate_limit", True)]
            )
        # the failed calls never reached the server: only the retried one did
        assert len(server.requests) == 1
