"""Dataset push/pull/list through the real langsmith client, against the in-test server."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from langsmith_stub import LangSmithStandIn, serving
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.data.examples import dataset_hash, load_examples

ROOT = Path(__file__).resolve().parent.parent
ROUTING = ROOT / "datasets" / "routing.jsonl"
runner = CliRunner()


def push(invoke, path: Path, store: Path, *extra: str):
    return invoke("dataset", "push", path, "--name", "routing", "--store", store, *extra)


def remote_rows(server: LangSmithStandIn, name: str = "routing") -> dict[str, dict]:
    dataset = server.dataset_by_name(name)
    assert dataset is not None
    return {e["metadata"]["agenteval_id"]: e for e in server.current_examples(dataset["id"])}


def edited_copy(tmp_path: Path) -> Path:
    """routing.jsonl with three rows changed."""
    lines = ROUTING.read_text().splitlines()
    for index in (0, 5, 9):
        row = json.loads(lines[index])
        row["inputs"]["question"] += " Please hurry."
        lines[index] = json.dumps(row)
    path = tmp_path / "routing.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_push_twice_changes_nothing_the_second_time(server, tmp_path, invoke):
    store = tmp_path / "db"
    first = push(invoke, ROUTING, store)
    assert first.exit_code == 0, first.output
    assert "created 'routing': 32 added, 0 updated, 0 unchanged" in first.output
    tag = dataset_hash(ROUTING)[:12]
    assert f"version tagged {tag}" in first.output
    writes_before = len(server.calls(r"^(POST|PATCH|PUT|DELETE) "))

    second = push(invoke, ROUTING, store)
    assert second.exit_code == 0, second.output
    assert "0 added, 0 updated, 32 unchanged" in second.output
    assert len(server.calls(r"^(POST|PATCH|PUT|DELETE) ")) == writes_before  # reads only

    rows = remote_rows(server)
    expected = {e.id: e for e in load_examples(ROUTING)}
    assert set(rows) == set(expected)
    sample = rows["multi-upgrade-and-sso"]
    assert sample["inputs"] == expected["multi-upgrade-and-sso"].inputs
    assert sample["outputs"] == expected["multi-upgrade-and-sso"].outputs
    dataset_id = server.dataset_by_name("routing")["id"]
    assert tag in server.state.tags[dataset_id]
    # the LangSmith ids are kept in the store, so runs can link to them
    db = sqlite3.connect(store)
    stored = dict(db.execute("SELECT example_id, langsmith_id FROM langsmith_examples"))
    assert stored == {key: row["id"] for key, row in rows.items()}


def test_push_after_editing_three_rows_updates_three(server, tmp_path, invoke):
    store = tmp_path / "db"
    assert push(invoke, ROUTING, store).exit_code == 0
    edited = edited_copy(tmp_path)

    plan = push(invoke, edited, store, "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "0 would be added, 3 would be updated, 29 unchanged" in plan.output
    assert "update billing-payment-method" in plan.output
    assert all(not r["inputs"]["question"].endswith("hurry.") for r in remote_rows(server).values())

    result = push(invoke, edited, store)
    assert "0 added, 3 updated, 29 unchanged" in result.output
    rows = remote_rows(server)
    assert rows["billing-payment-method"]["inputs"]["question"].endswith("Please hurry.")
    assert sum(r["inputs"]["question"].endswith("Please hurry.") for r in rows.values()) == 3
    dataset_id = server.dataset_by_name("routing")["id"]
    assert dataset_hash(edited)[:12] in server.state.tags[dataset_id]
    # the first version is still readable by its tag
    pulled = invoke(
        "dataset",
        "pull",
        "routing",
        "--version",
        dataset_hash(ROUTING)[:12],
        "-o",
        tmp_path / "v1.jsonl",
    )
    assert pulled.exit_code == 0, pulled.output
    assert [e.inputs for e in load_examples(tmp_path / "v1.jsonl")] == [
        e.inputs for e in load_examples(ROUTING)
    ]


def test_prune_deletes_rows_gone_from_the_file_only_when_asked(server, tmp_path, invoke):
    store = tmp_path / "db"
    assert push(invoke, ROUTING, store).exit_code == 0
    shorter = tmp_path / "short.jsonl"
    shorter.write_text("".join(ROUTING.read_text().splitlines(keepends=True)[:30]))

    kept = push(invoke, shorter, store)
    assert "0 added, 0 updated, 30 unchanged, 2 not in the file" in kept.output
    assert len(remote_rows(server)) == 32
    pruned = push(invoke, shorter, store, "--prune")
    assert "0 added, 0 updated, 30 unchanged, 2 deleted" in pruned.output
    assert len(remote_rows(server)) == 30


def test_push_survives_rate_limits_and_lost_answers(server, tmp_path, invoke):
    store = tmp_path / "db"
    server.inject(r"^GET /datasets$", 429, times=2)
    server.inject(r"^POST /datasets$", 500, times=1)
    # the server stores the examples, then the answer is lost: the client's retry conflicts
    server.inject(r"^POST /v1/platform/datasets/.*/examples$", 500, after_apply=True)
    result = push(invoke, ROUTING, store)
    assert result.exit_code == 0, result.output
    assert "32 added, 0 updated, 0 unchanged" in result.output
    assert [r.status for r in server.calls(r"^GET /datasets$")][:3] == [429, 429, 200]
    assert [r.status for r in server.calls(r"^POST /datasets$")] == [500, 200]
    statuses = [r.status for r in server.calls(r"^POST /v1/platform/datasets/.*/examples$")]
    assert statuses[:2] == [500, 409]
    rows = remote_rows(server)
    assert len(rows) == 32
    assert len(server.state.examples) == 32  # no duplicate was ever created


def test_interrupted_push_run_again_ends_with_exactly_the_files_examples(server, tmp_path, invoke):
    from agenteval_cli.langsmith import datasets as lsd

    store = tmp_path / "db"
    original = lsd.BATCH
    lsd.BATCH = 10
    try:
        server.inject(r"^POST /v1/platform/datasets/.*/examples$", 503, times=100)
        server.faults[-1].times = 0  # armed below, after the first two batches
        calls = {"n": 0}
        real = server.handle

        def handle(record):
            if "/examples" in record.path and record.method == "POST":
                calls["n"] += 1
                if calls["n"] == 3:
                    server.faults[-1].times = 100  # the service goes down mid-push
            return real(record)

        server.handle = handle
        failed = push(invoke, ROUTING, store)
        assert failed.exit_code == 4
        assert failed.output.count("\n") == 1 and "adding examples failed" in failed.output
        assert len(remote_rows(server)) == 20
        server.faults.clear()
        again = push(invoke, ROUTING, store)
    finally:
        lsd.BATCH = original
    assert again.exit_code == 0, again.output
    assert "12 added, 0 updated, 20 unchanged" in again.output
    assert sorted(remote_rows(server)) == sorted(e.id for e in load_examples(ROUTING))


def test_no_key_is_one_line_naming_the_variable(server, monkeypatch, tmp_path):
    monkeypatch.delenv("LANGSMITH_API_KEY")
    result = runner.invoke(app, ["dataset", "push", str(ROUTING), "--store", str(tmp_path / "db")])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "LANGSMITH_API_KEY is not set" in result.output
    assert server.requests == []


def test_a_rejected_key_never_appears_in_the_output(server, monkeypatch, tmp_path, invoke):
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2_wrong_secret_123456")
    result = invoke("dataset", "list")
    assert result.exit_code == 2
    assert "rejected the API key in LANGSMITH_API_KEY" in result.output
    assert "lsv2_wrong" not in result.output and "123456" not in result.output


def test_connection_failure_is_one_line_without_the_key(server, monkeypatch, tmp_path, invoke):
    monkeypatch.setenv("LANGSMITH_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AGENTEVAL_LANGSMITH_RETRIES", "1")
    result = invoke("dataset", "list")
    assert result.exit_code == 4
    assert result.output.startswith("error: listing datasets failed")
    assert result.output.count("\n") == 1
    assert server.api_key not in result.output and server.api_key[:5] not in result.output


def test_pull_and_list(server, tmp_path, invoke):
    store = tmp_path / "db"
    assert push(invoke, ROUTING, store).exit_code == 0
    listed = invoke("dataset", "list")
    assert listed.exit_code == 0
    assert "routing" in listed.output and "32" in listed.output

    for suffix in (".jsonl", ".yaml", ".csv"):
        out = tmp_path / f"pulled{suffix}"
        result = invoke("dataset", "pull", "routing", "-o", out)
        assert result.exit_code == 0, result.output
        pulled = {e.id: e for e in load_examples(out)}
        original = {e.id: e for e in load_examples(ROUTING)}
        assert set(pulled) == set(original)
        for key, example in original.items():
            assert pulled[key].inputs == example.inputs
            assert pulled[key].outputs == example.outputs
            assert pulled[key].metadata == example.metadata
    # the pulled file pushes back unchanged
    again = push(invoke, tmp_path / "pulled.jsonl", store)
    assert "0 added, 0 updated, 32 unchanged" in again.output


def test_pull_of_an_unknown_dataset_is_a_user_error(server, tmp_path, invoke):
    result = invoke("dataset", "pull", "nope", "-o", tmp_path / "x.jsonl")
    assert result.exit_code == 2
    assert "no LangSmith dataset named 'nope'" in result.output


def one_hollow_line(result, server: LangSmithStandIn, what: str, request: str) -> None:
    """A service failure in one line naming the step and the request answered ``{}``."""
    assert result.exit_code == 4, result.output
    assert result.output == (
        f"error: {what} failed: the server at {server.url} gave an answer LangSmith does not "
        f"give ({request} answered an empty object where LangSmith sends a list) (check "
        "LANGSMITH_ENDPOINT (a self-hosted LangSmith ends in /api/v1))\n"
    )


def test_list_on_a_server_answering_empty_objects_is_one_line_not_an_empty_table(server, invoke):
    server.answer_empty(r".*")
    one_hollow_line(invoke("dataset", "list"), server, "listing datasets", "GET /datasets")


def test_pull_and_push_when_the_examples_answer_is_empty_are_one_line(server, tmp_path, invoke):
    store = tmp_path / "db"
    assert push(invoke, ROUTING, store).exit_code == 0
    server.answer_empty(r"^GET /examples$")
    out = tmp_path / "pulled.jsonl"
    pulled = invoke("dataset", "pull", "routing", "-o", out)
    one_hollow_line(pulled, server, "listing examples", "GET /examples")
    assert not out.exists()  # no empty file that looks like a pulled dataset
    writes = len(server.calls(r"^(POST|PATCH|PUT|DELETE) "))
    pushed = push(invoke, edited_copy(tmp_path), store)
    one_hollow_line(pushed, server, "listing examples", "GET /examples")
    assert len(server.calls(r"^(POST|PATCH|PUT|DELETE) ")) == writes  # nothing re-added

    server.hollow.clear()
    assert "0 added, 3 updated, 29 unchanged" in push(invoke, edited_copy(tmp_path), store).output


@pytest.mark.parametrize("multipart", [True, False])
def test_a_push_whose_writes_are_answered_empty_is_one_line_not_a_count(
    monkeypatch, tmp_path, multipart, invoke
):
    with serving(monkeypatch, examples_multipart=multipart) as server:
        store = tmp_path / "db"
        writes = r"^POST /(v1/platform/datasets/[\w-]+/)?examples(/bulk)?$"
        server.answer_empty(writes)
        created = push(invoke, ROUTING, store)
        assert created.exit_code == 4, created.output
        assert created.output.startswith(
            f"error: adding examples failed: the server at {server.url} gave an answer "
            "LangSmith does not give (it counted 0 of the 32 examples sent)"
        )
        assert created.output.count("\n") == 1
        server.hollow.clear()
        assert "32 added" in push(invoke, ROUTING, store).output

        if multipart:  # the multipart answer counts the examples it updated
            server.answer_empty(writes.replace("POST", "PATCH"))
            updated = push(invoke, edited_copy(tmp_path), store)
            assert updated.exit_code == 4, updated.output
            assert updated.output.startswith(
                "error: updating examples failed: the server at "
                f"{server.url} gave an answer LangSmith does not give (it counted 0 of the "
                "3 examples sent)"
            )
            server.hollow.clear()
        again = push(invoke, edited_copy(tmp_path), store)
        assert again.exit_code == 0, again.output
        assert "0 added, 3 updated, 29 unchanged" in again.output
        assert len(remote_rows(server)) == 32
