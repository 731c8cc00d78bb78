"""Traces written by hand in the GenAI semantic conventions and OpenInference's attributes,
as other instrumentations write them, through ``agenteval import --otlp``: each attribute
agenteval reads, both cache-write spellings, matching rows by ``agenteval.example_id`` and
by input, and the rows and traces that do not match said out loud."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from otlp_files import attributes

NS = 1_800_000_000_000_000_000
ROWS = [
    {"id": "e1", "inputs": {"question": "refund me"}, "outputs": {"expected_agents": ["billing"]}},
    {
        "id": "e2",
        "inputs": {"question": "bob: refund please"},
        "outputs": {"expected_agents": ["bob"]},
    },
    {"id": "e3", "inputs": {"question": "nobody recorded me"}, "outputs": {}},
]
PRICING = (
    "pricing:\n"
    "  m-large: {input: 2.0, output: 8.0, cache_read: 0.5, cache_write: 2.5}\n"
    "  m-small: {input: 1.0, output: 4.0, cache_write: 1.25}\n"
)


def span(trace: str, number: int, parent: int | None, name: str, at: int, **values: Any) -> dict:
    return {
        "traceId": trace * 32,
        "spanId": f"{number:016x}",
        "parentSpanId": f"{parent:016x}" if parent else "",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(NS + at * 1_000_000),
        "endTimeUnixNano": str(NS + (at + 1) * 1_000_000),
        "attributes": attributes(values),
        "status": {"code": 1},
    }


def chat(
    trace: str, number: int, parent: int, at: int, model: str, answer: Any, **usage: Any
) -> dict:
    parts = (
        [{"type": "text", "content": answer}]
        if isinstance(answer, str)
        else [{"type": "tool_call", "id": answer[0], "name": answer[1], "arguments": {}}]
    )
    output = [{"role": "assistant", "parts": parts}]
    return span(
        trace,
        number,
        parent,
        f"chat {model}",
        at,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.provider.name": "acme",
            "gen_ai.output.messages": json.dumps(output),
            **{f"gen_ai.usage.{k}": v for k, v in usage.items()},
        },
    )


def genai_trace() -> list[dict]:
    """A coordinator delegating to billing through a tool, expecting control back
    (``return_to_caller``); the row named by ``agenteval.example_id``."""
    a = "a"
    return [
        span(
            a,
            1,
            None,
            "invoke_agent coordinator",
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "coordinator",
                "agenteval.example_id": "e1",
            },
        ),
        chat(
            a,
            2,
            1,
            1,
            "m-large",
            ("c1", "ask_billing"),
            input_tokens=1000,
            output_tokens=50,
            **{"cache_read.input_tokens": 600, "cache_creation.input_tokens": 100},
        ),
        span(
            a,
            3,
            1,
            "execute_tool ask_billing",
            2,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "ask_billing",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.result": "Refund done.",
                "gen_ai.transfer.mode": "return_to_caller",
                "gen_ai.transfer.target.name": "billing",  # the conventions' spelling
                "gen_ai.transfer.target.type": "agent",
            },
        ),
        span(
            a,
            4,
            3,
            "invoke_agent billing",
            3,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing"},
        ),
        chat(
            a,
            5,
            4,
            4,
            "m-small",
            "Refund done.",
            input_tokens=400,
            output_tokens=40,
            **{"cache_write.input_tokens": 200, "reasoning.output_tokens": 10},
        ),
        chat(
            a,
            6,
            1,
            6,
            "m-large",
            "All set: refund done.",
            input_tokens=1200,
            output_tokens=30,
            **{"cache_read.input_tokens": 1000},
        ),
    ]


def openinference_trace() -> list[dict]:
    """OpenInference's attributes outside LangChain: alice passes control to bob (a
    handoff span), bob answers; matched to its row by the user's text."""
    b = "b"
    question = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "bob: refund please",
    }
    return [
        span(b, 1, None, "workflow", 0, **{"openinference.span.kind": "CHAIN"}),
        span(b, 2, 1, "alice", 1, **{"openinference.span.kind": "AGENT", "agent.name": "alice"}),
        span(
            b,
            3,
            2,
            "gen",
            2,
            **{
                "openinference.span.kind": "LLM",
                "llm.model_name": "m-small",
                "llm.token_count.prompt": 300,
                "llm.token_count.completion": 20,
                "llm.token_count.prompt_details.cache_read": 100,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "h1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "to_bob",
                **question,
            },
        ),
        span(
            b,
            4,
            2,
            "handoff to bob",
            3,
            **{"openinference.span.kind": "TOOL", "input.value": "alice", "output.value": "bob"},
        ),
        span(b, 5, 1, "bob", 4, **{"openinference.span.kind": "AGENT", "agent.name": "bob"}),
        span(
            b,
            6,
            5,
            "gen",
            5,
            **{
                "openinference.span.kind": "LLM",
                "llm.model_name": "m-small",
                "llm.token_count.prompt": 500,
                "llm.token_count.completion": 25,
                "llm.token_count.prompt_details.cache_write": 50,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Bob refunded it.",
                **question,
            },
        ),
    ]


