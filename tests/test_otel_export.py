"""``agenteval run --otel``: what arrives at an OTLP/HTTP receiver (decoded with the
collector's own protobuf messages) or in an OTLP JSON file, held against the run's --json.

Each request's root span is matched to its --json result by experiment, example and
repetition; its agents, tools, transfers, model usage, score events and times must be the
result's. The modes of the transfers are set by hand per graph: a supervisor's handoffs are
all delegations (``return_to_caller``), a swarm's all ``pass_control``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import Span, otlp_receiver, read_jsonl

OP = "gen_ai.operation.name"
AGENT = "gen_ai.agent.name"
ROOT = Path(__file__).resolve().parent.parent


def tree(spans: list[Span]) -> dict[str, list[Span]]:
    """Children by parent span id, each list in start order."""
    children: dict[str, list[Span]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    for found in children.values():
        found.sort(key=lambda s: (s.start, s.end))
    return children


def below(children: dict[str, list[Span]], span: Span) -> list[Span]:
    """Every span under ``span``, parents before their children, siblings in start order."""
    found = []
    for child in children.get(span.span_id, []):
        found += [child, *below(children, child)]
    return found


def roots_by_request(spans: list[Span]) -> dict[tuple[str, str, int], Span]:
    roots = [s for s in spans if not s.parent_id]
    return {
        (
            r.attributes["agenteval.experiment"],
            r.attributes["agenteval.example_id"],
            r.attributes["agenteval.repetition"],
        ): r
        for r in roots
    }


def ns(seconds: float) -> int:
    return round(seconds * 1e9)


def close(a: int, b: int) -> bool:
    return abs(a - b) <= 1_000  # a microsecond: float seconds to integer nanoseconds


def usage_of(span: Span) -> tuple[Any, ...]:
    a = span.attributes
    return (
        a[AGENT],
        a["gen_ai.request.model"],
        a.get("gen_ai.usage.input_tokens"),
        a.get("gen_ai.usage.output_tokens"),
        a.get("gen_ai.usage.cache_read.input_tokens"),
        a.get("gen_ai.usage.cache_creation.input_tokens"),
        a.get("gen_ai.usage.reasoning.output_tokens"),
    )


def usage_in_json(call: dict[str, Any]) -> tuple[Any, ...]:
    return (
        call["agent"],
        call["model"],
        call["input_tokens"],
        call["output_tokens"],
        call["cache_read_tokens"],
        call["cache_write_tokens"],
        call["reasoning_tokens"],
    )


def check_request(
    root: Span, children: dict[str, list[Span]], result: dict[str, Any], mode: str
) -> None:
    """Every figure of one request's spans against its --json result."""
    trace = result["trace"]
    spans = below(children, root)
    assert all(s.trace_id == root.trace_id for s in spans)
    agents = [s for s in children.get(root.span_id, []) if s.attributes[OP] == "invoke_agent"]
    assert [s.attributes[AGENT] for s in agents] == trace["agent_path"]
    assert [s.name for s in agents] == [f"invoke_agent {a}" for a in trace["agent_path"]]

    transfers = [
        (
            s.attributes["agenteval.transfer.source"],
            s.attributes["gen_ai.transfer.target.name"],
            s.attributes["gen_ai.transfer.mode"],
        )
        for s in spans
        if "gen_ai.transfer.mode" in s.attributes
    ]
    assert transfers == [(h["source"], h["target"], mode) for h in trace["handoffs"]]

    tools = [s for s in spans if s.attributes[OP] == "execute_tool"]
    got = [(s.attributes[AGENT], s.attributes["gen_ai.tool.name"]) for s in tools]
    args = [json.loads(s.attributes["gen_ai.tool.call.arguments"]) for s in tools]
    assert sorted(zip(got, map(json.dumps, args), strict=True)) == sorted(
        ((t["agent"], t["name"]), json.dumps(t["args"])) for t in trace["tool_calls"]
    )
    for span in tools:  # each under the agent that called it
        parent = next(s for s in [*spans, root] if s.span_id == span.parent_id)
        assert parent.attributes[AGENT] == span.attributes[AGENT]

    chats = [s for s in spans if s.attributes[OP] == "chat"]
    calls = sorted(trace["model_calls"], key=lambda c: c["started_at"])
    assert [usage_of(s) for s in sorted(chats, key=lambda s: s.start)] == [
        usage_in_json(c) for c in calls
    ]
    assert all(s.kind == 3 for s in chats)  # SPAN_KIND_CLIENT: a call out of the process
    for span, call in zip(sorted(chats, key=lambda s: s.start), calls, strict=True):
        assert close(span.start, ns(call["started_at"]))
        assert close(span.end, ns(call["started_at"] + call["latency_s"]))
    assert close(root.start, ns(trace["started_at"]))

    events = {e[2]["gen_ai.evaluation.name"]: e[2] for e in root.events}
    assert all(name == "gen_ai.evaluation.result" for name, _, _ in root.events)
    assert set(events) == set(result["scores"])
    for key, score in result["scores"].items():
        event = events[key]
        if score is None:
            assert "gen_ai.evaluation.score.value" not in event
            assert event["gen_ai.evaluation.explanation"] == result["comments"][key]
        else:
            assert event["gen_ai.evaluation.score.value"] == float(score)
            if isinstance(score, bool):
                assert event["gen_ai.evaluation.score.label"] == ("pass" if score else "fail")


