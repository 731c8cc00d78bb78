"""Experiments read back from LangSmith: made by a plain ``langsmith.evaluate()``
(or uploaded by agenteval), then compared, imported and gated by agenteval."""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
import warnings
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes import reply, scripted
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm
from langsmith import Client, evaluate
from langsmith_stub import LangSmithStandIn, serving

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.cost import token_cost
from agenteval_cli.evaluators.handoffs import handoff_chain_length
from agenteval_cli.langsmith.client import connect, credentials
from agenteval_cli.langsmith.experiments import read_experiments
from agenteval_cli.report import comparison
from agenteval_cli.results import sources
from agenteval_cli.store.db import Store
from agenteval_cli.trace.recorder import capture

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import ToolNode, create_react_agent

pytestmark = [
    # The seed creates its examples with ``outputs=``, which the client now calls deprecated.
    pytest.mark.filterwarnings("ignore:'outputs' is deprecated:DeprecationWarning"),
    # create_react_agent is deprecated in langgraph 1.x, yet langgraph-supervisor builds on it.
    pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecationWarning"),
]
ROOT = Path(__file__).resolve().parent.parent
DATASET = "multi-agent-routing-evals"

# A routing dataset: four requests with the agents and terms each one needs.
SEED_INPUTS = [
    {"question": "I need to change my payment method to a credit card."},
    {"question": "My SSO integration is returning error code SAML-401."},
    {"question": "I want to upgrade to Enterprise and also fix my broken SSO."},
    {"question": "Can you tell me who my account manager is?"},
]
SEED_OUTPUTS = [
    {"expected_agents": ["billing"], "must_mention": ["payment", "credit card"]},
    {"expected_agents": ["tech_support"], "must_mention": ["SSO", "SAML"]},
    {"expected_agents": ["tech_support", "account"], "must_mention": ["SSO", "upgrade"]},
    {"expected_agents": ["account"], "must_mention": ["account manager"]},
]


