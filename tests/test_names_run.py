"""Names in the dataset checked against the system, through the CLI on the demo: said
before any call, again with the run's warnings and in the comments of the rows' scores;
--strict (or strict_names) refuses the run; a function target is checked after the run
against what its traces show; ``dataset validate --spec`` says the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenteval_cli.core.errors import UserError
from agenteval_cli.store.db import Store

PAYMENT = "I need to change my payment method to a credit card."  # the demo routes it to billing
SSO = "My SSO integration is returning error code SAML-401."  # and this to tech_support


def write_spec(folder: Path, rows: list[dict], targets: dict[str, Any], **more: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {
        "experiment_prefix": "names",
        "dataset": "data.jsonl",
        "targets": targets,
        "evaluators": ["routing_accuracy"],
    } | more
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def demo_rows(expected: list[str]) -> list[dict]:
    return [
        {"id": "pay", "inputs": {"question": PAYMENT}, "outputs": {"expected_agents": expected}},
        {
            "id": "pay2",
            "inputs": {"question": PAYMENT},
            "outputs": {"expected_agents": ["billing"]},
        },
    ]


SUPERVISOR = {"supervisor": "agenteval_cli.demo.supervisor:graph"}


def results_of(db: Path) -> dict[str, Any]:
    with Store(db) as store:
        (record,) = store.experiments()
        return {s.result.example_id: s.result for s in store.results(record.id)}


def test_a_misnamed_agent_is_said_before_any_call_and_under_its_rows(tmp_path, invoke):
    spec = write_spec(tmp_path, demo_rows(["billing", "bill"]), SUPERVISOR)
    db, out = tmp_path / "a.db", tmp_path / "out.json"
    result = invoke("run", spec, "--store", db, "--json", out)
    assert result.exit_code == 0, result.output
    line = (
        f"{tmp_path / 'data.jsonl'}: row 1: expected_agents: 'bill' is no agent of target "
        "'supervisor' (nearest: 'billing')"
    )
    text = result.text
    assert text.index(f"note: {line}") < text.index("names: 2 examples")  # before any call
    assert text.index("routing accuracy") < text.index(f"warning: {line}")  # under the table
    assert text.count(line) == 2
    assert json.loads(out.read_text())["warnings"] == [line]
    # the figure stays computed (billing ran, 'bill' did not), and its comment says why
    pay = results_of(db)["pay"]
    (score,) = [s for s in pay.scores if s.key == "routing_accuracy"]
    assert score.score == 0.5
    assert score.comment == (
        "invoked ['supervisor', 'billing']; missing ['bill']; "
        "'bill' is no agent of target 'supervisor' (nearest: 'billing')"
    )
    (plain,) = [s for s in results_of(db)["pay2"].scores if s.key == "routing_accuracy"]
    assert plain.comment == "invoked ['supervisor', 'billing']"


def test_the_api_report_warns_of_a_misnamed_tool(tmp_path):
    import agenteval_cli

    rows = [
        {
            "id": "pay",
            "inputs": {"question": PAYMENT},
            "outputs": {"required_tools": ["update_payment"]},
        }
    ]
    spec = write_spec(tmp_path, rows, SUPERVISOR)
    report = agenteval_cli.run(spec, store=tmp_path / "a.db")
    line = (
        f"{tmp_path / 'data.jsonl'}: row 1: required_tools: 'update_payment' is no tool of "
        "target 'supervisor' (nearest: 'update_payment_method')"
    )
    assert report.warnings == [line]
    assert report.name_warnings == [line]
    with pytest.raises(UserError) as refused:
        agenteval_cli.run(spec, store=tmp_path / "b.db", strict=True)
    assert str(refused.value).startswith(line)


@pytest.mark.parametrize("how", ["--strict", "strict_names"])
def test_strict_refuses_the_run_before_any_call(tmp_path, invoke, how):
    more = {"strict_names": True} if how == "strict_names" else {}
    spec = write_spec(tmp_path, demo_rows(["tech"]), SUPERVISOR, **more)
    db = tmp_path / "a.db"
    args = ["run", spec, "--store", db, *([how] if how == "--strict" else [])]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert (
        f"{tmp_path / 'data.jsonl'}: row 1: expected_agents: 'tech' is no agent of target "
        "'supervisor' (nearest: 'tech_support')"
    ) in result.text
    with Store(db) as store:
        assert list(store.experiments()) == []  # nothing ran


def test_dataset_validate_says_the_same(tmp_path, invoke):
    spec = write_spec(tmp_path, demo_rows(["tech"]), SUPERVISOR)
    result = invoke("dataset", "validate", "--spec", spec)
    assert result.exit_code == 0, result.output
    assert (
        f"warning: {tmp_path / 'data.jsonl'}: row 1: expected_agents: 'tech' is no agent of "
        "target 'supervisor' (nearest: 'tech_support')"
    ) in result.text
    refused = invoke("dataset", "validate", "--spec", spec, "--strict")
    assert refused.exit_code == 2
    assert "row 1: expected_agents: 'tech' is no agent of target 'supervisor'" in refused.text
    strict = write_spec(tmp_path / "strict", demo_rows(["tech"]), SUPERVISOR, strict_names=True)
    assert invoke("dataset", "validate", "--spec", strict).exit_code == 2


FUNCTION = """
from langchain_core.messages import HumanMessage
from agenteval_cli.demo.supervisor import build_graph


