"""Trace files are untrusted input: spans that are their own parent, rings of parents with no
root, spans whose parent is missing, traces nested deeper than Python recurses and lines of
JSON nested deeper than its reader recurses are each said in one line; what can be read is
imported, what cannot is refused naming file:line, exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from otlp_files import attributes
from test_otel_conventions import chat, export, genai_trace, span, write_project

from agenteval_cli.trace.attribution import RunNode, attribute


def agent_root(trace: str, name: str, row: str, parent: int | None = None) -> dict:
    """An agent's span naming its dataset row; ``parent`` lets it name any parent."""
    root = span(
        trace,
        1,
        None,
        f"invoke_agent {name}",
        0,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "agenteval.example_id": row,
        },
    )
    if parent is not None:
        root["parentSpanId"] = f"{parent:016x}"
    return root


def imported(invoke: Any, folder: Path, text: str) -> tuple[Any, dict[str, dict]]:
    spec, traces = write_project(folder, text)
    out = folder / "out.json"
    result = invoke("import", spec, "--otlp", traces, "--json", out, "--store", folder / "a.db")
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        return result, {}
    (experiment,) = json.loads(out.read_text())["experiments"]
    return result, {r["example_id"]: r for r in experiment["results"]}


def test_a_span_that_is_its_own_parent_is_said_once_and_the_file_imported(
    invoke: Any, tmp_path: Path
) -> None:
    own_parent = [
        agent_root("b", "bob", "e2", parent=1),
        chat("b", 2, 1, 1, "m-large", "Bob refunded it.", input_tokens=10, output_tokens=5),
    ]
    result, rows = imported(invoke, tmp_path, export(genai_trace(), own_parent))
    assert result.exit_code == 0, result.output
    assert result.text.count("its own parent") == 1
    assert (
        f"traces.jsonl:2: trace {'b' * 32} has no root (span 'invoke_agent bob' is its own "
        "parent): read with the earliest span of each cycle as a root" in result.text
    )
    assert rows["e1"]["scores"]["routing_accuracy"] == 1.0  # the sound trace, as ever
    e2 = rows["e2"]
    assert e2["status"] == "ok" and e2["outputs"]["final_response"] == "Bob refunded it."
    assert e2["trace"]["agent_path"] == ["bob"] and e2["scores"]["input_tokens"] == 10


def test_a_ring_of_parents_with_no_root_is_cut_at_its_earliest_span(
    invoke: Any, tmp_path: Path
) -> None:
    ring = [  # 1 -> 3 -> 2 -> 1: every span has a parent, none is a root
        agent_root("c", "carol", "e2", parent=3),
        span("c", 2, 1, "plan", 1),
        span("c", 3, 2, "act", 2),
        chat("c", 4, 3, 3, "m-large", "Carol refunded it.", input_tokens=7, output_tokens=3),
    ]
    result, rows = imported(invoke, tmp_path, export(ring))
    assert result.exit_code == 3, result.output  # e1 and e3 have no trace: only that
    assert result.text.count("has no root") == 1
    assert (
        f"traces.jsonl:1: trace {'c' * 32} has no root (spans 'invoke_agent carol', 'plan', "
        "'act' are each other's ancestors)" in result.text
    )
    e2 = rows["e2"]
    assert e2["status"] == "ok" and e2["outputs"]["final_response"] == "Carol refunded it."
    assert [c["path"] for c in e2["trace"]["model_calls"]] == [["carol"]]


def test_spans_whose_parent_no_file_holds_are_said_and_read_as_roots(
    invoke: Any, tmp_path: Path
) -> None:
    cut_short = [
        agent_root("d", "dave", "e2"),
        chat("d", 2, 1, 1, "m-large", "Looking.", input_tokens=4, output_tokens=2),
        chat("d", 3, 77, 2, "m-large", "Refunded.", input_tokens=6, output_tokens=1),
        chat("d", 4, 78, 3, "m-large", "Done.", input_tokens=6, output_tokens=1),
    ]
    result, rows = imported(invoke, tmp_path, export(cut_short))
    assert result.text.count("name a parent no file holds") == 1
    assert (
        f"traces.jsonl:1: trace {'d' * 32}: 2 span(s) name a parent no file holds (a trace "
        "cut short?), 'chat m-large', 'chat m-large': read as roots of their own" in result.text
    )
    assert rows["e2"]["scores"]["input_tokens"] == 16  # every call counted


