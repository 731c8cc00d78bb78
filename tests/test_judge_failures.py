"""A judge that cannot judge says so: a server down or a key refused fails the run (exit 3),
a refused key is found with one request, a true/false judge given numbers names the fix once,
a judge on a local server needs no provider key, and two evaluators writing one score key
are refused before any call. Through the CLI, the real openevals and the real OpenAI client,
against a server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from openai_server import openai_server

from agenteval_cli.store.db import Store

EXTERNAL = Path(__file__).parent / "data" / "external"
SECRET = "sk-test-4f1c9e0d2b7a-refused"
ROWS = 3  # tests/data/external/travel.jsonl, scored for two targets


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """Each console line whole, to compare line by line."""
    monkeypatch.setenv("COLUMNS", "400")


def write_spec(tmp_path: Path, evaluators: str) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {EXTERNAL / 'travel.jsonl'}\n"
        f"targets:\n  supervisor: {EXTERNAL / 'travel_graphs.py'}:supervisor_graph\n"
        f"  swarm: {EXTERNAL / 'travel_graphs.py'}:swarm_graph\n"
        f"evaluators:\n{evaluators}"
    )
    return spec


def judge_item(base_url: str, extra: str = "") -> str:
    return (
        "  - {name: quality, type: llm_judge, prompt: routing_quality, "
        f"model: 'openai:gpt-4o-mini', base_url: '{base_url}', "
        f"model_kwargs: {{max_retries: 0}}{extra}}}\n"
    )


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def stored_comments(tmp_path: Path, key: str) -> list[str]:
    with Store(tmp_path / "db") as store:
        return [
            found.comment or ""
            for experiment in store.experiments()
            for stored in store.results(experiment.id)
            for found in stored.result.scores
            if found.key == key
        ]


def test_a_judge_whose_server_is_down_fails_the_run(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    spec = write_spec(tmp_path, "  - routing_accuracy\n" + judge_item(closed_port_url()))
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    lines = result.output.splitlines()
    down = "evaluator 'quality' failed: judge call failed: OpenAIConnectionError: Connection error."
    assert f"    {down}" in lines
    assert lines[-1] == (
        "  run failed: evaluator(s) quality failed on every result (fix them, or leave them "
        "out of the spec)"
    )
    comments = stored_comments(tmp_path, "quality")
    assert len(comments) == 2 * ROWS
    assert all(c.startswith("evaluator 'quality' failed: judge call failed:") for c in comments)


def test_a_refused_key_stops_the_judge_after_one_request(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = 401
        spec = write_spec(tmp_path, "  - routing_accuracy\n" + judge_item(server.base_url))
        out = tmp_path / "r.json"
        result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 3, result.output
    assert len(server.requests) == 1  # not one per result
    refused = (
        "evaluator 'quality' failed: judge call failed: 401 OpenAIAuthenticationError: the key "
        "in OPENAI_API_KEY was refused; set a valid key (judge 'quality' made no further calls)"
    )
    assert f"    {refused}" in result.output.splitlines()
    assert stored_comments(tmp_path, "quality") == [refused] * (2 * ROWS)
    assert SECRET not in result.output and SECRET not in out.read_text()


def test_a_key_without_permission_is_named_too(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = 403
        spec = write_spec(
            tmp_path,
            judge_item(
                server.base_url, ", model_kwargs: {max_retries: 0, api_key: " + SECRET + "}"
            ).replace("model_kwargs: {max_retries: 0}, ", ""),
        )
        result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    assert len(server.requests) == 1
    assert (
        "403 OpenAIPermissionDeniedError: the api_key under model_kwargs has no permission for "
        "this model; use a key allowed to call it (judge 'quality' made no further calls)"
        in result.text
    )
    assert SECRET not in result.output


def test_a_judge_on_a_local_server_needs_no_provider_key(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with openai_server() as server:
        server.default = {"score": True, "reasoning": "fine"}
        spec = write_spec(tmp_path, judge_item(server.base_url))
        out = tmp_path / "r.json"
        result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 0, result.output
    assert "OPENAI_API_KEY" not in result.output
    assert len(server.requests) == 2 * ROWS
    for experiment in json.loads(out.read_text())["experiments"]:
        assert experiment["metrics"]["quality"] == 1.0


def test_a_local_server_that_wants_a_key_says_none_was_set(tmp_path, invoke, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with openai_server() as server:
        server.default = 401
        spec = write_spec(tmp_path, judge_item(server.base_url))
        result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    assert len(server.requests) == 1
    assert (
        f"401 OpenAIAuthenticationError: no key (OPENAI_API_KEY is not set; the server at "
        f"{server.base_url} asks for one) was refused" in result.text
    )


def test_a_true_false_judge_given_numbers_names_the_fix_once(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = {"score": 0.8, "reasoning": "mostly"}
        spec = write_spec(tmp_path, "  - routing_accuracy\n" + judge_item(server.base_url))
        result = invoke("run", spec, "--store", tmp_path / "db")
    lines = [line for line in result.output.splitlines() if "continuous: true" in line]
    assert lines == [
        f"  judge misconfigured: quality: {2 * ROWS} of {2 * ROWS} repl(ies) were numbers, but "
        "the judge is true/false: set continuous: true on it to score numbers from 0 to 1 (or "
        "choices: [...] for a scale)"
    ], result.output
    assert stored_comments(tmp_path, "quality") == [
        "judge returned 0.8, not true or false (a number: set continuous: true to score numbers)"
    ] * (2 * ROWS)


CALLED = "called.txt"


@pytest.mark.parametrize("custom_first", [True, False])
def test_two_evaluators_writing_one_key_are_refused_before_any_call(tmp_path, invoke, custom_first):
    evals = tmp_path / "evals.py"
    evals.write_text(
        "from pathlib import Path\n\n"
        "def mine(outputs):\n"
        f"    Path({str(tmp_path / CALLED)!r}).write_text('called')\n"
        "    return {'key': 'routing_accuracy', 'score': 0.0}\n"
    )
    custom = f"  - {{name: routing_accuracy, type: custom, target: {evals}:mine}}\n"
    items = [custom, "  - routing_accuracy\n"]
    spec = write_spec(tmp_path, "".join(items if custom_first else items[::-1]))
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    first, second = (6, 7)  # the lines of the two evaluator items in the spec
    fix = (  # the built-in, second, takes a name of its own as its score key
        "give one a name of its own, its score key: {name: routing_accuracy_2, type: "
        "routing_accuracy, ...}; or leave one out"
        if custom_first
        else "give one of them another name (its score key), or leave one out"
    )
    assert result.output.strip().splitlines() == [
        f"error: {spec}:{second}: evaluators 'routing_accuracy' (line {first}) and "
        "'routing_accuracy' both write the score key 'routing_accuracy': one would overwrite "
        f"the other in every result ({fix})"
    ]
    assert not (tmp_path / CALLED).exists()


def test_a_judge_feedback_key_taken_by_another_evaluator_is_refused(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        spec = write_spec(
            tmp_path,
            "  - routing_accuracy\n"
            + judge_item(server.base_url, ", feedback_key: routing_accuracy"),
        )
        result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    assert (
        "evaluators 'routing_accuracy' (line 6) and 'quality' both write the score key "
        "'routing_accuracy'" in result.text
    )
    assert server.requests == []


def test_built_ins_declaring_one_key_together_still_run(tmp_path, invoke):
    spec = write_spec(tmp_path, "  - unnecessary_steps\n  - soundness\n")
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("custom_first", [True, False])
@pytest.mark.parametrize("kind", ["def", "async def"])
def test_a_function_returning_another_evaluators_key_fails_and_overwrites_nothing(
    tmp_path, invoke, custom_first, kind
):
    """What an undeclared function returns is known only when it runs: it fails on every
    result, naming the key and its owner, and routing_accuracy keeps its own figure."""
    evals = tmp_path / "evals.py"
    evals.write_text(
        f"{kind} mine(outputs):\n    return {{'key': 'routing_accuracy', 'score': 0.0}}\n"
    )
    items = [
        f"  - {{name: my_check, type: custom, target: {evals}:mine}}\n",
        "  - routing_accuracy\n",
    ]
    spec = write_spec(tmp_path, "".join(items if custom_first else items[::-1]))
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 3, result.output
    assert (
        "    evaluator 'my_check' failed: ValueError: it returned the score key "
        "'routing_accuracy', which evaluator 'routing_accuracy' writes: return a key of its "
        "own, or leave one out"
    ) in result.output.splitlines()
    for experiment in json.loads(out.read_text())["experiments"]:
        assert experiment["metrics"]["routing_accuracy"] == 1.0
        assert [r["scores"]["routing_accuracy"] for r in experiment["results"]] == [1.0] * ROWS
