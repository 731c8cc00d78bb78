"""Experiments read back from LangSmith: made by the seed's plain ``langsmith.evaluate()``
(or uploaded by agenteval), then compared, imported and gated by agenteval."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langsmith import Client, evaluate
from langsmith_stub import LangSmithStandIn, serving
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.report import comparison, sources

# The seed creates its examples with ``outputs=``, which the client now calls deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:'outputs' is deprecated:DeprecationWarning")
ROOT = Path(__file__).resolve().parent.parent
DATASET = "multi-agent-routing-evals"
runner = CliRunner()

# The seed's dataset: four requests with the agents and terms each one needs.
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


# The seed's evaluators, as written there (the judge is replaced by a rule: no model here).
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


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def seed_experiments(server: LangSmithStandIn) -> tuple[str, str]:
    """The seed's two evaluate() calls, against the stand-in."""
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


def test_compare_reads_the_seeds_evaluate_experiments(server):
    supervisor, swarm = seed_experiments(server)
    assert re.fullmatch(r"supervisor-v1-[0-9a-f]{8}", supervisor)
    server.requests.clear()

    result = invoke("compare", "--from-langsmith", supervisor, swarm, "--seed", "1")
    assert result.exit_code == 0, result.output
    assert "supervisor-v1 vs swarm-v1 · 4 paired examples" in result.output
    lines = {line.split()[0]: line.split() for line in result.output.splitlines() if line.strip()}
    assert lines["routing"][1:4] == ["accuracy", "100.0%", "62.5%"]
    assert lines["coverage"][1:3] == ["100.0%", "87.5%"]
    assert lines["routing_quality"][1:3] == ["1", "0.5"]
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


def test_unknown_or_ambiguous_names_and_a_missing_key_are_one_line(server, monkeypatch):
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


def test_child_runs_give_the_same_tokens_and_handoffs_as_a_local_run(server, tmp_path):
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

    # run SPEC --from-langsmith: imported under its own name, priced and gated by the spec
    imported = invoke("run", spec, "--from-langsmith", name, "--store", store)
    assert imported.exit_code == 1, imported.output  # the spec's gate applies to it
    assert "swarm-graph: routing accuracy has no value (threshold >= 0.9)" in imported.output
    assert "from LangSmith · 3 examples" in imported.output
    assert f"swarm-graph: {name} (imported)" in imported.output
    assert "$" in imported.output  # cost from the spec's prices
    again = invoke("run", spec, "--from-langsmith", name, "--store", store)
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


def test_run_from_langsmith_imports_so_compare_and_report_work_offline(
    server, tmp_path, monkeypatch
):
    supervisor, swarm = seed_experiments(server)
    store = tmp_path / "db"
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(data=ROOT / "datasets" / "routing.jsonl"))
    both = ("--from-langsmith", supervisor, "--from-langsmith", swarm)
    result = invoke("run", spec, *both, "--store", store, "--json", tmp_path / "out.json")
    assert result.exit_code == 1, result.output
    assert "swarm: routing accuracy = 62.5%, threshold >= 0.9" in result.output.replace(
        "swarm-v1", "swarm"
    )
    assert "routing accuracy" in result.output and "62.5%" in result.output
    assert "langsmith: swarm-v1: http://localhost/o/" in result.output
    exported = json.loads((tmp_path / "out.json").read_text())
    assert [e["name"] for e in exported["experiments"]] == [supervisor, swarm]
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


def test_compare_footer_prints_the_url_of_uploaded_experiments(server, tmp_path):
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

    # read back from LangSmith, the uploaded experiment compares with its local self
    remote = invoke("compare", "--from-langsmith", first)
    assert remote.exit_code == 0, remote.output
    (back,) = sources.from_langsmith([first])
    (mine,) = sources.load([first], store)
    assert back.target == "swarm" and back.dataset_hash == mine.dataset_hash
    for key in ("routing_accuracy", "resolution_coverage", "handoff_chain_length", "cost_usd"):
        assert back.per_example(key) == pytest.approx(mine.per_example(key)), key