def test_one_root_whose_parent_is_in_another_service_is_nothing_to_say(
    invoke: Any, tmp_path: Path
) -> None:
    continued = [
        agent_root("f", "frank", "e2", parent=99),
        chat("f", 2, 1, 1, "m-large", "Refunded.", input_tokens=4, output_tokens=2),
    ]
    result, rows = imported(invoke, tmp_path, export(continued))
    assert "no file holds" not in result.text and "no root" not in result.text
    assert rows["e2"]["outputs"]["final_response"] == "Refunded."


def test_spans_nested_deeper_than_python_recurses_import_and_attribute(
    invoke: Any, tmp_path: Path
) -> None:
    depth = 2_000
    deep = [agent_root("a", "outer", "e2")]
    deep += [span("a", n, n - 1, f"step {n}", n) for n in range(2, depth)]
    deep.append(span("a", depth, depth - 1, "invoke_agent inner", depth, **_agent("inner")))
    answer = chat(
        "a", depth + 1, depth, depth + 1, "m-large", "Done.", input_tokens=5, output_tokens=1
    )
    deep.append(answer)
    result, rows = imported(invoke, tmp_path, export(deep))
    e2 = rows["e2"]
    assert e2["status"] == "ok", result.output
    assert [c["path"] for c in e2["trace"]["model_calls"]] == [["outer", "inner"]]
    assert e2["outputs"]["final_response"] == "Done."


def _agent(name: str) -> dict[str, str]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def test_attribution_walks_runs_nested_far_deeper_than_python_recurses() -> None:
    """outer's chain of 3,000 runs holds a model call and inner's chain of 3,000, with a
    model call at its bottom: outer, then inner inside it."""
    seq = iter(range(1_000_000))
    root = parent = RunNode(None, "chain", "outer", next(seq), lc_name="outer")
    for _ in range(3_000):
        parent = _child(parent, RunNode(parent, "chain", "step", next(seq), lc_name="outer"))
    first = _child(parent, RunNode(parent, "model", "m", next(seq), lc_name="outer"))
    for _ in range(3_000):
        parent = _child(parent, RunNode(parent, "chain", "step", next(seq), lc_name="inner"))
    last = _child(parent, RunNode(parent, "model", "m", next(seq), lc_name="inner"))
    attribution = attribute([root])
    assert attribution.agent_path == ["outer", "inner"]
    assert attribution.paths[id(first)] == ["outer"]
    assert attribution.paths[id(last)] == ["outer", "inner"]


def _child(parent: RunNode, child: RunNode) -> RunNode:
    parent.children = [*parent.children, child]
    return child


def test_a_line_nested_deeper_than_the_json_reader_goes_is_one_line(
    invoke: Any, tmp_path: Path
) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    result, _ = imported(invoke, tmp_path, export(genai_trace()) + nested + "\n")
    assert result.exit_code == 2, result.output
    assert "traces.jsonl:2: JSON nested deeper than 200 levels" in result.text


def test_an_attribute_value_nested_deeper_than_any_export_nests_is_one_line(
    invoke: Any, tmp_path: Path
) -> None:
    """An array value 100 arrays deep: 300 levels of JSON, where Python still reads it."""
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(100):
        value = {"arrayValue": {"values": [value]}}
    deep = agent_root("a", "alice", "e1")
    deep["attributes"].append({"key": "custom.value", "value": value})
    result, _ = imported(invoke, tmp_path, export(genai_trace()) + export([deep]))
    assert result.exit_code == 2, result.output
    assert "traces.jsonl:2: JSON nested deeper than 200 levels" in result.text