def answer(inputs):
    graph = build_graph()  # built on each call: nothing to read before the run
    state = {"messages": [HumanMessage(inputs["question"])], "resolution_notes": []}
    return {"final_response": graph.invoke(state)["messages"][-1].content}
"""


def test_a_function_target_is_checked_after_the_run_against_its_traces(tmp_path, invoke):
    (tmp_path / "desk.py").write_text(FUNCTION)
    rows = [
        {"id": "pay", "inputs": {"question": PAYMENT}, "outputs": {"expected_agents": ["bill"]}},
        {
            "id": "sso",
            "inputs": {"question": SSO},
            "outputs": {"expected_agents": ["tech_support"]},
        },
    ]
    spec = write_spec(tmp_path, rows, {"desk": "desk.py:answer"})
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    assert "note:" not in result.text  # nothing known before the run
    assert (
        f"warning: {tmp_path / 'data.jsonl'}: row 1: expected_agents: no agent of target "
        "'desk' ran under the name 'bill' in this run (nearest: 'billing')"
    ) in result.text
    assert result.text.count("warning:") == 1  # tech_support ran: it is the system's
    # the stored comment of the row's routing score names it too, the other row's does not
    scores = {key: {s.key: s for s in r.scores} for key, r in results_of(tmp_path / "a.db").items()}
    pay, sso = scores["pay"]["routing_accuracy"], scores["sso"]["routing_accuracy"]
    assert pay.score == 0.0 and pay.comment is not None
    assert pay.comment.endswith(
        "no agent of target 'desk' ran under the name 'bill' in this run (nearest: 'billing')"
    )
    assert sso.score == 1.0 and "'bill'" not in (sso.comment or "")


def test_the_demo_dataset_names_only_real_agents(invoke, demo_spec):
    result = invoke("dataset", "validate", "--spec", demo_spec)
    assert result.exit_code == 0
    assert "warning" not in result.text


@pytest.mark.slow
@pytest.mark.long
def test_on_ray_the_rows_comments_name_the_unknown_agent_too(tmp_path, invoke):
    pytest.importorskip("ray")
    spec = write_spec(tmp_path, demo_rows(["billing", "bill"]), SUPERVISOR)
    db = tmp_path / "a.db"
    result = invoke("run", spec, "--store", db, "--executor", "ray")
    assert result.exit_code == 0, result.output
    (score,) = [s for s in results_of(db)["pay"].scores if s.key == "routing_accuracy"]
    assert (score.score, score.comment) == (
        0.5,
        "invoked ['supervisor', 'billing']; missing ['bill']; "
        "'bill' is no agent of target 'supervisor' (nearest: 'billing')",
    )


def test_a_turns_unknown_name_is_in_that_turns_comments_and_the_conversations(tmp_path, invoke):
    rows = [
        {
            "id": "talk",
            "inputs": {"turns": [PAYMENT, SSO]},
            "outputs": {"turns": [{"expected_agents": ["billing"]}, {"expected_agents": ["tech"]}]},
        }
    ]
    spec = write_spec(tmp_path, rows, SUPERVISOR)
    db = tmp_path / "a.db"
    result = invoke("run", spec, "--store", db)
    assert result.exit_code == 0, result.output
    assert (
        f"{tmp_path / 'data.jsonl'}: row 1 turn 2: turns[].expected_agents: 'tech' is no agent "
        "of target 'supervisor' (nearest: 'tech_support')"
    ) in result.text
    talk = results_of(db)["talk"]
    note = "'tech' is no agent of target 'supervisor' (nearest: 'tech_support')"
    first, second = ({s.key: s for s in turn.scores} for turn in talk.turns or [])
    assert note not in (first["routing_accuracy"].comment or "")
    assert second["routing_accuracy"].comment.endswith(f"; {note}")
    assert second["routing_accuracy"].score == 0.0
    (whole,) = [s for s in talk.scores if s.key == "routing_accuracy"]
    assert whole.comment.endswith(f"; {note}")


def test_skills_a_plain_string_argument_loads_are_checked_after_the_run(tmp_path, invoke):
    """``load_skill(skill_name: str)`` lists no choices: the expected skills are checked
    against those the run's traces loaded."""
    question = "My invoice INV-42 needs a refund."  # the skills agent loads 'billing'
    rows = [
        {"id": "r1", "inputs": {"question": question}, "outputs": {"expected_skills": ["bill"]}},
        {"id": "r2", "inputs": {"question": question}, "outputs": {"expected_skills": ["billing"]}},
    ]
    target = {"target": "forms.patterns:skills", "skill_tools": ["load_skill"]}
    spec = write_spec(tmp_path, rows, {"skills": target}, evaluators=["skill_accuracy"])
    result = invoke("run", spec, "--store", tmp_path / "a.db")
    assert result.exit_code == 0, result.output
    assert (
        f"warning: {tmp_path / 'data.jsonl'}: row 1: expected_skills: no skill of target "
        "'skills' was loaded under the name 'bill' in this run (nearest: 'billing')"
    ) in result.text
    assert result.text.count("warning:") == 1


