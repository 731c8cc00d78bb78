"""``agenteval import SPEC --otlp FILE``: traces a real instrumentation recorded, scored as
the callback-traced run of the same graph and dataset was.

Each comparison runs the spec once with OpenInference's LangChain instrumentor recording
beside agenteval's own callbacks, writes what it recorded as OTLP JSON, imports that file,
and compares the two experiments row by row: agents, handoffs, tool calls, model calls
with every token count, and every score (routing, handoffs, ping-pong, tokens, cost).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from otel_recording import recording

ROOT = Path(__file__).resolve().parent.parent
COMPARED = ("agent_path", "handoffs", "tool_calls", "coordinators", "tokens", "skills")
MODEL_FIELDS = (
    "agent",
    "model",
    "path",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "token_details",
    "provider",
    "failed",
    "cost_usd",
)


def by_row(document: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    (experiment,) = document["experiments"]
    return {(r["example_id"], r["repetition"]): r for r in experiment["results"]}


def assert_same(local: dict[str, Any], imported: dict[str, Any]) -> None:
    """Every row scored alike, from the same trace, and the same experiment metrics."""
    ran, read = by_row(local), by_row(imported)
    assert sorted(read) == sorted(ran)
    for key, result in ran.items():
        other = read[key]
        assert other["status"] == result["status"], key
        assert other["scores"] == result["scores"], key
        assert other["outputs"]["final_response"] == result["outputs"]["final_response"], key
        for name in COMPARED:
            if name == "tool_calls":
                continue
            assert other["trace"][name] == result["trace"][name], (key, name)
        tools, again_tools = result["trace"]["tool_calls"], other["trace"]["tool_calls"]
        assert [_untimed(t) for t in again_tools] == [_untimed(t) for t in tools], key
        for tool, again_tool in zip(tools, again_tools, strict=True):
            # the same call seen by two instrumentations: the span's times, not the callback's
            for when in ("started_at", "ended_at"):
                if tool[when] is None:
                    assert again_tool[when] is None, key
                else:
                    assert abs(again_tool[when] - tool[when]) < 0.5, key
        calls = [{f: c.get(f) for f in MODEL_FIELDS} for c in result["trace"]["model_calls"]]
        again = [{f: c.get(f) for f in MODEL_FIELDS} for c in other["trace"]["model_calls"]]
        assert again == calls, key
    metrics = {k: v for k, v in local["experiments"][0]["metrics"].items() if "latency" not in k}
    again = {k: v for k, v in imported["experiments"][0]["metrics"].items() if "latency" not in k}
    assert again == metrics


def _untimed(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if k not in ("started_at", "ended_at")}


def run_and_import(
    invoke: Any, spec: Path, target: str, folder: Path, *more: str, producer: str = "langchain"
) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The callback-traced run of ``target`` (recorded by ``producer``'s instrumentation
    meanwhile, OpenInference's by default), then the import of what was recorded: both
    --json documents and the import's CLI result."""
    store, ran, read = folder / "a.db", folder / "ran.json", folder / "read.json"
    with recording(producer) as spans:
        result = invoke(
            "run", spec, "--target", target, "--no-cache", "--json", ran, "--store", store
        )
        assert result.exit_code == 0, result.output
        traces = spans.write(folder / f"{target}.otlp.jsonl")
    imported = invoke(
        "import",
        spec,
        "--otlp",
        traces,
        "--target",
        target,
        "--json",
        read,
        "--store",
        store,
        *more,
    )
    return json.loads(ran.read_text()), json.loads(read.read_text()), imported


@pytest.mark.slow
@pytest.mark.parametrize("target", ["supervisor", "swarm"])
def test_demo_traces_score_as_the_callback_run(invoke: Any, tmp_path: Path, target: str) -> None:
    spec = ROOT / "configs" / "routing.yaml"
    local, imported, result = run_and_import(invoke, spec, target, tmp_path)
    assert result.exit_code == 0, result.output
    assert_same(local, imported)
    rows = by_row(imported)
    assert len(rows) == 32  # every row of datasets/routing.jsonl found its trace
    # the import is a stored experiment like a run's: compare reads it beside the run
    names = [e["name"] for e in local["experiments"] + imported["experiments"]]
    compared = invoke("compare", *names, "--store", tmp_path / "a.db")
    assert compared.exit_code == 0, compared.output