def test_json_text_in_an_attribute_nested_deeper_than_python_reads_is_kept_as_text(
    invoke: Any, tmp_path: Path
) -> None:
    """OpenInference's input.value is JSON in a string: 100,000 arrays deep, it is read as
    the text it is, and the trace imported."""
    nested = "[" * 100_000 + "]" * 100_000
    root = agent_root("a", "alice", "e2")
    root["attributes"] += attributes({"input.value": nested, "output.value": nested})
    answer = chat("a", 2, 1, 1, "m-large", "Refunded.", input_tokens=4, output_tokens=2)
    result, rows = imported(invoke, tmp_path, export([root, answer]))
    assert rows["e2"]["status"] == "ok", result.output
    assert rows["e2"]["trace"]["agent_path"] == ["alice"]


def test_a_number_of_more_digits_than_python_reads_is_one_line(invoke: Any, tmp_path: Path) -> None:
    huge = '{"resourceSpans": [], "x": ' + "9" * 5_000 + "}"
    result, _ = imported(invoke, tmp_path, huge + "\n" + export(genai_trace()))
    assert result.exit_code == 2, result.output
    assert "traces.jsonl:1: not JSON (a number of more digits than can be read)" in result.text


def test_agents_nested_deeper_than_python_recurses_export_and_read_back(tmp_path: Path) -> None:
    """A recursing agent's trace, 1,500 agents deep, laid out as spans, exported as OTLP
    JSON and read back: every agent's span, and the model call at the bottom its path."""
    from agenteval_cli.core.records import ModelCall, Result, Trace
    from agenteval_cli.otel.export.destination import OtelDestination
    from agenteval_cli.otel.export.exporter import export_results
    from agenteval_cli.otel.export.spans import Request
    from agenteval_cli.otel.ingest.otlp import read_spans
    from agenteval_cli.otel.ingest.requests import requests_of

    path = [f"agent{n}" for n in range(1_500)]
    start = 1_800_000_000.0
    call = ModelCall(path[-1], "m", 10, 2, 0.5, path=path, started_at=start)
    trace = Trace(agent_path=path, model_calls=[call], started_at=start, latency_s=1.0)
    out = tmp_path / "deep.otlp.jsonl"
    request = Request("graph", "exp-1", "e1", 0)
    done = export_results(OtelDestination(path=out), [(request, Result("e1", 0, {}, trace), start)])
    assert done.error is None and done.spans == 1 + len(path) + 1  # request, agents, chat
    (read,) = requests_of(read_spans(out))
    assert [c.path for c in read.trace.model_calls] == [path]


def test_run_trees_nested_deeper_than_python_recurses_are_captured_parents_first() -> None:
    """The LangSmith upload's capture of a target's runs: 3,000 nested, each one's child
    runs in the order they started."""
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from agenteval_cli.langsmith.capture import RunTreeCollector

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def run(number: int, parent: Any) -> Any:
        node = SimpleNamespace(
            id=number,
            parent_run_id=None if parent is None else parent.id,
            name=f"run {number}",
            run_type="chain",
            start_time=t0 + timedelta(seconds=number),
            end_time=None,
            inputs={},
            outputs=None,
            error=None,
            tags=[],
            extra={},
            child_runs=[],
        )
        if parent is not None:
            parent.child_runs.append(node)
        return node

    collector = RunTreeCollector()
    root = parent = run(0, None)
    for number in range(1, 3_000):
        parent = run(number, parent)
    late, early = run(5_001, root), run(5_000, root)  # listed out of the order they started
    collector.roots.append(root)
    flat = collector.flat()
    assert [r["name"] for r in flat[:2]] == ["run 0", "run 1"]
    assert len(flat) == 3_002 and flat[-2:] == [
        collector_dict(early),
        collector_dict(late),
    ]


def collector_dict(run: Any) -> dict[str, Any]:
    from agenteval_cli.langsmith.capture import run_dict

    return run_dict(run)


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"resourceSpans": [1]}, "'resourceSpans' holds something that is no JSON object"),
        ({"resourceSpans": [{"scopeSpans": ["x"]}]}, "'scopeSpans' holds something"),
    ],
)
def test_an_export_of_the_wrong_shape_is_one_line(
    invoke: Any, tmp_path: Path, document: dict, said: str
) -> None:
    result, _ = imported(invoke, tmp_path, export(genai_trace()) + json.dumps(document) + "\n")
    assert result.exit_code == 2, result.output
    assert f"traces.jsonl:2: not an OTLP trace export: {said}" in result.text