def stray_trace() -> list[dict]:
    """A trace of a question no row asks."""
    return [
        span(
            "c",
            1,
            None,
            "invoke_agent solo",
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "solo",
                "input.value": "what is the weather?",
            },
        ),
    ]


def export(*traces: list[dict]) -> str:
    """One ExportTraceServiceRequest per line, as a Collector's file exporter writes."""
    return "".join(
        json.dumps(
            {
                "resourceSpans": [
                    {"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}
                ]
            }
        )
        + "\n"
        for spans in traces
    )


def write_project(folder: Path, traces: str) -> tuple[Path, Path]:
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets: {app: not_installed_anywhere:app}\n"
        "evaluators: [routing_accuracy, handoff_chain_length, token_cost]\n"
        "max_error_rate: 0.5\n" + PRICING
    )
    (folder / "traces.jsonl").write_text(traces)
    return spec, folder / "traces.jsonl"


def test_genai_and_openinference_attributes_become_the_trace(invoke: Any, tmp_path: Path) -> None:
    spec, traces = write_project(
        tmp_path, export(genai_trace(), openinference_trace(), stray_trace())
    )
    out = tmp_path / "out.json"
    result = invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    # the stray trace and the row without one are said, not dropped
    assert "answers no row: its input 'what is the weather?' is no row's 'question'" in result.text
    assert "1 row(s) have no recorded trace, stored as errors: e3" in result.text
    assert "target 'app' does not load" in result.text
    (experiment,) = json.loads(out.read_text())["experiments"]
    rows = {r["example_id"]: r for r in experiment["results"]}

    e1 = rows["e1"]
    calls = [
        (
            c["agent"],
            c["model"],
            c["path"],
            c["input_tokens"],
            c["output_tokens"],
            c["cache_read_tokens"],
            c["cache_write_tokens"],
            c["reasoning_tokens"],
        )
        for c in e1["trace"]["model_calls"]
    ]
    assert calls == [
        ("coordinator", "m-large", ["coordinator"], 1000, 50, 600, 100, None),
        ("billing", "m-small", ["coordinator", "billing"], 400, 40, None, 200, 10),
        ("coordinator", "m-large", ["coordinator"], 1200, 30, 1000, None, None),
    ]
    (tool,) = e1["trace"]["tool_calls"]
    assert (tool["name"], tool["kind"], tool["target"]) == ("ask_billing", "agent", "billing")
    assert e1["trace"]["coordinators"] == ["coordinator"]
    assert e1["outputs"]["final_response"] == "All set: refund done."
    assert e1["scores"]["routing_accuracy"] == 1.0
    assert e1["scores"]["input_tokens"] == 2600 and e1["scores"]["output_tokens"] == 120
    # m-large: (1000-600-100)*2 + 600*0.5 + 100*2.5 + 50*8, then (1200-1000)*2 + 1000*0.5
    # + 30*8; m-small: (400-200)*1 + 200*1.25 + 40*4 (reasoning is output); per million
    assert e1["scores"]["cost_usd"] == pytest.approx((1550 + 1140 + 610) / 1e6)

    e2 = rows["e2"]
    assert e2["trace"]["agent_path"] == ["alice", "bob"]
    assert [(h["source"], h["target"], h["via"], h["tool"]) for h in e2["trace"]["handoffs"]] == [
        ("alice", "bob", "tool", "to_bob")
    ]
    assert [
        (c["cache_read_tokens"], c["cache_write_tokens"]) for c in e2["trace"]["model_calls"]
    ] == [
        (100, None),
        (None, 50),
    ]
    assert e2["scores"]["handoff_chain_length"] == 1
    assert e2["outputs"]["final_response"] == "Bob refunded it."
    # m-small: (300-100)*1 + 100*1.0 (no cache_read price: the input rate) + 20*4, then
    # (500-50)*1 + 50*1.25 + 25*4
    assert e2["scores"]["cost_usd"] == pytest.approx((200 + 100 + 80 + 450 + 62.5 + 100) / 1e6)

    e3 = rows["e3"]
    assert e3["status"] == "error"
    assert "no recorded trace answers this row" in e3["error"]