# Evaluators as a LangSmith user writes them (the judge is replaced by a rule: no model here).
def resolution_coverage(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
    text = outputs.get("final_response", "").lower()
    notes = " ".join(outputs.get("resolution_notes", [])).lower()
    combined = text + " " + notes
    must_mention = reference_outputs.get("must_mention", [])
    hits = sum(1 for t in must_mention if t.lower() in combined)
    return {
        "key": "resolution_coverage",
        "score": hits / len(must_mention) if must_mention else 1.0,
    }


def agent_routing_accuracy(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
    notes = " ".join(outputs.get("resolution_notes", [])).lower()
    expected = reference_outputs.get("expected_agents", [])
    hits = sum(1 for agent in expected if agent.lower() in notes)
    return {"key": "routing_accuracy", "score": hits / len(expected) if expected else 1.0}


def routing_judge(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
    notes = " ".join(outputs.get("resolution_notes", [])).lower()
    ok = all(a in notes for a in reference_outputs["expected_agents"])
    return {"key": "routing_quality", "score": 1.0 if ok else 0.0, "comment": notes}


def _routed(question: str, rules: dict[str, str], first_only: bool) -> dict:
    agents = list(dict.fromkeys(agent for term, agent in rules.items() if term in question))
    agents = agents[:1] if first_only else agents
    reply = question.split(" and ")[0] if first_only else question
    return {"final_response": reply, "resolution_notes": [f"{a}: resolved" for a in agents]}


def supervisor_target(inputs: dict) -> dict:
    """Reaches every domain of a request."""
    rules = {
        "payment": "billing",
        "SSO": "tech_support",
        "upgrade": "account",
        "manager": "account",
    }
    return _routed(inputs["question"], rules, first_only=False)


def swarm_target(inputs: dict) -> dict:
    """Stops at the first domain, and sends the account manager question to billing."""
    rules = {"payment": "billing", "SSO": "tech_support", "manager": "billing"}
    return _routed(inputs["question"], rules, first_only=True)


@pytest.fixture
def server(monkeypatch):
    with serving(monkeypatch, runs_page_size=3) as stand_in:  # pages of 3 runs: pagination runs
        yield stand_in


def seed_experiments(server: LangSmithStandIn) -> tuple[str, str]:
    """Two evaluate() calls, against the stand-in."""
    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(
        dataset_name=DATASET, description="Routing and resolution evaluation dataset"
    )
    client.create_examples(dataset_id=dataset.id, inputs=SEED_INPUTS, outputs=SEED_OUTPUTS)
    names = []
    for target, prefix in ((supervisor_target, "supervisor-v1"), (swarm_target, "swarm-v1")):
        results = evaluate(
            target,
            data=DATASET,
            evaluators=[routing_judge, resolution_coverage, agent_routing_accuracy],
            experiment_prefix=prefix,
            max_concurrency=2,
            client=client,
        )
        names.append(results.experiment_name)
    client.flush()
    assert len(server.state.feedback) == 2 * 4 * 3
    return names[0], names[1]


@pytest.mark.slow
def test_compare_reads_the_seeds_evaluate_experiments(server, invoke):
    supervisor, swarm = seed_experiments(server)
    assert re.fullmatch(r"supervisor-v1-[0-9a-f]{8}", supervisor)
    server.requests.clear()

    result = invoke("compare", "--from-langsmith", supervisor, swarm, "--seed", "1")
    assert result.exit_code == 0, result.output
    assert "supervisor-v1 vs swarm-v1 · 4 paired examples" in result.output
    lines: dict[str, list[str]] = {}  # each row's figures, by its label's first word
    for line in result.output.splitlines():
        if line.strip():  # a label too long for 80 columns is cut short: its figures follow
            figures = [t for t in line.split()[1:] if re.fullmatch(r"[-+]?[\d.]+%?", t)]
            lines.setdefault(line.split()[0][:12], figures)
    assert lines["routing"][:2] == ["100.0%", "62.5%"]
    assert lines["coverage"][:2] == ["100.0%", "87.5%"]
    assert lines["routing_qual"][:2] == ["1", "0.5"]
    assert "examples where the targets disagree most" in result.output
    session = {s["name"]: s["id"] for s in server.state.sessions.values()}
    dataset_id = server.dataset_by_name(DATASET)["id"]
    url = f"http://localhost/o/00000000-0000-4000-8000-00000000cafe/datasets/{dataset_id}"
    assert f"langsmith: supervisor-v1: {url}/compare?selectedSessions={session[supervisor]}" in (
        result.output
    )
    assert (
        f"langsmith: compare: {url}/compare?selectedSessions="
        f"{session[supervisor]}%2C{session[swarm]}" in result.output
    )
    # reads only, through the client's query endpoints
    assert {f"{r.method} {r.path}" for r in server.requests} <= {
        "GET /info",
        "GET /sessions",
        f"GET /datasets/{dataset_id}",
        "POST /runs/query",
        "GET /feedback",
        "GET /examples",
    }
    assert len(server.calls("^POST /runs/query$")) > 3  # roots came in pages of 3

    # exact means, per example, as compare computes them
    sides = sources.from_langsmith(["supervisor-v1", "swarm-v1"])  # a unique prefix will do
    built = comparison.build(sides, seed=1)
    means = {row.key: row.means for row in built.rows}
    assert means == {
        "routing_accuracy": [1.0, 0.625],
        "resolution_coverage": [1.0, 0.875],
        "routing_quality": [1.0, 0.5],
        "error_rate": [0.0, 0.0],  # read without timing: no latency rows
    }
    assert [s.name for s in sides] == [supervisor, swarm]
    # the disagreements are the two requests the swarm got wrong
    assert {d.question for d in built.disagreements} == {
        SEED_INPUTS[2]["question"],
        SEED_INPUTS[3]["question"],
    }
    by_question = {r.inputs["question"]: r for r in sides[1].runs}
    run = by_question[SEED_INPUTS[3]["question"]]
    assert run.scores["routing_accuracy"] == 0.0
    assert run.reference == SEED_OUTPUTS[3]
    assert run.outputs == swarm_target(SEED_INPUTS[3])
    assert run.comments["routing_quality"] == "billing: resolved"


def test_unknown_or_ambiguous_names_and_a_missing_key_are_one_line(server, monkeypatch, invoke):
    supervisor, _ = seed_experiments(server)
    typo = supervisor.replace("supervisor", "supervisr")
    result = invoke("compare", "--from-langsmith", typo)
    assert result.exit_code == 2
    assert result.output == (
        f"error: no LangSmith experiment named '{typo}' at {server.url} "
        f"(did you mean '{supervisor}'?)\n"
    )
    ambiguous = invoke("compare", "--from-langsmith", "s")
    assert ambiguous.exit_code == 2 and ambiguous.output.count("\n") == 1
    assert "2 LangSmith experiments start with 's'" in ambiguous.output
    monkeypatch.delenv("LANGSMITH_API_KEY")
    keyless = invoke("compare", "--from-langsmith", supervisor)
    assert keyless.exit_code == 2
    assert keyless.output.startswith("error: LANGSMITH_API_KEY is not set")
    assert keyless.output.count("\n") == 1


SPEC = """
experiment_prefix: routing
dataset: {{path: {data}, name: routing}}
targets:
  swarm: {{target: agenteval_cli.demo.swarm:graph, initial_state: {{resolution_notes: []}}}}
evaluators: [routing_accuracy, resolution_coverage, handoff_chain_length, token_cost]
pricing:
  scripted-large: {{input: 2.50, output: 10.00}}
  scripted-small: {{input: 0.15, output: 0.60}}
thresholds:
  routing_accuracy: ">= 0.9"
"""


@pytest.mark.slow
def test_child_runs_give_the_same_tokens_and_handoffs_as_a_local_run(server, tmp_path, invoke):
    """A LangGraph target under evaluate(): its model and tool runs rebuild the trace."""
    from agenteval_cli.demo.swarm import graph

    data = ROOT / "datasets" / "routing.jsonl"
    store = tmp_path / "db"
    assert invoke("dataset", "push", data, "--name", "routing", "--store", store).exit_code == 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(data=data))
    local = invoke("run", spec, "--limit", "3", "--store", store)
    assert local.exit_code in (0, 1), local.output  # 1: the gate failed
    wanted = [json.loads(line)["id"] for line in data.read_text().splitlines()[:3]]

    def swarm(inputs: dict) -> dict:
        state = graph.invoke(
            {"messages": [HumanMessage(inputs["question"])], "resolution_notes": []}
        )
        return {"final_response": state["messages"][-1].content}

    client = Client(api_url=server.url, api_key=server.api_key)
    examples = [e for e in client.list_examples(dataset_name="routing")]
    examples = [e for e in examples if e.metadata["agenteval_id"] in wanted]
    name = evaluate(swarm, data=examples, experiment_prefix="swarm-graph", client=client)
    name = name.experiment_name
    client.flush()

    (remote,) = sources.from_langsmith([name])
    (stored,) = sources.load(["swarm"], store)
    assert remote.has_traces and sorted(remote.example_ids()) == sorted(wanted)
    for key in ("handoff_chain_length", "ping_pong", "input_tokens", "output_tokens"):
        assert remote.per_example(key) == stored.per_example(key), key
    local_paths = {r.example_id: r.agent_path for r in stored.runs}
    assert {r.example_id: r.agent_path for r in remote.runs} == local_paths
    assert any(r.handoffs for r in remote.runs)

    # import SPEC NAME: imported under its own name, priced and gated by the spec
    imported = invoke("import", spec, name, "--store", store)
    assert imported.exit_code == 1, imported.output  # the spec's gate applies to it
    assert "swarm-graph: routing accuracy has no value (threshold >= 0.9)" in imported.output
    assert "from LangSmith · 3 examples" in imported.output
    assert f"swarm-graph: {name} (imported)" in imported.output
    assert "$" in imported.output  # cost from the spec's prices
    again = invoke("import", spec, name, "--store", store)
    assert again.exit_code == 1
    db = sqlite3.connect(store)
    rows = db.execute(
        "SELECT COUNT(*) FROM results r JOIN experiments e ON e.id = r.experiment_id"
        " WHERE e.name = ?",
        (name,),
    ).fetchone()
    assert rows == (3,)  # imported again: refreshed, not doubled
    writes = len(server.calls("^(POST|PATCH|PUT|DELETE) "))
    uploaded = invoke("upload", name, "--store", store)  # it is there: nothing is sent
    assert uploaded.exit_code == 0, uploaded.output
    assert "0 run(s), 0 child run(s), 0 feedback; 3 already there" in uploaded.output
    assert len(server.calls("^(POST|PATCH|PUT|DELETE) ")) == writes


@pytest.mark.slow
def test_run_from_langsmith_imports_so_compare_and_report_work_offline(
    server, tmp_path, monkeypatch, invoke
):
    supervisor, swarm = seed_experiments(server)
    store = tmp_path / "db"
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(data=ROOT / "datasets" / "routing.jsonl"))
    result = invoke(
        "import", spec, supervisor, swarm, "--store", store, "--json", tmp_path / "out.json"
    )
    assert result.exit_code == 1, result.output
    assert "swarm: routing accuracy = 62.5%, threshold >= 0.9" in result.output.replace(
        "swarm-v1", "swarm"
    )
    assert "routing accuracy" in result.output and "62.5%" in result.output
    assert "langsmith: swarm-v1: http://localhost/o/" in result.output
    exported = json.loads((tmp_path / "out.json").read_text())
    assert [e["name"] for e in exported["experiments"]] == [supervisor, swarm]
    # the option of a run that did it before this release: refused with what a run calls
    both = ("--from-langsmith", supervisor, "--from-langsmith", swarm)
    conflicting = invoke("run", spec, *both, "--limit", "2", "--store", store)
    assert conflicting.exit_code == 2 and "cannot be combined with --limit" in conflicting.output

    server.requests.clear()
    monkeypatch.delenv("LANGSMITH_API_KEY")
    offline = invoke("compare", supervisor, swarm, "--store", store, "--seed", "1")
    assert offline.exit_code == 0, offline.output
    assert "supervisor-v1 vs swarm-v1 · 4 paired examples" in offline.output
    assert "62.5%" in offline.output and "87.5%" in offline.output
    assert "langsmith: swarm-v1: http://localhost/o/" in offline.output
    db = sqlite3.connect(store)
    stored = db.execute("SELECT name, status, prefix FROM experiments ORDER BY rowid").fetchall()
    assert stored == [
        (supervisor, "imported", "langsmith-import"),
        (swarm, "imported", "langsmith-import"),
    ]
    report = invoke("report", supervisor, swarm, "-o", tmp_path / "r.html", "--store", store)
    assert report.exit_code == 0, report.output
    assert server.requests == []


@pytest.mark.slow
def test_compare_footer_prints_the_url_of_uploaded_experiments(server, tmp_path, invoke):
    data = ROOT / "datasets" / "routing.jsonl"
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.split("thresholds:")[0].format(data=data))
    store = tmp_path / "db"
    uploaded = invoke("run", spec, "--upload", "--limit", "2", "--store", store)
    assert uploaded.exit_code == 0, uploaded.output
    local = invoke("run", spec, "--limit", "2", "--store", store)  # not uploaded
    assert local.exit_code == 0, local.output
    db = sqlite3.connect(store)
    first, second = [n for (n,) in db.execute("SELECT name FROM experiments ORDER BY rowid")]
    (url,) = db.execute("SELECT url FROM langsmith_uploads").fetchone()
    result = invoke("compare", first, second, "--store", store)
    assert result.exit_code == 0, result.output
    assert f"langsmith: swarm: {url}" in result.output
    assert result.output.count("langsmith:") == 1  # only the uploaded one has a URL

    # read back from LangSmith, the uploaded experiment equals its local self
    (back,) = sources.from_langsmith([first])
    (mine,) = sources.load([first], store)
    assert back.target == "swarm" and back.dataset_hash == mine.dataset_hash
    for key in ("routing_accuracy", "resolution_coverage", "handoff_chain_length", "cost_usd"):
        assert back.per_example(key) == pytest.approx(mine.per_example(key)), key