def test_optional_fields_of_another_type_read_as_absent(invoke: Any, tmp_path: Path) -> None:
    odd = [agent_root("b", "bob", "e2")]
    odd[0]["status"] = "ERROR"  # an object in OTLP JSON
    odd[0]["events"] = {"name": "exception"}  # a list
    odd[0]["attributes"].append({"key": "custom", "value": {"arrayValue": ["x"]}})
    odd.append(chat("b", 2, 1, 1, "m-large", "Bob refunded it.", input_tokens=4, output_tokens=1))
    result, rows = imported(invoke, tmp_path, export(odd))
    assert rows["e2"]["status"] == "ok", result.output
    assert rows["e2"]["outputs"]["final_response"] == "Bob refunded it."


@pytest.mark.slow
def test_a_trace_10000_spans_deep_imports_in_seconds_not_minutes(
    invoke: Any, tmp_path: Path
) -> None:
    """Nothing in reading a trace grows with the square of its depth (orders of runs, the
    replay's events, the agent over a transfer), so 10,000 nested spans import quickly."""
    import time

    depth = 10_000
    deep = [agent_root("a", "solo", "e2")]
    deep += [span("a", n, n - 1, f"step {n}", n) for n in range(2, depth + 1)]
    deep.append(
        chat("a", depth + 1, depth, depth + 1, "m-large", "Done.", input_tokens=5, output_tokens=1)
    )
    began = time.monotonic()
    result, rows = imported(invoke, tmp_path, export(deep))
    assert time.monotonic() - began < 60, "quadratic in the depth again"
    assert rows["e2"]["status"] == "ok", result.output
    assert rows["e2"]["scores"]["input_tokens"] == 5


def deeply_nested(levels: int) -> Any:
    return deeply_nested_around("x", levels)


def test_a_step_returning_values_nested_deeper_than_python_recurses_is_traced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The recorder looks for messages in what each step returns: a list 5,000 deep is
    walked to its bottom, and no callback of the recorder fails."""
    from langchain_core.runnables import RunnableLambda

    from agenteval_cli.trace.recorder import capture

    with capture() as recorder:
        RunnableLambda(lambda _: deeply_nested(5_000)).invoke(1)
    assert "RecursionError" not in caplog.text
    assert recorder.trace().error is None


def test_a_recorded_run_whose_values_nest_deeper_than_python_recurses_replays() -> None:
    """A run read back (LangSmith, OpenInference) with outputs 5,000 lists deep."""
    import uuid
    from datetime import UTC, datetime

    from agenteval_cli.langsmith.replay import replay
    from agenteval_cli.otel.ingest.runs import SpanRun

    at = datetime(2026, 1, 1, tzinfo=UTC)
    run = SpanRun(
        id=uuid.uuid4(),
        parent_run_id=None,
        trace_id="t",
        run_type="chain",
        name="step",
        inputs={"value": deeply_nested(5_000)},
        outputs={"output": deeply_nested(5_000)},
        start_time=at,
        end_time=at,
        dotted_order="1",
    )
    assert replay([run], [run]).error is None


def test_a_served_graphs_values_nested_deeper_than_python_recurses_are_decoded() -> None:
    """A remote graph's event payload, a message at the bottom of 5,000 lists."""
    from langchain_core.messages import AIMessage

    from agenteval_cli.trace.remote_events import decoded

    value = decoded(deeply_nested_around({"type": "ai", "content": "Refunded.", "id": "m1"}))
    for _ in range(5_000):
        (value,) = value
    assert isinstance(value, AIMessage) and value.content == "Refunded."


def deeply_nested_around(bottom: Any, levels: int = 5_000) -> Any:
    value = bottom
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("time", ["99999999999999999999999", "-5"])
def test_a_span_time_out_of_range_is_one_line(invoke: Any, tmp_path: Path, time: str) -> None:
    late = agent_root("b", "bob", "e2")
    late["endTimeUnixNano"] = time
    result, _ = imported(invoke, tmp_path, export(genai_trace(), [late]))
    assert result.exit_code == 2, result.output
    assert "traces.jsonl:2: span 'invoke_agent bob' has a time out of range" in result.text