def test_a_row_without_a_trace_fails_the_import_past_max_error_rate(
    invoke: Any, tmp_path: Path
) -> None:
    spec, traces = write_project(tmp_path, export(genai_trace()))
    result = invoke("import", spec, "--otlp", traces, "--store", tmp_path / "a.db")
    assert result.exit_code == 3, result.output  # 2 of 3 rows have no trace, above 0.5
    assert "2 row(s) have no recorded trace, stored as errors: e2, e3" in result.text


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"resourceSpans": []}\n{not json\n', "traces.jsonl:2: not JSON"),
        ('{"spans": []}\n', "traces.jsonl:1: not an OTLP trace export: no 'resourceSpans' list"),
        ("", "no spans in the file(s)"),
    ],
)
def test_a_file_that_is_no_otlp_export_is_one_line(
    invoke: Any, tmp_path: Path, text: str, said: str
) -> None:
    spec, traces = write_project(tmp_path, text)
    result = invoke("import", spec, "--otlp", traces, "--store", tmp_path / "a.db")
    assert result.exit_code == 2
    assert said in result.text
    assert "Traceback" not in result.output


def test_import_options_that_do_not_go_together_are_refused(invoke: Any, tmp_path: Path) -> None:
    spec, traces = write_project(tmp_path, export(genai_trace()))
    both = invoke("import", spec, "some-experiment", "--otlp", traces)
    assert both.exit_code == 2 and "not both" in both.text
    nothing = invoke("import", spec)
    assert nothing.exit_code == 2 and "nothing to import" in nothing.text
    missing = invoke("import", spec, "--otlp", tmp_path / "absent.jsonl")
    assert missing.exit_code == 2 and "absent.jsonl: no such file" in missing.text


def test_a_model_span_without_token_counts_is_unknown_usage(invoke: Any, tmp_path: Path) -> None:
    silent = [
        span(
            "f",
            1,
            None,
            "invoke_agent solo",
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "solo",
                "input.value": "refund me",
            },
        ),
        chat("f", 2, 1, 1, "m-large", "Refunded."),
    ]
    spec, traces = write_project(tmp_path, export(silent))
    out = tmp_path / "out.json"
    invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    (experiment,) = json.loads(out.read_text())["experiments"]
    e1 = next(r for r in experiment["results"] if r["example_id"] == "e1")
    (call,) = e1["trace"]["model_calls"]
    assert (call["input_tokens"], call["output_tokens"]) == (None, None)
    assert e1["scores"]["input_tokens"] is None and e1["scores"]["cost_usd"] is None
    assert "reported no token usage" in e1["comments"]["cost_usd"]
    assert e1["outputs"]["final_response"] == "Refunded."