# -- traces of multi-agent graphs, read back ------------------------------------------------
# Each request runs a graph of scripted models, built afresh for every call. The local
# recorder's trace of one run is the reference; another run, traced by LangSmith (or
# uploaded by agenteval), is read back with --from-langsmith and must be attributed alike.


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look an invoice up."""
    return f"Invoice {invoice_id}: refunded"


@tool
def run_diagnostics(app: str) -> str:
    """Diagnose an app."""
    return f"{app}: fixed by the update"


def _specialist(name: str, work: Any, args: dict, answer: str, tokens: tuple) -> Any:
    model = scripted(
        f"{name}-model",
        reply(tools=[(work.name, args)], tokens=tokens[0]),
        reply(answer, tokens=tokens[1]),
    )
    return create_react_agent(model, tools=[work], name=name, prompt=f"You are {name}.")


def _billing() -> Any:
    return _specialist(
        "billing", lookup_invoice, {"invoice_id": "INV-42"}, "Refunded INV-42.", ((10, 4), (14, 5))
    )


def _tech() -> Any:  # its answer reports no usage: unknown tokens, not zero
    return _specialist("tech", run_diagnostics, {"app": "mobile"}, "Fixed.", ((9, 3), None))


def _boss(model: str, agents: list[str], final: str, tokens: tuple[int, int]) -> Any:
    steps = [
        reply(tools=[(f"transfer_to_{agent}", {})], tokens=(tokens[0] + 10 * i, tokens[1]))
        for i, agent in enumerate(agents)
    ]
    return scripted(model, *steps, reply(final, tokens=(tokens[0] + 30, 7)))


def flat_supervisor() -> Any:
    """supervisor → billing → supervisor → tech → supervisor."""
    model = _boss("supervisor-model", ["billing", "tech"], "Refunded and fixed.", (20, 2))
    return create_supervisor([_billing(), _tech()], model=model).compile()


def supervisor_of_supervisors() -> Any:
    """A top supervisor over two teams, each a supervisor with its own specialist: agents
    are two levels deep (``money_team > billing``), which no top-level node tells."""
    money = create_supervisor(
        [_billing()],
        model=_boss("money-model", ["billing"], "Money done.", (15, 1)),
        supervisor_name="money_supervisor",
    ).compile(name="money_team")
    tech = create_supervisor(
        [_tech()],
        model=_boss("tech-lead-model", ["tech"], "Tech done.", (16, 1)),
        supervisor_name="tech_supervisor",
    ).compile(name="tech_team")
    top = _boss("top-model", ["money_team", "tech_team"], "All done.", (25, 3))
    return create_supervisor([money, tech], model=top, supervisor_name="top_supervisor").compile()


def swarm_bounce() -> Any:
    """front_desk → billing → front_desk, each by a handoff tool: a ping-pong."""
    front = create_react_agent(
        scripted(
            "front-model",
            reply(tools=[("transfer_to_billing", {})], tokens=(3, 1)),
            reply("Your invoice is refunded.", tokens=(9, 6)),
        ),
        tools=[create_handoff_tool(agent_name="billing")],
        name="front_desk",
    )
    billing = create_react_agent(
        scripted(
            "billing-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "INV-42"})], tokens=(5, 2)),
            reply(tools=[("transfer_to_front_desk", {})], tokens=(8, 1)),
        ),
        tools=[lookup_invoice, create_handoff_tool(agent_name="front_desk")],
        name="billing",
    )
    return create_swarm([front, billing], default_active_agent="front_desk").compile()


def command_network() -> Any:
    """Plain function nodes: triage hands off to billing with a ``Command(goto=...)``."""
    triage_model = scripted("triage-model", reply("For billing.", tokens=(4, 2)))
    billing_model = scripted("billing-model", reply("Refunded.", tokens=(6, 2)))

    def triage(state: MessagesState) -> Command:
        return Command(
            goto="billing", update={"messages": [triage_model.invoke(state["messages"])]}
        )

    def billing(state: MessagesState) -> dict:
        return {"messages": [billing_model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("triage", triage, destinations=("billing",))
    builder.add_node("billing", billing)
    builder.add_edge(START, "triage")
    builder.add_edge("billing", END)
    return builder.compile()


@tool("get_weather")
def broken_weather(city: str) -> str:
    """Current weather for a city, from a service that is down."""
    raise ValueError(f"weather service down for {city}")


def failing_tool() -> Any:
    """One agent whose tool raises: the tool node answers with the error, the agent goes on."""
    model = scripted(
        "weather-model",
        reply(tools=[("get_weather", {"city": "SF"})], tokens=(5, 1)),
        reply("The service is down.", tokens=(8, 4)),
    )
    tools = ToolNode([broken_weather], handle_tool_errors=True)
    return create_react_agent(model, tools=tools, name="weather")


def failing_model() -> Any:
    """A supervisor hands off to an agent whose model raises: the request fails."""
    broken = create_react_agent(
        scripted("billing-model", RuntimeError("rate limited")), tools=[], name="billing"
    )
    model = _boss("supervisor-model", ["billing"], "unreached", (20, 2))
    return create_supervisor([broken], model=model).compile()


REQUESTS = {
    "Refund INV-42 and fix the mobile app.": flat_supervisor,
    "Refund INV-42, then fix the app, team by team.": supervisor_of_supervisors,
    "Refund INV-42 at the front desk.": swarm_bounce,
    "Refund INV-42 after triage.": command_network,
    "Weather in SF?": failing_tool,
    "Refund INV-42 while billing is rate limited.": failing_model,
}
FAILING = "Refund INV-42 while billing is rate limited."


def scripted_request(inputs: dict) -> dict:
    """The target: runs the request's graph, built afresh (scripted models answer once)."""
    graph = REQUESTS[inputs["question"]]()
    state = graph.invoke({"messages": [HumanMessage(inputs["question"])]})
    return {"final_response": state["messages"][-1].content}