FRESH_AGENT = '''
from langchain.agents import create_agent
from langchain_core.tools import tool
from forms.model import form_model, text_of
from forms.policy import agent_tools_supervisor, specialist
from forms.tools import TOOL_OF


@tool
def ask_billing(query: str) -> str:
    """Ask the billing agent about invoices and refunds."""
    model = form_model("fresh", "billing", specialist("billing"))
    agent = create_agent(model, [TOOL_OF["billing"]], name="billing")  # built on each call
    return text_of(agent.invoke({"messages": [{"role": "user", "content": query}]})["messages"][-1])


graph = create_agent(
    form_model("fresh", "supervisor", agent_tools_supervisor(["billing"]), large=True),
    [ask_billing],
    name="supervisor",
)
'''


def test_an_agent_built_on_each_call_is_said_unknown_before_the_run_and_known_after(
    tmp_path, invoke
):
    (tmp_path / "fresh.py").write_text(FRESH_AGENT)
    question = "My invoice INV-42 needs a refund."
    rows = [
        {"id": "r", "inputs": {"question": question}, "outputs": {"expected_agents": ["billing"]}}
    ]
    spec = write_spec(tmp_path, rows, {"fresh": "fresh.py:graph"})
    db = tmp_path / "a.db"
    result = invoke("run", spec, "--store", db)
    assert result.exit_code == 0, result.output
    where = f"{tmp_path / 'data.jsonl'}: row 1: expected_agents:"
    said = f"{where} 'billing' is no agent of target 'fresh' (nearest: 'supervisor')"
    assert f"note: {said}" in result.text
    assert f"warning: {said}" not in result.text
    assert (
        f"warning: {where} 'billing' is an agent of target 'fresh' after all: the run's traces "
        "show it, though its graph did not hold it when loaded"
    ) in result.text
    (score,) = [s for s in results_of(db)["r"].scores if s.key == "routing_accuracy"]
    assert (score.score, score.comment) == (1.0, "invoked ['supervisor', 'billing']")


