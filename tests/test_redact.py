"""Secrets never leave the process: not in errors, the store, reports or the terminal."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agenteval_cli.core.redact import (
    console_text,
    is_secret_name,
    redact,
    redact_urls,
    secret_values,
    strip_control,
    xml_text,
)
from agenteval_cli.core.yamlsource import expand_env, load_yaml

ROOT = Path(__file__).resolve().parent.parent
GOOD_TARGET = ROOT / "tests" / "data" / "bad" / "targets" / "good.py"
SECRET = "sk-live-0123456789abcdefghijklmnopqrstuvwxyzABCDEF"


def leaked_pieces(text: str, secret: str = SECRET, size: int = 8) -> list[str]:
    """Every piece of ``size`` characters of the secret that ``text`` shows."""
    return sorted({secret[i : i + size] for i in range(len(secret) - size + 1)} & _grams(text))


def _grams(text: str, size: int = 8) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "GITHUB_TOKEN", "client_secret", "DB_PASS", "PGPASSWORD", "SENTRY_DSN",
     "SLACK_WEBHOOK_URL", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE_KEY", "SESSION_COOKIE"],
)  # fmt: skip
def test_secret_looking_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "AGENTEVAL_STORE", "TOKENIZERS_PARALLELISM", "USER"]
)
def test_ordinary_names(name):
    assert not is_secret_name(name)


def test_secret_values_come_from_secret_named_variables_of_useful_length(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    monkeypatch.setenv("MY_DB_DSN", "postgres://app@db/prod")
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short: redacting it would mangle text
    monkeypatch.setenv("EDITOR_MODE", "a-long-but-public-value")
    values = secret_values()
    assert SECRET in values and "postgres://app@db/prod" in values
    assert "abc" not in values and "a-long-but-public-value" not in values
    assert values.index(SECRET) < values.index("postgres://app@db/prod")  # longest first


def test_redact_replaces_whole_values_and_values_cut_short():
    assert redact(f"bad key {SECRET}!", [SECRET]) == "bad key ***!"
    # an error message's describe() shows the first 37 characters of a repr, then '...'
    assert redact(f"got {SECRET!r}"[:41] + "...'", [SECRET]) == "got '***'"
    # a start too short to say it is the secret stays
    assert redact("got 'sk-li...'", [SECRET]) == "got 'sk-li...'"
    assert redact("nothing to hide", [SECRET]) == "nothing to hide"


def test_url_passwords_are_redacted_wherever_they_appear():
    text = "cannot connect to postgres://app:hunter22@db:5432/prod (see https://example.com/a@b)"
    assert redact_urls(text) == (
        "cannot connect to postgres://app:***@db:5432/prod (see https://example.com/a@b)"
    )
    assert redact_urls("redis://:s3cr3t@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redact_urls("http://host:8080/path") == "http://host:8080/path"
    assert redact("'amqp://u:p4ss@mq'", []) == "'amqp://u:***@mq'"


def test_control_characters_are_stripped_for_the_console(monkeypatch):
    monkeypatch.setenv("AGENTEVAL_TEST_TOKEN", SECRET)
    hostile = "a\x1b[31mred\x1b[0m \x1b]0;pwned\x07b\u202egnp.exe\tc\nd\x07\x9b2J"
    assert strip_control(hostile) == "ared bgnp.exe c d"
    assert strip_control("one\ntwo", keep_newlines=True) == "one\ntwo"
    assert console_text(f"\x1b[1m{SECRET}\x1b[0m") == "***"


def test_xml_text_keeps_only_what_xml_holds():
    assert xml_text("\x1b[31mboom\x1b[0m\x00\x0b\x0c \ud800\ufffe tab\tnl\ncr\r") == (
        "boom  tab\tnl\ncr\r"
    )


def test_expand_env_records_secret_references_and_url_passwords(tmp_path):
    text = (
        "a: ${MY_API_KEY}\n"
        "b: ${UNSET_WEBHOOK:-https://hooks.example.com/T0/B0/abcdefgh}\n"
        "c: postgres://app:hunter22@db/prod\n"
        "d: ${PLAIN}\n"
    )
    document = load_yaml(text, file=tmp_path / "s.yaml")
    env = {"MY_API_KEY": SECRET, "PLAIN": "public-value"}
    expanded, recorded = expand_env(document, file=tmp_path / "s.yaml", environ=env)
    assert expanded == {
        "a": SECRET,
        "b": "https://hooks.example.com/T0/B0/abcdefgh",
        "c": "postgres://app:hunter22@db/prod",
        "d": "public-value",
    }
    assert recorded == {
        "a": "${MY_API_KEY}",
        "b": "${UNSET_WEBHOOK:-***}",  # the default of a secret-named variable is a secret
        "c": "postgres://app:***@db/prod",
        "d": "public-value",
    }
    # the default of a secret-named variable is a secret too, from now on
    assert redact("posting to https://hooks.example.com/T0/B0/abcdefgh failed") == (
        "posting to *** failed"
    )


# Six kinds of field that quote the value they refuse, each given ${AGENTEVAL_TEST_API_KEY}.
FIELDS = {
    "integer": "concurrency: ${AGENTEVAL_TEST_API_KEY}\n",
    "number": "timeout_s: ${AGENTEVAL_TEST_API_KEY}\n",
    "boolean": "upload: ${AGENTEVAL_TEST_API_KEY}\n",
    "evaluator": "evaluators: ['${AGENTEVAL_TEST_API_KEY}']\n",
    "error kind": "retries: {on: ['${AGENTEVAL_TEST_API_KEY}']}\n",
    "import path": None,
    "dataset path": None,
}


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_a_secret_in_a_refused_field_is_not_printed(kind, tmp_path, monkeypatch, invoke):
    monkeypatch.setenv("AGENTEVAL_TEST_API_KEY", SECRET)
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text('{"id": "a", "inputs": {"question": "hi"}}\n')
    target = f"{GOOD_TARGET}:answer"
    if kind == "import path":
        target = "${AGENTEVAL_TEST_API_KEY}"
    if kind == "dataset path":
        dataset = Path("${AGENTEVAL_TEST_API_KEY}.jsonl")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {dataset}\ntargets: {{good: '{target}'}}\n" + (FIELDS[kind] or ""))
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert text.startswith(f"error: {spec}:") and "\n" not in text, text
    assert "***" in text, text
    assert leaked_pieces(text) == [], text


TARGET = """
import os