def local_traces() -> dict[str, Trace]:
    """Each request's trace as the local recorder takes it."""
    traces = {}
    for question in REQUESTS:
        failing = pytest.raises(RuntimeError) if question == FAILING else nullcontext()
        with failing, capture() as recorder:
            scripted_request({"question": question})
        traces[question] = recorder.trace()
    return traces


def stored_traces(store: Path, name: str) -> dict[str, tuple[Trace, dict[str, Any]]]:
    """Question -> (trace, scores) of an experiment in a store."""
    with Store(store) as opened:
        record = opened.experiment(name)
        return {
            kept.inputs["question"]: (
                kept.result.trace,
                {s.key: s.score for s in kept.result.scores},
            )
            for kept in opened.results(record.id)
        }


def assert_attributed_alike(back: Trace, local: Trace) -> None:
    assert back.schema == 2
    assert back.agent_path == local.agent_path
    assert back.handoffs == local.handoffs
    assert [(c.path, c.model, c.input_tokens, c.output_tokens) for c in back.model_calls] == [
        (c.path, c.model, c.input_tokens, c.output_tokens) for c in local.model_calls
    ]
    assert [(t.path, t.name, t.args, t.kind, t.target, t.status) for t in back.tool_calls] == [
        (t.path, t.name, t.args, t.kind, t.target, t.status) for t in local.tool_calls
    ]
    assert back.tokens == local.tokens
    assert back.coordinators == local.coordinators
    assert handoff_chain_length()(back) == handoff_chain_length()(local)


