"""Nothing secret is written to the store: a target that echoes its key has it redacted from
its answer, its error, its trace (messages, a tool's output), its turns and its cache entry,
for store files travel (CI artifacts)."""

from __future__ import annotations

import json
from pathlib import Path

from langgraph_server import free_port

from agenteval_cli.core.records import Example, Result, Score, Trace, Turn
from agenteval_cli.store.db import Store

OPENAI_KEY = "sk-test-0123456789abcdefghijklmnop"
HEADER_VALUE = "team-auth-4f9c2e1d8b7a"  # a remote: header's, its variable not secret-named

ECHOING = """
import os

from langchain_core.tools import tool


@tool
def account(question: str) -> str:
    \"\"\"The account's details, and the keys it was read with.\"\"\"
    return f"{question}: read with {os.environ['OPENAI_API_KEY']}"


def answer(inputs):
    key, header = os.environ["OPENAI_API_KEY"], os.environ["TEAM_SERVER_AUTH"]
    seen = account.invoke({"question": inputs["question"]})
    if inputs["question"] == "fail":
        raise RuntimeError(f"401 for key {key} and header {header}")
    return {
        "final_response": f"{seen}; sent {header}",
        "messages": [{"role": "assistant", "content": f"my key is {key}"}],
        "by_key": {key: header},
    }


def echo(outputs):
    return {"score": 1.0, "comment": "saw " + outputs["final_response"]}
"""


def _store_bytes(folder: Path) -> bytes:
    """Every file of the store: the database, its journal and WAL, as they travel."""
    return b"".join(path.read_bytes() for path in sorted(folder.glob("db*")) if path.is_file())


def test_a_target_echoing_its_key_and_a_remote_header_leaves_neither_in_the_store(
    tmp_path, monkeypatch, invoke
):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("TEAM_SERVER_AUTH", HEADER_VALUE)
    (tmp_path / "leaky.py").write_text(ECHOING)
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "ok", "inputs": {"question": "balance"}}\n'
        '{"id": "bad", "inputs": {"question": "fail"}}\n'
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: rows.jsonl\nmax_error_rate: 1\ncache: true\ntimeout_s: 10\n"
        "targets:\n"
        "  leaky: leaky.py:answer\n"
        # served nowhere: its calls fail, but its header's value is a secret from the start
        f"  team: {{remote: {{url: 'http://127.0.0.1:{free_port()}', graph: team,"
        " headers: {x-team-auth: TEAM_SERVER_AUTH}}}\n"
        "evaluators:\n  - {name: echo, type: custom, target: leaky.py:echo}\n"
    )
    for _ in range(2):  # called, then served from the cache
        result = invoke("run", spec, "--store", tmp_path / "db")
        assert result.exit_code == 0, result.output

    stored = _store_bytes(tmp_path)
    assert b"read with ***" in stored and b"sent ***" in stored  # what it said is kept
    assert OPENAI_KEY.encode() not in stored
    assert HEADER_VALUE.encode() not in stored


def test_every_column_of_a_result_and_its_cache_entry_is_redacted(tmp_path, monkeypatch):
    """A conversation's turns too; a secret JSON escapes (a quote, a backslash) as well; the
    columns stay JSON."""
    secret = 'pa"ss\\word-0123456789'
    monkeypatch.setenv("AGENTEVAL_TEST_DB_PASSWORD", secret)
    said = {"final_response": f"the password is {secret}", secret: [f"x{secret}x"]}
    trace = Trace(error=None)
    turn = Turn(
        inputs={"question": "what is it?"},
        outputs=said,
        trace=Trace(),
        scores=[Score("echo", 1.0, f"said {secret}")],
        interrupt=None,
    )
    result = Result(
        example_id="e",
        repetition=0,
        outputs=said,
        trace=trace,
        scores=[Score("echo", 1.0, f"said {secret}")],
        turns=[turn],
    )
    with Store(tmp_path / "db") as store:
        experiment = store.create_experiment(prefix="p", target="t", target_path="t", spec={})
        store.add_result(experiment.id, Example("e", {"question": "q"}, {}), result, cache_key="k")
        outputs, turns = store.db.execute("SELECT outputs_json, turns_json FROM results").fetchone()
        cached = store.cache_get("k")
    assert json.loads(outputs) == {"final_response": "the password is ***", "***": ["x***x"]}
    assert json.loads(turns)[0]["outputs"] == json.loads(outputs)
    assert json.loads(turns)[0]["scores"][0]["comment"] == "said ***"
    assert cached is not None and cached.outputs == json.loads(outputs)
    stored = _store_bytes(tmp_path)
    for form in (secret, json.dumps(secret)[1:-1], "0123456789"):
        assert form.encode() not in stored, form


def test_a_json_text_is_redacted_as_its_strings_would_be_and_left_alone_without_secrets():
    from agenteval_cli.core.redact import redact_json

    secret = "sk-test-0123456789abcdef"
    text = json.dumps(
        {
            "cut": f"key '{secret[:10]}...' refused",
            "url": "postgres://app:hunter22@db/prod",
            "keys": {secret: "x"},
            "n": [1.5, None, True],
        }
    )
    redacted = json.loads(redact_json(text, [secret]))
    assert redacted == {
        "cut": "key '***' refused",
        "url": "postgres://app:***@db/prod",
        "keys": {"***": "x"},
        "n": [1.5, None, True],
    }
    plain = json.dumps({"final_response": "see https://example.com ... later"})
    assert redact_json(plain, [secret]) is plain  # nothing to redact: the text as it was
