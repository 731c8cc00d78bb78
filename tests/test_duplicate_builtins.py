"""Two built-in evaluators writing the same score key are refused before any call (exit 2,
one line naming both items and the fix), whatever their options: the same built-in twice
(identical or not), or one under a name of its own (``type:``) next to it. A built-in that
writes one key, given a name of its own, writes its score under that name, so the two sit
side by side; one writing several keys keeps them, and cannot be doubled."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "routing.jsonl"


def write_spec(tmp_path: Path, evaluators: str) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {DATASET}\n"
        "targets: {supervisor: agenteval_cli.demo.supervisor:graph}\n"
        f"evaluators:\n{evaluators}"
    )
    return spec


def refusal(invoke, tmp_path: Path, evaluators: str) -> str:
    spec = write_spec(tmp_path, evaluators)
    result = invoke("run", spec, "--limit", "2", "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    if (tmp_path / "db").exists():  # refused before the run: no experiment started
        db = sqlite3.connect(tmp_path / "db")
        assert db.execute("SELECT COUNT(*) FROM experiments").fetchone() == (0,)
        db.close()
    (line,) = result.output.strip().splitlines()  # one line (Rich wraps none on stderr)
    return line


@pytest.mark.parametrize(
    "evaluators",
    [
        "  - routing_precision\n  - {name: routing_precision, ignore_agents: [billing]}\n",
        "  - {name: routing_precision, ignore_agents: [billing]}\n"
        "  - {name: routing_precision, ignore_agents: [billing]}\n",  # identical
    ],
    ids=["other options", "identical"],
)
def test_the_same_builtin_twice_is_refused_with_the_fix(tmp_path, invoke, evaluators):
    line = refusal(invoke, tmp_path, evaluators)
    assert line == (
        f"error: {tmp_path / 'spec.yaml'}:5: evaluators 'routing_precision' (line 4) and "
        "'routing_precision' both write the score key 'routing_precision': one would "
        "overwrite the other in every result (give one a name of its own, its score key: "
        "{name: routing_precision_2, type: routing_precision, ...}; or leave one out)"
    )


def test_a_builtin_under_a_name_of_its_own_next_to_itself_is_refused_when_it_cannot_move(
    tmp_path, invoke
):
    line = refusal(
        invoke,
        tmp_path,
        "  - handoff_chain_length\n"
        "  - {name: chain_no_router, type: handoff_chain_length, coordinators: [router]}\n",
    )
    assert "evaluators 'handoff_chain_length' (line 4) and 'chain_no_router'" in line
    assert "'handoff_chain_length' is one of several keys that 'chain_no_router' writes" in line


def test_two_retrievals_with_other_ks_are_refused(tmp_path, invoke):
    line = refusal(
        invoke,
        tmp_path,
        "  - {name: retrieval, k: [1]}\n  - {name: top3, type: retrieval, k: [3]}\n",
    )
    assert "'retrieval' (line 4) and 'top3' both write the score key 'reciprocal_rank'" in line


def test_two_judges_of_one_name_are_refused_before_any_call(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (tmp_path / "a.txt").write_text("Is it right? {outputs}")
    (tmp_path / "b.txt").write_text("Is it polite? {outputs}")
    url = "http://127.0.0.1:9/v1"  # nothing listens: a call would fail, not refuse
    judge = "  - {{name: quality, type: llm_judge, prompt: {}, model: '{}', base_url: {}}}\n"
    items = judge.format("a.txt", "openai:m", url) + judge.format("b.txt", "openai:n", url)
    line = refusal(invoke, tmp_path, items)
    assert "'quality' (line 4) and 'quality' both write the score key 'quality'" in line
    assert "give one of them another name (its score key)" in line


def scores_by_example(invoke, tmp_path: Path, name: str, evaluators: str) -> dict[str, dict]:
    folder = tmp_path / name
    folder.mkdir()
    spec = write_spec(folder, evaluators)
    out = folder / "r.json"
    result = invoke("run", spec, "--limit", "6", "--store", folder / "db", "--json", out)
    assert result.exit_code == 0, result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    return {r["example_id"]: r["scores"] for r in experiment["results"]}


def test_the_fix_a_builtin_with_one_key_writes_it_under_its_name(tmp_path, invoke):
    alone = scores_by_example(invoke, tmp_path, "alone", "  - routing_precision\n")
    other = scores_by_example(
        invoke,
        tmp_path,
        "other",
        "  - {name: routing_precision, ignore_agents: [supervisor, billing]}\n",
    )
    both = scores_by_example(
        invoke,
        tmp_path,
        "both",
        "  - routing_precision\n"
        "  - {name: precision_no_billing, type: routing_precision, "
        "ignore_agents: [supervisor, billing]}\n",
    )
    assert set(both) == set(alone) and len(both) == 6
    for example_id, scores in both.items():
        assert scores == {
            "routing_precision": alone[example_id]["routing_precision"],
            "precision_no_billing": other[example_id]["routing_precision"],
        }
    assert any(  # the options differ where it shows: the two are not one figure twice
        s["routing_precision"] != s["precision_no_billing"] for s in both.values()
    )


def test_a_builtin_under_a_name_of_its_own_reads_as_the_builtin():
    """Its one key keeps the built-in's direction and format: a regression gate and the
    table read ``steps2`` as they read ``unnecessary_steps`` (lower is better, a count)."""
    from agenteval_cli.evaluators.registry import REGISTRY, entry_metrics

    (steps,) = entry_metrics({"name": "steps2", "type": "unnecessary_steps"})
    builtin = REGISTRY["unnecessary_steps"].metrics[0]
    assert (steps.key, steps.label) == ("steps2", "steps2")
    assert (
        (steps.direction, steps.format) == (builtin.direction, builtin.format) == ("lower", "count")
    )
    assert [m.key for m in entry_metrics({"name": "h2", "type": "handoff_chain_length"})] == [
        "handoff_chain_length",
        "ping_pong",
    ]