@pytest.mark.slow
@pytest.mark.parametrize("target", ["supervisor", "swarm"])
def test_provider_graphs_traces_keep_cache_and_reasoning_tokens_and_cost(
    invoke: Any, tmp_path: Path, target: str
) -> None:
    """langgraph-supervisor and langgraph-swarm on the real ChatOpenAI and ChatAnthropic:
    cached, cache-written and reasoning tokens and the price database's cost come back."""
    from provider_graphs import ROWS

    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        f"targets: {{{target}: otel_graphs:recorded_{target}}}\n"
        "evaluators: [handoff_chain_length, token_cost]\n"
        "concurrency: 1\n"
    )
    local, imported, result = run_and_import(invoke, spec, target, tmp_path)
    assert result.exit_code == 0, result.output
    assert_same(local, imported)
    calls = [c for r in by_row(imported).values() for c in r["trace"]["model_calls"]]
    # provider_graphs.USAGE reports cache reads on every agent's calls but tech's first
    assert any(c["cache_read_tokens"] for c in calls)
    assert all(c["cost_usd"] is not None for c in calls)
    # priced by the import, as a run prices its calls, and kept with each call
    assert all(c["cost_usd"] == float(c["price"]["usd"]) for c in calls)
    assert {c["price"]["source"] for c in calls} == {c["price_source"] for c in calls} != {None}


AGENT_ROWS = [
    {
        "id": "refund",
        "inputs": {"question": "billing: refund my $49"},
        "outputs": {"expected_agents": ["billing"], "must_mention": ["billing"]},
    },
    {
        "id": "crash",
        "inputs": {"question": "tech: the app crashed"},
        "outputs": {"expected_agents": ["tech"], "must_mention": ["tech"]},
    },
    {
        "id": "hello",
        "inputs": {"question": "hello there"},
        "outputs": {"expected_agents": ["triage"], "must_mention": ["triage"]},
    },
]


def agents_project(folder: Path) -> Path:
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in AGENT_ROWS))
    spec = folder / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets: {triage: agents_sdk_app:answer}\n"
        "evaluators: [routing_accuracy, resolution_coverage, handoff_chain_length, token_cost]\n"
        "pricing: {gpt-4o-mini: {input: 0.15, output: 0.60}}\n"
    )
    return spec


@pytest.mark.slow
def test_openai_agents_sdk_handoffs_are_read_from_its_spans(invoke: Any, tmp_path: Path) -> None:
    """The OpenAI Agents SDK, recorded by OpenInference's processor: agents from its agent
    spans, the handoff from its handoff span (the model's transfer_to_* call it answered),
    tokens from its generation spans; figures derived by hand from the server's script."""
    import agents_sdk_app

    spec = agents_project(tmp_path)
    with recording("openai-agents") as spans:
        for row in AGENT_ROWS:
            agents_sdk_app.answer(row["inputs"])
        traces = spans.write(tmp_path / "agents.otlp.jsonl")
    out = tmp_path / "read.json"
    result = invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    rows = by_row(json.loads(out.read_text()))
    refund, crash, hello = rows[("refund", 0)], rows[("crash", 0)], rows[("hello", 0)]

    assert refund["trace"]["agent_path"] == ["triage", "billing"]
    assert [
        (h["source"], h["target"], h["via"], h["tool"]) for h in refund["trace"]["handoffs"]
    ] == [("triage", "billing", "tool", "transfer_to_billing")]
    kinds = [(t["agent"], t["name"], t["kind"]) for t in refund["trace"]["tool_calls"]]
    assert kinds == [("triage", "transfer_to_billing", "handoff"), ("billing", "refund", "tool")]
    assert refund["outputs"]["final_response"] == "billing handled it."
    # 100 + 200 + 300 in, 10 + 20 + 30 out; $0.15 and $0.60 per million
    assert refund["scores"]["input_tokens"] == 600 and refund["scores"]["output_tokens"] == 60
    assert refund["scores"]["cost_usd"] == pytest.approx(600 * 0.15e-6 + 60 * 0.60e-6)
    assert refund["scores"]["handoff_chain_length"] == 1
    assert refund["scores"]["routing_accuracy"] == 1.0

    assert crash["trace"]["agent_path"] == ["triage", "tech"]
    assert crash["scores"]["input_tokens"] == 350 and crash["scores"]["output_tokens"] == 35
    assert crash["scores"]["cost_usd"] == pytest.approx(350 * 0.15e-6 + 35 * 0.60e-6)
    assert crash["scores"]["routing_accuracy"] == 1.0

    assert hello["trace"]["agent_path"] == ["triage"]
    assert hello["trace"]["handoffs"] == []
    assert hello["scores"]["handoff_chain_length"] == 0
    assert hello["scores"]["input_tokens"] == 120 and hello["scores"]["output_tokens"] == 12
    # the processor keeps no cache or reasoning counts of chat completions: unknown, not 0
    calls = [c for r in rows.values() for c in r["trace"]["model_calls"]]
    assert {c["cache_read_tokens"] for c in calls} == {None}
    assert all(r["scores"]["resolution_coverage"] == 1.0 for r in rows.values())