def check_run(spans: list[Span], out: Path, modes: dict[str, str]) -> int:
    """Every result of the --json file ``out`` against its spans; the requests checked."""
    roots = roots_by_request(spans)
    children = tree(spans)
    checked = 0
    for experiment in json.loads(out.read_text())["experiments"]:
        for result in experiment["results"]:
            root = roots[(experiment["name"], result["example_id"], result["repetition"])]
            assert root.name == f"invoke_workflow {experiment['target']}"
            assert root.attributes["gen_ai.workflow.name"] == experiment["target"]
            assert root.attributes["agenteval.status"] == result["status"]
            check_request(root, children, result, modes[experiment["target"]])
            checked += 1
    assert checked == len(roots)
    return checked


def test_the_demo_supervisor_and_swarm_arrive_at_an_otlp_receiver(tmp_path, invoke, demo_spec):
    out = tmp_path / "out.json"
    with otlp_receiver() as receiver:
        result = invoke(
            "run", demo_spec, "--limit", 5, "--no-cache", "--json", out,
            "--otel", receiver.url, "--store", tmp_path / "a.db",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    spans = receiver.spans()
    modes = {"supervisor": "return_to_caller", "swarm": "pass_control"}
    assert check_run(spans, out, modes) == 10
    assert set(receiver.paths) == {"/v1/traces"}
    assert {s.resource["service.name"] for s in spans} == {"agenteval"}
    assert f"exported 10 request(s) as {len(spans)} OpenTelemetry spans to {receiver.url}" in (
        result.text
    )
    # the supervisor delegates and gets control back: both legs are transfers
    data = json.loads(out.read_text())["experiments"][0]["results"][0]["trace"]
    assert data["handoffs"][0]["source"] == "supervisor"
    assert data["handoffs"][-1]["target"] == "supervisor"


@pytest.mark.slow
def test_langgraph_supervisor_and_swarm_on_provider_clients_to_a_file(tmp_path, invoke):
    """Real langgraph-supervisor and langgraph-swarm graphs on ChatOpenAI and ChatAnthropic:
    the usage the providers reported (cache reads and writes, reasoning) is on the chat
    spans, both cache-write names with the same figure."""
    import otel_graphs  # noqa: F401  # starts its servers before the run

    rows = [
        {"id": "b", "inputs": {"question": "billing: refund invoice 42"}},
        {"id": "t", "inputs": {"question": "tech: the app crashed"}},
        {"id": "r", "inputs": {"question": "bob: refund please"}},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "experiment_prefix: otel\ndataset: data.jsonl\n"
        "targets:\n  supervisor: otel_graphs:supervisor\n  swarm: otel_graphs:swarm\n"
        "evaluators: [routing_accuracy, token_cost]\nconcurrency: 1\n"
    )
    out, file = tmp_path / "out.json", tmp_path / "spans.jsonl"
    result = invoke(
        "run", tmp_path / "spec.yaml", "--json", out, "--otel", file,
        "--store", tmp_path / "a.db",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    spans = read_jsonl(file)
    assert check_run(spans, out, {"supervisor": "return_to_caller", "swarm": "pass_control"}) == 6
    chats = [s for s in spans if s.attributes[OP] == "chat"]
    by_agent = {}
    for span in sorted(chats, key=lambda s: s.start):
        by_agent.setdefault((span.trace_id, span.attributes[AGENT]), usage_of(span))
    firsts = set(by_agent.values())
    # provider_graphs.USAGE, as the providers sent it: Anthropic's input excludes cache
    # (1200 + 3000 read + 500 written), OpenAI's includes it
    assert ("supervisor", "claude-sonnet-5", 4700, 40, 3000, 500, None) in firsts
    assert ("billing", "gpt-5-mini", 2000, 120, 1536, None, 64) in firsts
    assert ("alice", "gpt-5-mini", 1500, 30, 1024, None, 16) in firsts
    assert ("bob", "claude-sonnet-5", 2800, 90, 1800, 600, None) in firsts
    # cache writes under the GenAI registry's one name, no second spelling of the figure
    written = {k for s in chats for k in s.attributes if "cache" in k}
    assert written == {
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
    }
    swarm_transfers = [
        s.attributes["gen_ai.transfer.target.name"]
        for s in spans
        if s.attributes.get("gen_ai.transfer.mode") == "pass_control"
    ]
    assert swarm_transfers == ["bob"]


def test_conversation_turns_share_a_conversation_id(tmp_path, invoke):
    out, file = tmp_path / "out.json", tmp_path / "spans.jsonl"
    result = invoke(
        "run", ROOT / "configs" / "conversations.yaml", "--limit", 2, "--no-cache",
        "--target", "swarm", "--json", out, "--otel", file, "--store", tmp_path / "a.db",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    spans = read_jsonl(file)
    children = tree(spans)
    experiment = json.loads(out.read_text())["experiments"][0]
    roots = roots_by_request(spans)
    ids = set()
    for result_json in experiment["results"]:
        root = roots[(experiment["name"], result_json["example_id"], 0)]
        conversation = root.attributes["gen_ai.conversation.id"]
        ids.add(conversation)
        assert all(
            s.attributes["gen_ai.conversation.id"] == conversation for s in below(children, root)
        )
        turns = children[root.span_id]
        sent = [t for t in result_json["turns"] if t["sent"]]
        assert [t.attributes["agenteval.turn"] for t in turns] == [
            i for i, t in enumerate(result_json["turns"]) if t["sent"]
        ]
        for span, turn in zip(turns, sent, strict=True):
            check_request(span, children, turn, "pass_control")
        conversation_events = {e[2]["gen_ai.evaluation.name"] for e in root.events}
        assert conversation_events == set(result_json["scores"])
    assert len(ids) == len(experiment["results"]) == 2


def test_otlp_environment_is_honoured(tmp_path, invoke, demo_spec, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=evals")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "routing-evals")
    with otlp_receiver() as receiver:
        result = invoke(
            "run", demo_spec, "--limit", 1, "--target", "swarm", "--no-cache",
            "--otel", receiver.url + "/v1/traces", "--store", tmp_path / "a.db", "-q",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert receiver.headers[0]["x-team"] == "evals"
    assert {s.resource["service.name"] for s in receiver.spans()} == {"routing-evals"}
    assert receiver.paths == ["/v1/traces"]


def test_a_receiver_that_refuses_fails_the_run_with_exit_4(tmp_path, invoke, demo_spec):
    with otlp_receiver() as receiver:
        receiver.status = 400  # not retried: one answer, one line
        result = invoke(
            "run", demo_spec, "--limit", 1, "--target", "swarm", "--no-cache",
            "--otel", receiver.url, "--store", tmp_path / "a.db", "-q",
        )  # fmt: skip
    assert result.exit_code == 4, result.output
    assert f"error: the OTLP/HTTP export to {receiver.url}/v1/traces failed" in result.text
    assert "400" in result.text
    assert "routing: export failed · 1 target(s), 1 results, 0 errored" in result.text
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("ftp://collector:4318", "only http:// and https:// endpoints"),
        ("missing/spans.jsonl", "the folder missing does not exist"),
        ("http://", "names no host"),
    ],
)
def test_a_bad_destination_is_one_line_before_any_call(tmp_path, invoke, demo_spec, value, says):
    result = invoke("run", demo_spec, "--otel", value, "--store", tmp_path / "a.db")
    assert result.exit_code == 2, result.output
    assert says in result.text
    assert not (tmp_path / "a.db").exists() or "results are saved" not in result.text
    assert "Traceback" not in result.output


def test_without_the_otel_extra_the_install_hint(tmp_path, invoke, demo_spec, monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http", None)
    result = invoke("run", demo_spec, "--otel", tmp_path / "s.jsonl", "--store", tmp_path / "a")
    assert result.exit_code == 2, result.output
    assert "pip install 'agenteval-cli[otel]'" in result.text
    assert len(result.output.strip().splitlines()) <= 2


def test_the_api_option_returns_what_was_sent(tmp_path, demo_spec):
    import agenteval_cli as agenteval

    file = tmp_path / "spans.jsonl"
    report = agenteval.run(demo_spec, store=tmp_path / "a.db", limit=2, cache=False, otel=str(file))
    assert report.otel is not None and report.otel.error is None
    spans = read_jsonl(file)
    assert (report.otel.requests, report.otel.spans) == (4, len(spans))
    assert len([s for s in spans if not s.parent_id]) == 4


def test_no_receiver_says_why_within_the_environment_timeout(tmp_path, invoke, demo_spec):
    with otlp_receiver() as receiver:
        url = receiver.url  # a port that was free, closed again: nothing listens there
    result = invoke(
        "run", demo_spec, "--limit", 1, "--target", "swarm", "--no-cache",
        "--otel", url, "--store", tmp_path / "a.db", "-q",
        env={"OTEL_EXPORTER_OTLP_TIMEOUT": "3"},  # one retry, about a second later
    )  # fmt: skip
    assert result.exit_code == 4, result.output
    assert "Connection refused" in result.text
    assert "the results are kept in the store" in result.text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "rows", "depth"),
    [
        ("forms.supervisors:parallel_supervisor", "support", 1),  # parallel delegations
        ("forms.nested:hierarchy", "hierarchy", 2),  # teams of agents, team supervisors
        ("forms.nested:tool_supervisor", "support", 2),  # agents run inside its tools
    ],
)
def test_supervised_forms_nest_agents_by_path_and_delegate(tmp_path, invoke, target, rows, depth):
    """Graphs whose every move of control goes through a coordinator: each handoff is one
    ``return_to_caller`` transfer, each model call sits under the agent spans of its path,
    outer to inner, and every call's usage and every tool call is there."""
    from forms import datasets
    from forms.harness import write_form

    spec = write_form(tmp_path, targets={"form": target}, rows=getattr(datasets, rows)())
    out, file = tmp_path / "out.json", tmp_path / "spans.jsonl"
    result = invoke("run", spec, "--json", out, "--otel", file, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    spans = read_jsonl(file)
    by_id = {s.span_id: s for s in spans}
    children = tree(spans)
    experiment = json.loads(out.read_text())["experiments"][0]
    roots = roots_by_request(spans)
    delegations, deepest = 0, 0
    for result_json in experiment["results"]:
        trace = result_json["trace"]
        root = roots[(experiment["name"], result_json["example_id"], 0)]
        under = below(children, root)
        transfers = sorted(
            (s.attributes["agenteval.transfer.source"], s.attributes["gen_ai.transfer.target.name"])
            for s in under
            if "gen_ai.transfer.mode" in s.attributes
        )
        assert transfers == sorted((h["source"], h["target"]) for h in trace["handoffs"])
        modes = {s.attributes.get("gen_ai.transfer.mode") for s in under} - {None}
        assert modes <= {"return_to_caller"}
        delegations += len(transfers)

        def path_of(span: Span) -> list[str]:
            path = []
            parent = by_id.get(span.parent_id)
            while parent is not None and parent.attributes[OP] == "invoke_agent":
                path.insert(0, parent.attributes[AGENT])
                parent = by_id.get(parent.parent_id)
            return path

        chats = [s for s in under if s.attributes[OP] == "chat"]
        deepest = max([deepest, *(len(path_of(s)) for s in chats)])
        assert sorted((path_of(s), usage_of(s)) for s in chats) == sorted(
            (c["path"], usage_in_json(c)) for c in trace["model_calls"]
        )
        tools = sorted(
            (s.attributes[AGENT], s.attributes["gen_ai.tool.name"])
            for s in under
            if s.attributes[OP] == "execute_tool"
        )
        assert tools == sorted((t["agent"], t["name"]) for t in trace["tool_calls"])
    assert delegations > 0
    assert deepest == depth  # a team's members under the team's span


def test_otel_env_sends_to_the_endpoint_the_environment_names(tmp_path, invoke, demo_spec):
    with otlp_receiver() as receiver:
        result = invoke(
            "run", demo_spec, "--limit", 1, "--target", "swarm", "--no-cache",
            "--otel", "env", "--store", tmp_path / "a.db", "-q",
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url + "/"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert receiver.paths == ["/v1/traces"]
    assert len([s for s in receiver.spans() if not s.parent_id]) == 1


def test_otel_env_without_an_endpoint_is_one_line(tmp_path, invoke, demo_spec, monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    result = invoke("run", demo_spec, "--otel", "env", "--store", tmp_path / "a.db")
    assert result.exit_code == 2, result.output
    assert "--otel env: neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor" in result.text