@pytest.mark.slow
def test_langsmith_traces_of_multi_agent_graphs_are_attributed_like_local_ones(
    server, tmp_path, invoke
):
    local = local_traces()
    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(dataset_name="scripted-graphs")
    client.create_examples(
        dataset_id=dataset.id, inputs=[{"question": q} for q in REQUESTS], outputs=[{}] * 6
    )
    name = evaluate(
        scripted_request,
        data="scripted-graphs",
        experiment_prefix="scripted",
        max_concurrency=4,
        client=client,
    ).experiment_name
    client.flush()
    server.requests.clear()

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.split("thresholds:")[0].format(data=ROOT / "datasets" / "routing.jsonl"))
    store = tmp_path / "db"
    imported = invoke("import", spec, name, "--store", store)
    assert imported.exit_code == 0, imported.output
    assert {f"{r.method} {r.path}" for r in server.requests if r.method != "GET"} == {
        "POST /runs/query"  # one query for the roots, one for every run under them
    }
    back = stored_traces(store, name)
    assert set(back) == set(REQUESTS)
    for question, trace in local.items():
        read, scores = back[question]
        assert_attributed_alike(read, trace)
        # chain length, ping-pong and tokens were derived from the trace on import
        derived = {
            s["key"]: s["score"] for s in [*handoff_chain_length()(trace), *token_cost()(trace)]
        }
        assert scores["handoff_chain_length"] == derived["handoff_chain_length"]
        assert scores["ping_pong"] == float(derived["ping_pong"])
        assert scores.get("input_tokens") == derived.get("input_tokens")
        assert scores.get("output_tokens") == derived.get("output_tokens")

    # the facts themselves, beyond agreeing with the local recorder
    flat, hierarchy, swarm, network, weather, failed = (back[q][0] for q in REQUESTS)
    assert flat.agent_path == ["supervisor", "billing", "supervisor", "tech", "supervisor"]
    assert flat.tokens["tech-model"] == {"input": None, "output": None, "total": None}
    assert hierarchy.agent_path == [
        "top_supervisor",
        "money_supervisor",
        "billing",
        "money_supervisor",
        "top_supervisor",
        "tech_supervisor",
        "tech",
        "tech_supervisor",
        "top_supervisor",
    ]
    assert hierarchy.agent_paths == [
        ["top_supervisor"],
        ["money_team", "money_supervisor"],
        ["money_team", "billing"],
        ["tech_team", "tech_supervisor"],
        ["tech_team", "tech"],
    ]
    assert [(h.source, h.target, h.via) for h in hierarchy.handoffs][:4] == [
        ("top_supervisor", "money_supervisor", "tool"),
        ("money_supervisor", "billing", "tool"),
        ("billing", "money_supervisor", "edge"),
        ("money_supervisor", "top_supervisor", "edge"),
    ]
    assert back[next(iter(REQUESTS))][1]["ping_pong"] == 0.0
    assert [(h.source, h.target) for h in swarm.handoffs] == [
        ("front_desk", "billing"),
        ("billing", "front_desk"),
    ]
    assert back["Refund INV-42 at the front desk."][1]["ping_pong"] == 1.0
    assert [(h.source, h.target, h.via) for h in network.handoffs] == [
        ("triage", "billing", "command")
    ]
    # the conversation comes back too, in the order it happened
    assert [m["role"] for m in network.messages] == ["user", "assistant", "assistant"]
    # a tool's error is its output, as the local recorder words it
    (call,) = weather.tool_calls
    assert call.output == local["Weather in SF?"].tool_calls[0].output
    assert call.output == "ValueError: weather service down for SF"
    # the model that raised was reached, and reported nothing
    assert failed.agent_path == ["supervisor", "billing"]
    assert failed.model_calls[-1].input_tokens is None
    assert failed.error is not None and "rate limited" in failed.error


