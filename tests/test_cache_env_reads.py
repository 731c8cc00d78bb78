"""The response cache follows the environment variables a target's call reads, declared in
``cache_env:`` or not (agenteval_cli.execution.env_reads)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading

from projects import project, rows
from test_cache import target_calls

VARIABLE = "AGENTEVAL_TEST_READ_MODEL"

READS_ITS_MODEL = f"""
import os

calls = []

def answer(inputs):
    calls.append(inputs["question"])
    model = os.getenv("{VARIABLE}", "small")
    return {{"final_response": f"{{inputs['question']}} refund by {{model}}"}}
"""


def reading_project(folder):
    return project(
        folder,
        READS_ITS_MODEL,
        module="targets.py",
        targets={"a": "answer"},
        data=rows(4, question="q {i}", outputs={"must_mention": ["refund"]}),
        evaluators="[resolution_coverage]",
        extra="cache: true\n",
    )


def answers(db) -> list[str]:
    with sqlite3.connect(db) as conn:
        found = conn.execute(
            "SELECT json_extract(outputs_json, '$.final_response') FROM results r"
            " JOIN experiments e ON e.id = r.experiment_id"
            " WHERE e.started_at = (SELECT MAX(started_at) FROM experiments) ORDER BY r.id"
        ).fetchall()
    return [text for (text,) in found]


def test_a_variable_the_target_reads_undeclared_is_part_of_its_cached_answers(
    tmp_path, invoke, monkeypatch
):
    """The model moves from an undeclared variable: the cached answers are not served, and
    ``cache info`` names the variable, never its value."""
    monkeypatch.setenv(VARIABLE, "gpt-small-model")
    spec = reading_project(tmp_path)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    calls = target_calls(spec)
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 4  # every answer cached

    monkeypatch.setenv(VARIABLE, "gpt-large-model")
    info = invoke("cache", "info", "--store", db)
    assert f"4 no longer match: ${VARIABLE} changed since they were cached" in info.text
    assert "gpt-" not in info.text
    rerun = invoke("run", spec, "--store", db)
    assert rerun.exit_code == 0
    said = " ".join(rerun.text.split())  # the run says so too
    assert f"4 cached answer(s) called again: ${VARIABLE} changed since they were cached" in said
    assert len(calls) == 8
    assert all(text.endswith("by gpt-large-model") for text in answers(db))
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 8  # the entries made again are served
    assert "no longer match" not in invoke("cache", "info", "--store", db).text

    monkeypatch.delenv(VARIABLE)  # unset is a value of its own
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert len(calls) == 12
    assert all(text.endswith("by small") for text in answers(db))
    with sqlite3.connect(db) as conn:
        kept = " ".join(r for (r,) in conn.execute("SELECT fingerprint_json FROM cache"))
    assert VARIABLE in kept and "gpt-" not in kept  # the name and a hash, never the value


def test_each_call_records_its_own_reads_in_tasks_and_threads(monkeypatch):
    """Calls run at once in one event loop and in worker threads: each read is its call's."""
    from agenteval_cli.execution.env_reads import recording

    for name in ("AGENTEVAL_TEST_ONE", "AGENTEVAL_TEST_TWO"):
        monkeypatch.setenv(name, name.lower())

    async def call(name: str, other: str) -> dict[str, str]:
        with recording() as reads:
            os.environ.get(name)
            await asyncio.sleep(0.01)  # the other call reads meanwhile
            await asyncio.to_thread(os.getenv, f"{name}_IN_A_THREAD")
            await asyncio.sleep(0.01)
        assert other not in reads.seen
        return reads.hashes()

    async def both() -> list[dict[str, str]]:
        return await asyncio.gather(
            call("AGENTEVAL_TEST_ONE", "AGENTEVAL_TEST_TWO"),
            call("AGENTEVAL_TEST_TWO", "AGENTEVAL_TEST_ONE"),
        )

    one, two = asyncio.run(both())
    assert set(one) == {"AGENTEVAL_TEST_ONE", "AGENTEVAL_TEST_ONE_IN_A_THREAD"}
    assert set(two) == {"AGENTEVAL_TEST_TWO", "AGENTEVAL_TEST_TWO_IN_A_THREAD"}
    assert one["AGENTEVAL_TEST_ONE_IN_A_THREAD"] == "unset"
    assert one["AGENTEVAL_TEST_ONE"] != two["AGENTEVAL_TEST_TWO"]
    assert type(os.environ) is os._Environ  # put back once no call records


def test_walks_writes_tracing_settings_and_other_threads_are_not_the_calls_reads(monkeypatch):
    from agenteval_cli.execution.env_reads import recording

    monkeypatch.setenv("AGENTEVAL_TEST_READ", "x")
    seen_elsewhere = threading.Event()

    def elsewhere() -> None:  # not started by the call: another context
        seen_elsewhere.wait()
        os.getenv("AGENTEVAL_TEST_ELSEWHERE")

    other = threading.Thread(target=elsewhere)
    other.start()
    with recording() as reads:
        copied = dict(os.environ)
        assert copied["AGENTEVAL_TEST_READ"] == "x"
        list(os.environ.items())
        os.environ.copy()
        os.environ["AGENTEVAL_TEST_SET_BY_CALL"] = "mine"
        os.getenv("AGENTEVAL_TEST_SET_BY_CALL")
        os.getenv("LANGSMITH_TRACING")
        seen_elsewhere.set()
        other.join()
        os.getenv("AGENTEVAL_TEST_READ")
    monkeypatch.delenv("AGENTEVAL_TEST_SET_BY_CALL")
    assert list(reads.seen) == ["AGENTEVAL_TEST_READ"]


def test_a_secret_the_call_reads_is_not_recorded(monkeypatch):
    """A rotated API key gives the same answers, and no hash of a secret is kept."""
    from agenteval_cli.execution.env_reads import recording

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("AGENTEVAL_TEST_MODEL", "gpt-4o-mini")
    with recording() as reads:
        os.getenv("OPENAI_API_KEY")
        os.environ.get("AGENTEVAL_TEST_MODEL")
    assert list(reads.seen) == ["AGENTEVAL_TEST_MODEL"]