def test_imported_traces_are_checked_against_what_they_show(tmp_path, invoke):
    """``import --otlp``: no graph is loaded, so the names are checked against the traces."""
    from otel_recording import recording

    rows = [
        {"id": "pay", "inputs": {"question": PAYMENT}, "outputs": {"expected_agents": ["bill"]}},
        {
            "id": "sso",
            "inputs": {"question": SSO},
            "outputs": {"expected_agents": ["tech_support"]},
        },
    ]
    spec = write_spec(tmp_path, rows, SUPERVISOR)
    with recording() as spans:
        ran = invoke("run", spec, "--store", tmp_path / "ran.db")
        assert ran.exit_code == 0, ran.output
        traces = spans.write(tmp_path / "supervisor.otlp.jsonl")
    out = tmp_path / "read.json"
    result = invoke("import", spec, "--otlp", traces, "--store", tmp_path / "a.db", "--json", out)
    assert result.exit_code == 0, result.output
    line = (
        f"{tmp_path / 'data.jsonl'}: example 'pay': expected_agents: no agent of target "
        "'supervisor' ran under the name 'bill' in the imported traces (nearest: 'billing')"
    )
    assert f"warning: {line}" in result.text
    assert json.loads(out.read_text())["warnings"] == [line]


def function_desk(tmp_path: Path, pay: str = "bill") -> Path:
    """The function target of the test above on its two rows: only its traces tell its
    agents; the first row expects ``pay``."""
    (tmp_path / "desk.py").write_text(FUNCTION)
    rows = [
        {"id": "pay", "inputs": {"question": PAYMENT}, "outputs": {"expected_agents": [pay]}},
        {
            "id": "sso",
            "inputs": {"question": SSO},
            "outputs": {"expected_agents": ["tech_support"]},
        },
    ]
    return write_spec(tmp_path, rows, {"desk": "desk.py:answer"})


BILL = "no agent of target 'desk' ran under the name 'bill' in this run (nearest: 'billing')"


def test_the_check_after_a_run_reads_no_result_back(tmp_path, monkeypatch):
    """What the traces show is gathered as each result is stored: a finished run whose
    rows name only agents its traces show reads none of its results back from the store
    (for its names nor for its one-agent verdict), and warns of nothing."""
    from agenteval_cli.execution import experiment
    from agenteval_cli.spec.model import load_spec

    prepared = experiment.prepare(load_spec(function_desk(tmp_path, pay="billing")))
    read: list[str] = []
    original = Store.results

    def counted(self: Store, experiment_id: str, **kwargs: Any) -> Any:
        read.append(experiment_id)
        return original(self, experiment_id, **kwargs)

    monkeypatch.setattr(Store, "results", counted)
    with Store(tmp_path / "a.db") as store:
        assert experiment.execute(prepared, store) == "finished"
        monkeypatch.setattr(Store, "results", original)
        (record,) = prepared.experiments.values()
        scores = {s.result.example_id: s.result.scores for s in store.results(record.id)}
    assert read == []
    assert prepared.warnings == []
    assert {key: [s.score for s in found] for key, found in scores.items()} == {
        "pay": [1.0],
        "sso": [1.0],
    }


def test_a_resumed_run_checks_the_names_of_its_earlier_results_too(tmp_path, invoke):
    """Resumed with only the row naming 'sso' left, the run's traces show tech_support
    alone, the earlier result billing: the nearest name to 'bill' is read from both."""
    spec = function_desk(tmp_path)
    db = tmp_path / "a.db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE example_id = 'sso'")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    resumed = invoke("run", spec, "--resume", "--store", db)
    assert resumed.exit_code == 0, resumed.output
    assert f"row 1: expected_agents: {BILL}" in resumed.text