@pytest.mark.slow
def test_uploaded_run_trees_read_back_like_the_local_run(server, tmp_path, invoke):
    """agenteval run --upload keeps each call's run tree; read back, it gives the trace the
    local run recorded."""
    data = tmp_path / "requests.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "inputs": {"question": q}, "outputs": {}}) + "\n"
            for i, q in enumerate(REQUESTS)
        )
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "experiment_prefix: scripted\n"
        f"dataset: {{path: {data}, name: scripted-requests}}\n"
        "targets: {graphs: test_langsmith_experiments:scripted_request}\n"
        "evaluators: [handoff_chain_length, token_cost]\n"
        "max_error_rate: 0.5\n"  # one request fails by design
    )
    local_store, other_store = tmp_path / "local.db", tmp_path / "other.db"
    ran = invoke("run", spec, "--upload", "--store", local_store)
    assert ran.exit_code == 0, ran.output
    with Store(local_store) as opened:
        (experiment,) = opened.experiments()
    imported = invoke("import", spec, experiment.name, "--store", other_store)
    assert imported.exit_code == 0, imported.output
    local = stored_traces(local_store, experiment.name)
    back = stored_traces(other_store, experiment.name)
    assert set(back) == set(local) == set(REQUESTS)
    for question, (trace, scores) in local.items():
        read, read_scores = back[question]
        assert_attributed_alike(read, trace)
        assert read.messages == trace.messages
        assert [t.output for t in read.tool_calls] == [t.output for t in trace.tool_calls]
        if question == FAILING:  # a failed request is not scored locally
            continue
        for key in ("handoff_chain_length", "ping_pong", "input_tokens", "output_tokens"):
            assert read_scores[key] == scores[key], key