def test_a_langchain_run_names_its_row_in_its_config_metadata(invoke: Any, tmp_path: Path) -> None:
    """Two rows ask the same question: the trace tagged with agenteval.example_id (the run
    config's metadata, which OpenInference records) is the tagged row's, twice over as two
    repetitions; the untagged one cannot be told apart and is said to answer no row."""
    from langchain_core.messages import HumanMessage

    from agenteval_cli.demo.supervisor import graph

    question = "Can you send me a copy of invoice INV-2041?"
    rows = [
        {
            "id": "first",
            "inputs": {"question": question},
            "outputs": {"expected_agents": ["billing"]},
        },
        {
            "id": "second",
            "inputs": {"question": question},
            "outputs": {"expected_agents": ["billing"]},
        },
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        "targets: {supervisor: agenteval_cli.demo.supervisor:graph}\n"
        "evaluators: [routing_accuracy]\n"
        "max_error_rate: 0.5\n"
    )
    tagged = {"metadata": {"agenteval.example_id": "second"}}
    with recording() as spans:
        graph.invoke({"messages": [HumanMessage(question)]}, config=tagged)
        graph.invoke({"messages": [HumanMessage(question)]})
        graph.invoke({"messages": [HumanMessage(question)]}, config=tagged)
        traces = spans.write(tmp_path / "traces.jsonl")
    out = tmp_path / "out.json"
    result = invoke("import", spec, "--otlp", traces, "--json", out, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    assert "its input matches rows first, second: tag each request with agenteval.example_id" in (
        result.text
    )
    found = by_row(json.loads(out.read_text()))
    assert sorted(found) == [("first", 0), ("second", 0), ("second", 1)]
    assert found[("first", 0)]["status"] == "error"
    assert found[("second", 0)]["trace"]["agent_path"] == ["supervisor", "billing", "supervisor"]
    assert found[("second", 1)]["scores"]["routing_accuracy"] == 1.0


INTERRUPTING = """
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt


def confirm(state):
    interrupt({"confirm": "cancel the plan?"})
    return {"messages": [AIMessage("cancelled")]}


builder = StateGraph(MessagesState)
builder.add_node("confirm", confirm)
builder.add_edge(START, "confirm")
graph = builder.compile(checkpointer=InMemorySaver())
"""


def test_a_graph_stopped_at_interrupt_is_an_interrupted_result(invoke: Any, tmp_path: Path) -> None:
    """The run's result of a graph waiting at interrupt() is interrupted, waiting for the
    value it gave; the import reads the same from the GraphInterrupt its node recorded."""
    from projects import project

    spec = project(
        tmp_path,
        INTERRUPTING,
        module="asking.py",
        targets={"asking": "graph"},
        data=[{"id": "cancel", "inputs": {"question": "cancel my plan"}}],
        extra="max_interrupt_rate: 1.0\n",
    )
    local, imported, result = run_and_import(invoke, spec, "asking", tmp_path)
    assert result.exit_code == 0, result.output
    (ran,), (read,) = by_row(local).values(), by_row(imported).values()
    assert ran["status"] == read["status"] == "interrupted"
    assert ran["interrupt"] == read["interrupt"] == '{"confirm": "cancel the plan?"}'


SINGLE_AGENT = '''
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool


@tool
def lookup_order(ref: str) -> str:
    """Look an order up."""
    return f"order {ref}: shipped"


class OrderModel(BaseChatModel):
    """Looks the order the question names up, then answers from the tool's result."""

    model_name: str = "tiny-model"

    @property
    def _llm_type(self) -> str:
        return "order-model"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            usage = {"input_tokens": 80, "output_tokens": 8, "total_tokens": 88}
            answer = AIMessage(f"Done: {last.content}.", usage_metadata=usage)
        else:
            ref = str(last.content).split()[-1].rstrip("?")
            usage = {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55}
            call = {"name": "lookup_order", "args": {"ref": ref}, "id": "call_" + ref}
            answer = AIMessage("", tool_calls=[call], usage_metadata=usage)
        answer.response_metadata = {"model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=answer)])


graph = create_agent(OrderModel(), [lookup_order])
'''


def test_an_unnamed_create_agent_is_named_after_its_target(invoke: Any, tmp_path: Path) -> None:
    """A single create_agent graph given no name: its agent is the target's, in the import
    as in the run, because the import reads the trace as that target's."""
    from projects import project

    spec = project(
        tmp_path,
        SINGLE_AGENT,
        module="orders.py",
        targets={"orders": "graph"},
        data=[{"id": r, "inputs": {"question": f"where is order {r}?"}} for r in ("A1", "B2")],
        evaluators="[handoff_chain_length, token_cost]",
        extra="pricing: {tiny-model: {input: 1.0, output: 2.0}}\n",
    )
    local, imported, result = run_and_import(invoke, spec, "orders", tmp_path)
    assert result.exit_code == 0, result.output
    assert_same(local, imported)
    for row in by_row(imported).values():
        assert row["trace"]["agent_path"] == ["orders"]
        assert [t["name"] for t in row["trace"]["tool_calls"]] == ["lookup_order"]
        assert row["scores"]["cost_usd"] == pytest.approx((130 * 1.0 + 13 * 2.0) / 1e6)
