"""Experiments uploaded to the in-test LangSmith server, and local runs that send nothing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langsmith_stub import LangSmithStandIn
from typer.testing import CliRunner

from agenteval_cli.cli import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
SPEC = """
experiment_prefix: routing
dataset: {{path: {data}, name: multi-agent-routing-evals}}
targets:
  supervisor: agenteval_cli.demo.supervisor:graph
  swarm: {{target: agenteval_cli.demo.swarm:graph, initial_state: {{resolution_notes: []}}}}
evaluators: [routing_accuracy, resolution_coverage, handoff_chain_length, token_cost]
pricing:
  scripted-large: {{input: 2.50, output: 10.00}}
  scripted-small: {{input: 0.15, output: 0.60}}
"""


@pytest.fixture
def spec(tmp_path) -> Path:
    path = tmp_path / "routing.yaml"
    path.write_text(SPEC.format(data=ROOT / "datasets" / "routing.jsonl"))
    return path


def stored_experiments(store: Path) -> dict[str, str]:
    db = sqlite3.connect(store)
    return dict(db.execute("SELECT target, name FROM experiments"))


@pytest.mark.slow
def test_run_upload_sends_runs_linked_to_examples_with_feedback(server, spec, tmp_path, invoke):
    store = tmp_path / "db"
    result = invoke("run", spec, "--upload", "--limit", "4", "--store", store)
    assert result.exit_code == 0, result.output
    assert "not pushed yet" in result.output  # the dataset was pushed first, and it says so
    names = stored_experiments(store)
    dataset = server.dataset_by_name("multi-agent-routing-evals")
    examples = {
        e["metadata"]["agenteval_id"]: e["id"] for e in server.current_examples(dataset["id"])
    }
    db = sqlite3.connect(store)
    for target in ("supervisor", "swarm"):
        runs = server.runs_of(names[target])
        roots = [r for r in runs if not r.get("parent_run_id")]
        assert len(roots) == 4
        session = next(s for s in server.state.sessions.values() if s["name"] == names[target])
        assert session["reference_dataset_id"] == dataset["id"]
        results = {
            (row[0]): row
            for row in db.execute(
                "SELECT r.example_id, r.id FROM results r JOIN experiments e"
                " ON e.id = r.experiment_id WHERE e.target = ?",
                (target,),
            )
        }
        for root in roots:
            example_id = root["extra"]["metadata"]["example_id"]
            assert example_id in results
            assert root["reference_example_id"] == examples[example_id]
            assert root["name"] == target
            # the graph's own runs are kept as the root's trace tree
            children = [r for r in runs if r["trace_id"] == root["id"] and r is not root]
            assert any(c["run_type"] == "llm" for c in children)
            assert all(c["dotted_order"].startswith(root["dotted_order"]) for c in children)
            # every score of the result became feedback on the root run
            (scores_json,) = db.execute(
                "SELECT r.scores_json FROM results r JOIN experiments e ON e.id = r.experiment_id"
                " WHERE e.target = ? AND r.example_id = ?",
                (target, example_id),
            ).fetchone()
            scores = {key: score for key, score, _ in json.loads(scores_json)}
            feedback = {
                f["key"]: f for f in server.state.feedback.values() if f["run_id"] == root["id"]
            }
            assert set(feedback) == set(scores) and len(scores) >= 6
            # the tokens and their parts go up as the root run's metadata
            usage = root["extra"]["metadata"]["agenteval_usage"]
            assert usage["input_tokens"] == scores["input_tokens"]
            assert usage["output_tokens"] == scores["output_tokens"]
            assert usage["cache_read_tokens"] is None  # the scripted models report none
            assert feedback["routing_accuracy"]["score"] == pytest.approx(
                scores["routing_accuracy"]
            )
            assert feedback["routing_accuracy"]["comment"]
            assert feedback["routing_accuracy"]["session_id"] == session["id"]
        url = f"http://localhost/o/00000000-0000-4000-8000-00000000cafe/datasets/{dataset['id']}"
        assert f"{url}/compare?selectedSessions={session['id']}" in result.output
        stored_url = db.execute(
            "SELECT u.url, u.status FROM langsmith_uploads u JOIN experiments e"
            " ON e.id = u.experiment_id WHERE e.target = ?",
            (target,),
        ).fetchone()
        assert stored_url == (f"{url}/compare?selectedSessions={session['id']}", "uploaded")
    assert "langsmith: compare:" in result.output
    # the key is in no output and nowhere in the store
    assert server.api_key not in result.output
    assert server.api_key.encode() not in store.read_bytes()
    for wal in tmp_path.glob("db*"):
        assert server.api_key.encode() not in wal.read_bytes()


@pytest.mark.slow
def test_failed_upload_keeps_results_and_upload_retries_without_duplicates(
    server, spec, tmp_path, invoke
):
    store = tmp_path / "db"
    server.inject(r"^POST /runs/multipart$", 500, times=1000)
    failed = invoke("run", spec, "--upload", "--limit", "3", "--store", store)
    assert failed.exit_code == 4
    assert "upload of routing-supervisor-" in failed.output
    assert "the local results are kept; retry with: agenteval upload routing-" in failed.output
    names = stored_experiments(store)
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM results").fetchone() == (6,)
    assert server.runs_of(names["supervisor"]) == []

    server.faults.clear()
    retried = invoke("upload", names["supervisor"], names["swarm"], "--store", store)
    assert retried.exit_code == 0, retried.output
    for target in ("supervisor", "swarm"):
        roots = [r for r in server.runs_of(names[target]) if not r.get("parent_run_id")]
        assert len(roots) == 3
        assert len({r["extra"]["metadata"]["example_id"] for r in roots}) == 3
    sessions = [s["name"] for s in server.state.sessions.values()]
    assert sorted(sessions) == sorted(names.values())  # no second experiment was created
    feedback_before = len(server.state.feedback)
    runs_before = len(server.state.runs)
    again = invoke("upload", names["supervisor"], "--store", store)
    assert again.exit_code == 0
    assert "0 run(s)" in again.output and "3 already there" in again.output
    assert (len(server.state.feedback), len(server.state.runs)) == (feedback_before, runs_before)


def test_upload_without_a_key_fails_before_running(server, spec, tmp_path, monkeypatch):
    monkeypatch.delenv("LANGSMITH_API_KEY")
    result = runner.invoke(app, ["run", str(spec), "--upload", "--store", str(tmp_path / "db")])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: LANGSMITH_API_KEY is not set (export LANGSMITH_API_KEY=<your key> "
        "(or LANGCHAIN_API_KEY); set LANGSMITH_ENDPOINT for a self-hosted LangSmith)"
    )
    assert not (tmp_path / "db").exists() or stored_experiments(tmp_path / "db") == {}
    local = runner.invoke(app, ["run", str(spec), "--limit", "1", "--store", str(tmp_path / "db")])
    assert local.exit_code == 0, local.output


def _subprocess_env(server: LangSmithStandIn) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN"))}
    env.update(
        LANGSMITH_TRACING="true",
        LANGCHAIN_TRACING_V2="true",
        LANGSMITH_API_KEY=server.api_key,
        LANGSMITH_ENDPOINT=server.url,
    )
    return env


@pytest.mark.slow
def test_a_local_run_sends_nothing_even_with_tracing_on_and_a_key_set(server, spec, tmp_path):
    env = _subprocess_env(server)
    # Control: the same graph, invoked directly in this environment, is traced to the server.
    control = (
        "from langchain_core.messages import HumanMessage\n"
        "from langchain_core.tracers.langchain import wait_for_all_tracers\n"
        "from agenteval_cli.demo.swarm import graph\n"
        "graph.invoke({'messages': [HumanMessage('I need to change my payment method')],"
        " 'resolution_notes': []})\n"
        "wait_for_all_tracers()\n"
    )
    subprocess.run([sys.executable, "-c", control], env=env, check=True, timeout=120, cwd=ROOT)
    assert server.calls(r"^POST /runs"), "control: tracing should reach the server"
    server.requests.clear()

    store = tmp_path / "db"
    command = [sys.executable, "-m", "agenteval_cli.cli", "run", str(spec), "--limit", "3"]
    done = subprocess.run(
        [*command, "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "routing accuracy" in done.stdout
    time.sleep(0.5)  # anything sent late by a background thread would have arrived
    assert server.requests == []
    assert stored_experiments(store)  # the run itself happened and was stored


def pushed_remote_spec(invoke, tmp_path: Path, store: Path) -> tuple[Path, str]:
    """Push the routing dataset, then a spec that runs on its tagged LangSmith version."""
    data = ROOT / "datasets" / "routing.jsonl"
    pushed = invoke("dataset", "push", data, "--name", "remote-routing", "--store", store)
    assert pushed.exit_code == 0, pushed.output
    tag = pushed.output.split("version tagged ")[1].split()[0]
    spec = tmp_path / "remote.yaml"
    spec.write_text(
        SPEC.replace(
            "{{path: {data}, name: multi-agent-routing-evals}}",
            "{{langsmith: remote-routing, version: {tag}}}",
        ).format(tag=tag)
    )
    return spec, tag


def test_a_spec_can_run_on_a_langsmith_dataset_and_rerun_offline(
    server, tmp_path, monkeypatch, invoke
):
    store = tmp_path / "db"
    spec, tag = pushed_remote_spec(invoke, tmp_path, store)
    first = invoke("run", spec, "--limit", "2", "--store", store)
    assert first.exit_code == 0, first.output
    assert server.calls(r"^GET /examples$")[-1].query["as_of"] == [tag]

    server.requests.clear()
    monkeypatch.delenv("LANGSMITH_API_KEY")  # offline now: the cached copy is used
    second = invoke("run", spec, "--limit", "2", "--store", store)
    assert second.exit_code == 0, second.output
    assert server.requests == []
    db = sqlite3.connect(store)
    runs = db.execute(
        "SELECT e.name, group_concat(r.example_id) FROM experiments e JOIN results r"
        " ON r.experiment_id = e.id WHERE e.target = 'swarm' GROUP BY e.id ORDER BY e.started_at"
    ).fetchall()
    assert len(runs) == 2 and runs[0][1] == runs[1][1]
    assert sorted(runs[0][1].split(",")) == ["billing-payment-method", "tech-sso-saml-error"]


def test_an_unpinned_langsmith_dataset_without_a_key_or_cache_is_one_line(
    server, tmp_path, monkeypatch
):
    monkeypatch.delenv("LANGSMITH_API_KEY")
    spec = tmp_path / "remote.yaml"
    spec.write_text(
        SPEC.replace(
            "{{path: {data}, name: multi-agent-routing-evals}}", "{{langsmith: x}}"
        ).format()
    )
    result = runner.invoke(app, ["run", str(spec), "--store", str(tmp_path / "db")])
    assert result.exit_code == 2
    assert "LANGSMITH_API_KEY is not set" in result.output and result.output.count("\n") == 1


def test_resuming_a_run_on_a_langsmith_dataset_works_offline_from_the_cache(
    server, tmp_path, monkeypatch, invoke
):
    store = tmp_path / "db"
    spec, _ = pushed_remote_spec(invoke, tmp_path, store)
    assert invoke("run", spec, "--limit", "3", "--store", store).exit_code == 0
    with sqlite3.connect(store) as db:  # as after a crash: half the results are missing
        db.execute("DELETE FROM results WHERE id % 2")
        db.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
        (kept,) = db.execute("SELECT COUNT(*) FROM results").fetchone()

    server.requests.clear()
    monkeypatch.delenv("LANGSMITH_API_KEY")  # offline: the cached examples are used
    resumed = invoke("run", spec, "--resume", "--store", store)
    assert resumed.exit_code == 0, resumed.output
    assert f"{6 - kept} call(s) left" in resumed.output
    assert server.requests == []
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT example_id) FROM results").fetchone() == (
        6,
        3,
    )
    assert set(db.execute("SELECT status FROM experiments").fetchall()) == {("finished",)}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pattern", "step", "model"),
    [
        (r".*", "reading dataset 'multi-agent-routing-evals'", "Dataset"),
        (r"^POST /sessions$", "creating experiment 'routing-{target}-", "TracerSession"),
    ],
)
def test_a_server_answering_empty_objects_is_one_line_and_upload_retries(
    server, spec, tmp_path, pattern, step, model, invoke
):
    store = tmp_path / "db"
    server.answer_empty(pattern)
    failed = runner.invoke(
        app, ["run", str(spec), "--upload", "--limit", "2", "--store", str(store)]
    )
    assert failed.exit_code == 4, failed.output
    assert failed.exception is None or isinstance(failed.exception, SystemExit)
    assert "Traceback" not in failed.output and "pydantic" not in failed.output
    errors = [line for line in failed.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, failed.output  # one line per experiment
    for target, line in zip(("supervisor", "swarm"), sorted(errors), strict=True):
        assert line.startswith(f"error: upload of routing-{target}-")
        assert f"failed: {step.format(target=target)}" in line
        assert f"the server at {server.url} gave an answer LangSmith does not give" in line
        assert f"(ValidationError: 3 validation errors for {model})" in line
    assert failed.output.count("the local results are kept; retry with: agenteval upload") == 2
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM results").fetchone() == (4,)
    assert db.execute("SELECT COUNT(*) FROM results WHERE error IS NOT NULL").fetchone() == (0,)

    server.hollow.clear()
    names = stored_experiments(store)
    retried = invoke("upload", names["supervisor"], names["swarm"], "--store", store)
    assert retried.exit_code == 0, retried.output
    for target in ("supervisor", "swarm"):
        roots = [r for r in server.runs_of(names[target]) if not r.get("parent_run_id")]
        assert len(roots) == 2


@pytest.mark.parametrize(
    ("args", "what", "model"),
    [
        (["dataset", "push", str(ROOT / "datasets" / "routing.jsonl"), "--name", "rows"],
         "reading dataset 'rows'", "Dataset"),
        (["compare", "--from-langsmith", "sup-1a2b", "swarm-3c4d"],
         "reading experiment 'sup-1a2b'", "TracerSessionResult"),
    ],
)  # fmt: skip
def test_other_commands_on_a_server_answering_empty_objects_are_one_line(
    server, args, what, model, tmp_path
):
    server.answer_empty(r".*")
    store = ["--store", str(tmp_path / "db")] if args[0] == "dataset" else []
    result = runner.invoke(app, [*args, *store])
    assert result.exit_code == 4, result.output  # a service failure
    assert result.output == (
        f"error: {what} failed: the server at {server.url} gave an answer LangSmith does not "
        f"give (ValidationError: 3 validation errors for {model}) (check LANGSMITH_ENDPOINT "
        "(a self-hosted LangSmith ends in /api/v1))\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pattern", "answered"),
    [
        (r"^POST /runs/query$", "POST /runs/query answered {empty} without the list of runs"),
        (r"^GET /feedback$", "GET /feedback answered {empty} where LangSmith sends a list"),
        (r"^GET /examples$", "GET /examples answered {empty} where LangSmith sends a list"),
    ],
)  # fmt: skip
def test_reading_experiments_when_a_list_answer_is_empty_is_one_line(
    server, spec, tmp_path, pattern, answered, invoke
):
    store = tmp_path / "db"
    assert invoke("run", spec, "--upload", "--limit", "2", "--store", store).exit_code == 0
    names = stored_experiments(store)
    server.answer_empty(pattern)
    imported = tmp_path / "imported.db"
    for args in (
        ["import", str(spec), names["supervisor"], "--store", str(imported)],
        ["compare", "--from-langsmith", names["supervisor"], names["swarm"]],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 4, result.output  # not an experiment without runs or scores
        assert result.output == (
            f"error: reading experiment {names['supervisor']!r} failed: the server at "
            f"{server.url} gave an answer LangSmith does not give "
            f"({answered.format(empty='an empty object')}) (check "
            "LANGSMITH_ENDPOINT (a self-hosted LangSmith ends in /api/v1))\n"
        )
    assert not imported.exists() or sqlite3.connect(imported).execute(
        "SELECT COUNT(*) FROM results"
    ).fetchone() == (0,)

    server.hollow.clear()
    read = runner.invoke(app, ["compare", "--from-langsmith", names["supervisor"], names["swarm"]])
    assert read.exit_code == 0, read.output


def test_a_re_upload_after_a_killed_upload_prints_no_tracebacks(server, spec, tmp_path, invoke):
    """An upload killed after its feedback was sent but before its results were marked sent:
    the next one gets a 409 Conflict per feedback, which agenteval treats as done; the
    client's log of each (a full traceback) is not shown."""
    store = tmp_path / "db"
    first = invoke("run", spec, "--upload", "--limit", "2", "--store", store)
    assert first.exit_code == 0, first.output
    feedback_before = len(server.state.feedback)
    assert feedback_before > 0
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM langsmith_sent")  # as if killed before marking them sent
    names = stored_experiments(store)
    command = [sys.executable, "-m", "agenteval_cli.cli", "upload", *names.values()]
    again = subprocess.run(
        [*command, "--store", str(store)],
        env=_subprocess_env(server),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr and "Error creating feedback" not in again.stderr
    assert "Conflict" not in again.stderr and "409" not in again.stderr
    assert "uploaded" in again.stdout or "run(s)" in again.stdout, again.stdout
    assert len(server.state.feedback) == feedback_before  # nothing sent twice


def test_the_client_log_keeps_other_records_redacted_and_drops_handled_conflicts(caplog):
    """The client logs on ``langsmith.client``, a child logger: the filters must be on it."""
    import logging

    from langsmith.utils import LangSmithConflictError, LangSmithError

    from agenteval_cli.langsmith.client import Credentials, connect

    key = "lsv2_pt_redaction_probe_0123456789"
    connect(Credentials("http://127.0.0.1:9", key))
    log = logging.getLogger("langsmith.client")
    with caplog.at_level(logging.WARNING):
        for error in (LangSmithConflictError("409 Conflict"), LangSmithError(f"500 {key}")):
            try:
                raise error
            except LangSmithError:
                log.error("Error creating feedback with %s", key, exc_info=True)
    [kept] = caplog.records  # the conflict is dropped, the other failure kept
    shown = logging.Formatter().format(kept)  # the message and the traceback
    assert key not in shown and "Error creating feedback with ***" in shown
    assert "LangSmithError: 500 ***" in shown


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_stop_ends_an_upload_with_one_line_and_the_next_one_finishes(
    server, spec, tmp_path, invoke, name
):
    store = tmp_path / "db"
    assert invoke("run", spec, "--limit", "2", "--store", store).exit_code == 0
    names = stored_experiments(store)
    server.latency_s = 0.5  # slow enough to be stopped mid-way
    command = [sys.executable, "-m", "agenteval_cli.cli", "upload", *names.values()]
    process = subprocess.Popen(
        [*command, "--store", str(store)],
        env=_subprocess_env(server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while not server.requests:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(getattr(signal, name))
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    db = sqlite3.connect(store)
    (sent,) = db.execute("SELECT COUNT(*) FROM langsmith_sent").fetchone()
    db.close()
    shown = "Ctrl-C" if name == "SIGINT" else name
    assert err.strip().splitlines()[-1] == (  # what was sent, and how to send the rest
        f"interrupted ({shown}); {sent} of 4 result(s) were sent to LangSmith and are marked "
        f"so; 'agenteval upload {names['supervisor']} {names['swarm']} --store {store}' sends "
        "the rest"
    ), err
    server.latency_s = 0
    again = invoke("upload", *names.values(), "--store", store)
    assert again.exit_code == 0, again.output
    for target in ("supervisor", "swarm"):
        roots = [r for r in server.runs_of(names[target]) if not r.get("parent_run_id")]
        assert len(roots) == 2


@pytest.mark.slow
def test_a_conversation_uploads_as_one_thread_with_a_trace_per_turn(server, tmp_path, invoke):
    """Each turn is a trace of its own in the conversation's thread (LangSmith's thread views
    group traces by thread_id), holding that turn's LangChain runs, every one of them in the
    thread; the conversation's root run is its row of the experiment."""
    spec = tmp_path / "conversations.yaml"
    text = (ROOT / "configs" / "conversations.yaml").read_text()
    spec.write_text(text.replace("../datasets/", f"{ROOT / 'datasets'}/"))
    store, out = tmp_path / "db", tmp_path / "r.json"
    result = invoke(
        "run",
        spec,
        "--upload",
        "--limit",
        "2",
        "--target",
        "swarm",
        "--store",
        store,
        "--json",
        out,
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (ROOT / "datasets" / "conversations.jsonl").open()][:2]
    (experiment,) = json.loads(out.read_text())["experiments"]
    stored = {r["example_id"]: r for r in experiment["results"]}
    (name,) = stored_experiments(store).values()
    runs = server.runs_of(name)
    tops = [r for r in runs if not r.get("parent_run_id")]
    roots = {
        r["extra"]["metadata"]["example_id"]: r
        for r in tops
        if "turn" not in r["extra"]["metadata"]
    }
    assert sorted(roots) == sorted(row["id"] for row in rows)
    for row in rows:
        root = roots[row["id"]]
        thread = root["extra"]["metadata"]["agenteval_thread_id"]
        assert "thread_id" not in root["extra"]["metadata"]  # the row is no turn of it
        assert root.get("reference_example_id")
        assert [r for r in runs if r.get("trace_id") == root["id"] and r is not root] == []
        turns = sorted(
            (
                r
                for r in tops
                if r["extra"]["metadata"].get("agenteval_conversation_run") == root["id"]
            ),
            key=lambda r: r["extra"]["metadata"]["turn"],
        )
        # a trace per turn the row scripts, in the conversation's thread, one after the other
        assert [r["extra"]["metadata"]["turn"] for r in turns] == list(
            range(1, len(row["inputs"]["turns"]) + 1)
        )
        assert {r["extra"]["metadata"]["thread_id"] for r in turns} == {thread}
        assert not any(r.get("reference_example_id") for r in turns)
        starts = [r["start_time"] for r in turns]
        assert starts == sorted(starts)
        for turn, kept in zip(turns, stored[row["id"]]["turns"], strict=True):
            inside = [r for r in runs if r.get("trace_id") == turn["id"] and r is not turn]
            # the turn's own LangChain runs, every one in the thread: a model run per call
            assert inside, turn["name"]
            assert {r["extra"]["metadata"].get("thread_id") for r in inside} == {thread}
            assert sum(r["run_type"] == "llm" for r in inside) == len(kept["trace"]["model_calls"])
            assert turn["inputs"] == kept["inputs"]
        turn_feedback = {
            (f["run_id"], f["key"])
            for f in server.state.feedback.values()
            if f["run_id"] in {r["id"] for r in turns}
        }
        # each turn's routing accuracy is its own feedback, beside the conversation's
        assert {(r["id"], "routing_accuracy") for r in turns} <= turn_feedback


def test_a_function_s_and_a_resumed_graph_s_turns_upload_with_their_own_runs(
    server, tmp_path, invoke
):
    """A function keeping its own history and an agent resumed from interrupt(): each turn's
    trace holds the model runs that turn made, none of another turn's."""
    from forms.harness import write_form
    from test_conversation_heldout import DESK_ROWS, OWN_HISTORY_ROWS

    spec = write_form(
        tmp_path,
        targets={"own": "forms.conversing:own_history", "desk": "forms.conversing:desk"},
        rows=[OWN_HISTORY_ROWS[0], DESK_ROWS[0]],
        max_error_rate=1,  # the function cannot resume: the desk's row is its error
    )
    store, out = tmp_path / "db", tmp_path / "r.json"
    result = invoke("run", spec, "--upload", "--store", store, "--json", out)
    assert result.exit_code == 0, result.output
    names = stored_experiments(store)
    checked = 0
    for experiment in json.loads(out.read_text())["experiments"]:
        runs = server.runs_of(names[experiment["target"]])
        for stored in experiment["results"]:
            if stored["status"] != "ok":
                continue
            turns = sorted(
                (
                    r
                    for r in runs
                    if not r.get("parent_run_id")
                    and r["extra"]["metadata"].get("example_id") == stored["example_id"]
                    and "turn" in r["extra"]["metadata"]
                ),
                key=lambda r: r["extra"]["metadata"]["turn"],
            )
            assert len(turns) == len(stored["turns"]) >= 2
            for turn, kept in zip(turns, stored["turns"], strict=True):
                inside = [r for r in runs if r.get("trace_id") == turn["id"] and r is not turn]
                llm = [r for r in inside if r["run_type"] == "llm"]
                assert len(llm) == len(kept["trace"]["model_calls"]), (turn["name"], kept)
                checked += 1
    assert checked == 9  # three turns of each of the three that answered


def test_a_stop_the_client_swallowed_still_ends_the_upload(
    server, spec, tmp_path, invoke, monkeypatch
):
    """A SIGTERM whose KeyboardInterrupt lands in langsmith's log filters (they catch
    BaseException in a ``finally``) is lost to the code; the stop is remembered, so the
    upload ends after the dataset's push with the stop's line, no run sent."""
    import contextlib

    from agenteval_cli.cli import stop_signals
    from agenteval_cli.langsmith import datasets as lsd

    store = tmp_path / "db"
    assert invoke("run", spec, "--limit", "2", "--store", store).exit_code == 0
    names = stored_experiments(store)
    pushed = lsd.push

    def push_then_swallow(*args, **kwargs):
        report = pushed(*args, **kwargs)
        with contextlib.suppress(BaseException):  # as langsmith.utils.filter_logs does
            stop_signals._interrupt(signal.SIGTERM, None)
        return report

    monkeypatch.setattr(lsd, "push", push_then_swallow)
    stopped = invoke("upload", *names.values(), "--store", store)
    assert stopped.exit_code == 130, stopped.output
    assert "interrupted (SIGTERM); 0 of 4 result(s) were sent" in stopped.text
    assert not server.state.runs  # stopped before any project or run was made
    monkeypatch.setattr(lsd, "push", pushed)
    again = invoke("upload", *names.values(), "--store", store)  # a new command: no stop
    assert again.exit_code == 0, again.output