def test_a_pass_control_transfer_makes_its_tool_a_handoff(invoke: Any, tmp_path: Path) -> None:
    """alice's execute_tool span passes control to bob (``pass_control``): the tool is a
    handoff to bob, the change of agent is its handoff, and no agent is a coordinator."""
    d = "d"
    swarm = [
        span(d, 1, None, "workflow", 0, **{"agenteval.example_id": "e2"}),
        span(d, 2, 1, "invoke_agent alice", 1, **{"gen_ai.operation.name": "invoke_agent"}),
        chat(d, 3, 2, 2, "m-small", ("t1", "transfer_to_bob"), input_tokens=10, output_tokens=1),
        span(
            d,
            4,
            2,
            "execute_tool transfer_to_bob",
            3,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "transfer_to_bob",
                "gen_ai.tool.call.id": "t1",
                "gen_ai.transfer.mode": "pass_control",
                "gen_ai.transfer.target.agent.name": "bob",  # an older spelling, read too
            },
        ),
        span(
            d,
            5,
            1,
            "invoke_agent bob",
            4,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bob"},
        ),
        chat(d, 6, 5, 5, "m-small", "Refunded.", input_tokens=20, output_tokens=2),
    ]
    spec, traces = write_project(tmp_path, export(swarm))
    out = tmp_path / "out.json"
    invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    (experiment,) = json.loads(out.read_text())["experiments"]
    e2 = next(r for r in experiment["results"] if r["example_id"] == "e2")
    trace = e2["trace"]
    # alice is named by her span's name, "invoke_agent alice", as the conventions write it
    assert trace["agent_path"] == ["alice", "bob"]
    assert [(h["source"], h["target"], h["via"], h["tool"]) for h in trace["handoffs"]] == [
        ("alice", "bob", "tool", "transfer_to_bob")
    ]
    (tool,) = trace["tool_calls"]
    assert (tool["agent"], tool["kind"], tool["target"]) == ("alice", "handoff", "bob")
    assert trace["coordinators"] == []
    assert e2["scores"]["handoff_chain_length"] == 1 and e2["scores"]["routing_accuracy"] == 1.0
    assert e2["outputs"]["final_response"] == "Refunded."


def test_the_api_imports_traces_and_tells_what_matched_nothing(tmp_path: Path) -> None:
    import agenteval_cli as agenteval

    spec, traces = write_project(tmp_path, export(genai_trace(), openinference_trace()))
    notes: list[str] = []
    report = agenteval.import_traces(spec, [traces], store=tmp_path / "a.db", on_note=notes.append)
    (experiment,) = report.experiments
    assert (experiment.target, experiment.status, experiment.results) == ("app", "finished", 3)
    assert any("1 row(s) have no recorded trace, stored as errors: e3" in n for n in notes)
    metrics = experiment.metrics
    assert metrics["error_rate"] == pytest.approx(1 / 3)
    # e1: 2600 input tokens, e2: 300 + 500 (the errored e3 has no trace, no tokens)
    assert metrics["input_tokens"] == pytest.approx((2600 + 800) / 2)


def test_base64_ids_and_one_whole_document_read_as_hex_lines_do(
    invoke: Any, tmp_path: Path
) -> None:
    """protobuf's own JSON form (base64 ids) in one indented document reads as the
    Collector's hex ids one request per line do."""
    import base64

    def b64(hex_id: str) -> str:
        return base64.b64encode(bytes.fromhex(hex_id)).decode() if hex_id else ""

    spans = genai_trace()
    for item in spans:
        item["traceId"], item["spanId"] = b64(item["traceId"]), b64(item["spanId"])
        item["parentSpanId"] = b64(item["parentSpanId"])
    document = json.loads(export(spans))
    spec, traces = write_project(tmp_path, json.dumps(document, indent=2))
    out = tmp_path / "out.json"
    invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    (experiment,) = json.loads(out.read_text())["experiments"]
    e1 = next(r for r in experiment["results"] if r["example_id"] == "e1")
    assert e1["status"] == "ok"
    assert [c["agent"] for c in e1["trace"]["model_calls"]] == [
        "coordinator",
        "billing",
        "coordinator",
    ]
    assert e1["scores"]["cost_usd"] == pytest.approx((1550 + 1140 + 610) / 1e6)