def _legacy_runs(project_id: str, example_id: str) -> list[dict[str, Any]]:
    """A request traced with model and tool runs only, as some tracers keep it: each run
    names its graph node in its metadata, none of the graph's own runs is there."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    root_id = str(uuid.uuid4())
    root_dotted = start.strftime("%Y%m%dT%H%M%S%fZ") + root_id
    runs = [
        {
            "id": root_id,
            "trace_id": root_id,
            "dotted_order": root_dotted,
            "name": "Target",
            "run_type": "chain",
            "session_id": project_id,
            "start_time": start,
            "end_time": start + timedelta(seconds=5),
            "inputs": {"question": "Refund INV-42."},
            "outputs": {"final_response": "Refunded."},
            "reference_example_id": example_id,
        }
    ]
    steps = [
        ("llm", "ChatModel", "supervisor", {}, (7, 2)),
        ("tool", "transfer_to_billing", "supervisor", {"__handoff_destination": "billing"}, None),
        ("llm", "ChatModel", "billing", {}, (11, 3)),
        ("tool", "transfer_back_to_supervisor", "billing", {}, None),
        ("llm", "ChatModel", "supervisor", {}, (13, 4)),
    ]
    for offset, (run_type, name, node, extra, tokens) in enumerate(steps, start=1):
        run_id = str(uuid.uuid4())
        begin = start + timedelta(seconds=offset * 0.5)
        metadata = {
            "langgraph_node": node,
            "langgraph_checkpoint_ns": f"{node}:{uuid.uuid4()}",
            "ls_model_name": "legacy-model" if run_type == "llm" else None,
            **extra,
        }
        outputs: dict[str, Any] = {"output": "ok"}
        if tokens is not None:
            usage = {"input_tokens": tokens[0], "output_tokens": tokens[1]}
            outputs = {"generations": [[{"text": "", "message": {"usage_metadata": usage}}]]}
        runs.append(
            {
                "id": run_id,
                "trace_id": root_id,
                "parent_run_id": root_id,
                "dotted_order": f"{root_dotted}.{begin.strftime('%Y%m%dT%H%M%S%fZ')}{run_id}",
                "name": name,
                "run_type": run_type,
                "session_id": project_id,
                "start_time": begin,
                "end_time": begin + timedelta(seconds=0.25),
                "inputs": {},
                "outputs": outputs,
                "extra": {"metadata": {k: v for k, v in metadata.items() if v is not None}},
            }
        )
    return runs


def test_model_and_tool_runs_alone_keep_the_older_rule(server, tmp_path, invoke):
    """Without the graph's chain runs there is no tree to attribute: the top-level node is
    the agent, handoffs are the handoff tools, and the trace says so (``schema`` 1)."""
    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(dataset_name="legacy")
    (example,) = client.create_examples(
        dataset_id=dataset.id, inputs=[{"question": "Refund INV-42."}], outputs=[{}]
    )["example_ids"]
    project = client.create_project("legacy-traces", reference_dataset_id=dataset.id)
    client.multipart_ingest(create=_legacy_runs(str(project.id), str(example)))
    client.flush()

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.split("thresholds:")[0].format(data=ROOT / "datasets" / "routing.jsonl"))
    store = tmp_path / "db"
    imported = invoke("import", spec, "legacy-traces", "--store", store)
    assert imported.exit_code == 0, imported.output
    (trace, scores) = stored_traces(store, "legacy-traces")["Refund INV-42."]
    assert trace.schema == 1  # the evaluators read it by the older rule
    assert trace.agent_path == ["supervisor", "billing", "supervisor"]
    assert [(h.source, h.target, h.tool) for h in trace.handoffs] == [
        ("supervisor", "billing", "transfer_to_billing"),
        ("billing", "supervisor", "transfer_back_to_supervisor"),
    ]
    assert trace.tokens == {"legacy-model": {"input": 31, "output": 9, "total": 40}}
    assert scores["handoff_chain_length"] == 2.0 and scores["ping_pong"] == 0.0
    # stored, it is read back as it was kept
    again = invoke("report", "legacy-traces", "-o", tmp_path / "r.html", "--store", store)
    assert again.exit_code == 0, again.output


def test_models_traced_outside_langchain_keep_their_usage(server, tmp_path):
    """``@traceable`` code calling a provider's client: OpenAI's response form, its usage
    from the response, else LangSmith's own count."""
    from langsmith import traceable

    @traceable(run_type="llm", name="gpt-4o-mini")
    def complete(messages: list[dict]) -> dict:
        answer = {"role": "assistant", "content": "Refunded."}
        return {
            "choices": [{"message": answer}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
        }

    @traceable(name="answer")
    def answer(question: str) -> str:
        return complete([{"role": "user", "content": question}])["choices"][0]["message"]["content"]

    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(dataset_name="plain-code")
    client.create_examples(dataset_id=dataset.id, inputs=[{"question": "Refund INV-42."}])
    name = evaluate(
        lambda inputs: {"final_response": answer(inputs["question"])},
        data="plain-code",
        client=client,
    ).experiment_name
    client.flush()
    ((_, result),) = read_experiments(connect(credentials()), [name])[0].pairs
    assert result.trace.schema == 2
    assert [
        (c.path, c.model, c.input_tokens, c.output_tokens) for c in result.trace.model_calls
    ] == [(["gpt-4o-mini"], "gpt-4o-mini", 12, 3)]
    assert [m["role"] for m in result.trace.messages] == ["user", "assistant"]


def test_model_runs_alone_keep_their_cache_and_reasoning_tokens(server, tmp_path, invoke):
    """Read back by the older rule too, a model run's usage keeps its cache reads, cache
    writes (Anthropic's 5-minute and 1-hour parts apart) and reasoning, and its provider."""
    client = Client(api_url=server.url, api_key=server.api_key)
    dataset = client.create_dataset(dataset_name="legacy-details")
    (example,) = client.create_examples(
        dataset_id=dataset.id, inputs=[{"question": "Refund INV-42."}], outputs=[{}]
    )["example_ids"]
    project = client.create_project("legacy-details", reference_dataset_id=dataset.id)
    runs = _legacy_runs(str(project.id), str(example))
    models = [run for run in runs if run["run_type"] == "llm"]
    details = [  # (input_token_details, output_token_details, ls_provider) per model run
        ({"cache_read": 4, "cache_creation": 0, FIVE_M: 1, ONE_H: 2}, None, "anthropic"),
        ({"cache_read": 8}, {"reasoning": 2}, "openai"),
        (None, None, None),
    ]
    for run, (inputs, outputs, provider) in zip(models, details, strict=True):
        usage = run["outputs"]["generations"][0][0]["message"]["usage_metadata"]
        if inputs is not None:
            usage["input_token_details"] = inputs
        if outputs is not None:
            usage["output_token_details"] = outputs
        if provider is not None:
            run["extra"]["metadata"]["ls_provider"] = provider
    client.multipart_ingest(create=runs)
    client.flush()

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.split("thresholds:")[0].format(data=ROOT / "datasets" / "routing.jsonl"))
    store = tmp_path / "db"
    imported = invoke("import", spec, "legacy-details", "--store", store)
    assert imported.exit_code == 0, imported.output
    (trace, _) = stored_traces(store, "legacy-details")["Refund INV-42."]
    assert trace.schema == 1
    got = [
        (
            c.input_tokens,
            c.output_tokens,
            c.cache_read_tokens,
            c.cache_write_tokens,
            c.reasoning_tokens,
            c.token_details,
            c.provider,
        )
        for c in trace.model_calls
    ]
    assert got == [
        (7, 2, 4, 3, None, {"cache_write_5m_tokens": 1, "cache_write_1h_tokens": 2}, "anthropic"),
        (11, 3, 8, None, 2, {}, "openai"),
        (13, 4, None, None, None, {}, None),
    ]


FIVE_M, ONE_H = "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"
