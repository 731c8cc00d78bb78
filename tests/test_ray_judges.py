"""A judge on Ray workers makes its first call once for the run, not once per worker: a key
the server refuses (401) costs one request however many workers there are, and a key that
works costs no request more than the results it judges."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from openai_server import openai_server
from projects import answer_after, project

pytest.importorskip("ray")

pytestmark = pytest.mark.slow

ROWS = 9
WORKERS = 3


def write_spec(folder: Path, base_url: str) -> Path:
    return project(
        folder,
        answer_after("", returns="{'final_response': 'about ' + inputs['question']}"),
        dataset="rows.jsonl",
        data=ROWS,
        evaluators=(
            "\n  - {name: quality, type: llm_judge, prompt: 'Is this helpful? {outputs}', "
            f"model: 'openai:gpt-4o-mini', base_url: '{base_url}', "
            "model_kwargs: {max_retries: 0}}"
        ),
        concurrency=WORKERS,
        extra=f"executor: ray\nray: {{workers: {WORKERS}, env: [OPENAI_API_KEY]}}\n",
    )


def comments(store: Path) -> list[str]:
    db = sqlite3.connect(store)
    rows = db.execute("SELECT scores_json FROM results ORDER BY example_id").fetchall()
    db.close()
    return [json.loads(scores)[0][2] for (scores,) in rows]


@pytest.mark.long
def test_a_refused_key_is_one_request_for_every_worker(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-refused-0123456789")
    with openai_server() as server:
        server.default = 401
        spec = write_spec(tmp_path, server.base_url)
        result = invoke("run", spec, "--store", tmp_path / "db")
    assert f"ray: {WORKERS} worker(s)" in result.text, result.output
    assert result.exit_code == 3, result.output
    assert len(server.requests) == 1, len(server.requests)  # not one per worker
    refused = (
        "evaluator 'quality' failed: judge call failed: 401 OpenAIAuthenticationError: the key "
        "in OPENAI_API_KEY was refused; set a valid key (judge 'quality' made no further calls)"
    )
    assert comments(tmp_path / "db") == [refused] * ROWS
    assert "sk-refused-0123456789" not in result.output


@pytest.mark.long
def test_a_key_that_works_costs_one_request_per_result(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    with openai_server() as server:
        spec = write_spec(tmp_path, server.base_url)
        result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    assert len(server.requests) == ROWS  # no preflight, nothing called twice
    assert comments(tmp_path / "db") == ["fine"] * ROWS