def leaky(inputs):
    raise RuntimeError(
        "401 for key " + os.environ["AGENTEVAL_TEST_API_KEY"]
        + " via postgres://app:hunter22@db/prod"
    )
"""


def test_a_secret_in_a_target_error_is_not_stored_or_reported(tmp_path, monkeypatch, invoke):
    monkeypatch.setenv("AGENTEVAL_TEST_API_KEY", SECRET)
    (tmp_path / "leaky.py").write_text(TARGET)
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "inputs": {"question": "hi"}}\n')
    spec = tmp_path / "spec.yaml"
    spec.write_text("dataset: rows.jsonl\ntargets: {leaky: leaky.py:leaky}\n")
    store, out = tmp_path / "db", tmp_path / "out"
    result = invoke(
        "run", spec, "--store", store, "--json", out / "r.json",
        "--junit", out / "r.xml", "--markdown", out / "r.md", "--html", out / "r.html",
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert leaked_pieces(result.output) == [] and "hunter22" not in result.output
    with sqlite3.connect(store) as db:
        (error,) = db.execute("SELECT error FROM results").fetchone()
    assert error == "RuntimeError: 401 for key *** via postgres://app:***@db/prod"
    results = json.loads((out / "r.json").read_text())["experiments"][0]["results"]
    assert results[0]["error"] == error
    for name in ("r.json", "r.xml", "r.md"):
        text = (out / name).read_text()
        assert leaked_pieces(text) == [] and "hunter22" not in text, name


def test_a_secret_written_out_in_the_spec_is_not_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTEVAL_TEST_PASSWORD", "hunter2-but-longer")
    document = load_yaml("a: 'login hunter2-but-longer'\nb: hunter2\n", file=tmp_path / "s.yaml")
    expanded, recorded = expand_env(document, file=tmp_path / "s.yaml")
    assert expanded == {"a": "login hunter2-but-longer", "b": "hunter2"}
    assert recorded == {"a": "login ***", "b": "hunter2"}


HTML_TARGET = """
import os

def leaky(inputs):
    key = os.environ["AGENTEVAL_TEST_API_KEY"]
    if inputs["question"] == "fail":
        raise RuntimeError(f"401 for key {key} via postgres://app:hunter22@db/prod")
    return {
        "final_response": f"used {key} at https://bob:hunter22@api.example.com/v1",
        "messages": [{"role": "assistant", "content": f"token {key}"}],
    }


def echo(outputs):
    return {"score": 1.0, "comment": "saw " + outputs["final_response"]}
"""


def test_a_secret_in_outputs_errors_and_comments_is_not_in_the_html_report(
    tmp_path, monkeypatch, invoke
):
    monkeypatch.setenv("AGENTEVAL_TEST_API_KEY", SECRET)
    (tmp_path / "leaky.py").write_text(HTML_TARGET)
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "ok", "inputs": {"question": "see https://eve:hunter22@docs.example.com"}}\n'
        '{"id": "bad", "inputs": {"question": "fail"}}\n'
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: rows.jsonl\ntargets: {leaky: leaky.py:leaky}\nmax_error_rate: 1\n"
        "evaluators:\n  - {name: echo, type: custom, target: leaky.py:echo}\n"
    )
    store = tmp_path / "db"
    result = invoke("run", spec, "--store", store, "--html", tmp_path / "run.html")
    assert result.exit_code == 0, result.output
    with sqlite3.connect(store) as db:  # the store redacts what it keeps
        (outputs,) = db.execute("SELECT outputs_json FROM results WHERE outputs_json IS NOT NULL")
        assert SECRET not in outputs[0] and "bob:***@" in outputs[0]
        # as a store written before it did keeps them: the report redacts them as it reads
        verbatim = {
            "final_response": f"used {SECRET} at https://bob:hunter22@api.example.com/v1",
            "messages": [{"role": "assistant", "content": f"token {SECRET}"}],
        }
        db.execute(
            "UPDATE results SET outputs_json = ? WHERE outputs_json IS NOT NULL",
            (json.dumps(verbatim),),
        )
    reported = invoke("report", "leaky", "--store", store, "-o", tmp_path / "report.html")
    assert reported.exit_code == 0, reported.output
    for name in ("run.html", "report.html"):
        page = (tmp_path / name).read_text()
        assert leaked_pieces(page) == [] and "hunter22" not in page, name
        # what is shown stays, the secret and the passwords masked
        assert "used *** at https://bob:***@api.example.com/v1" in page, name
        assert "saw used *** at https://bob:***@api.example.com/v1" in page, name
        assert "RuntimeError: 401 for key *** via postgres://app:***@db/prod" in page, name
        assert "see https://eve:***@docs.example.com" in page, name
