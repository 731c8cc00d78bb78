"""Simulated users driving whole runs through the CLI: the turns a user writes reach the
target on one thread, are stored and scored; a judge ends a conversation once it says
resolved; the user's own model calls never count as the target's."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest


def spec_of(folder: Path, rows: list[dict], evaluators: str, user: str) -> Path:
    """The demo swarm (with its checkpointer) on ``rows``, its turns written by ``user``."""
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = folder / "spec.yaml"
    spec.write_text(
        f"dataset: {data}\n"
        f"targets:\n  swarm: {{target: {SWARM}, initial_state: {{resolution_notes: []}}}}\n"
        f"evaluators: {evaluators}\n"
        f"simulated_user:\n{user}"
    )
    return spec


SWARM = "agenteval_cli.demo.swarm:conversational_graph"
CUSTOMER = "agenteval_cli.demo.users:scripted_customer"
ROWS = [
    {
        "id": "invoice-then-refund",
        "inputs": {
            "scenario": "Can you send me a copy of invoice INV-2041?",
            "followups": ["I was charged twice in May, please refund $49."],
        },
        "outputs": {"expected_agents": ["billing"]},
    },
    {
        "id": "sso-alone",
        "inputs": {"scenario": "My SSO integration is returning error code SAML-401."},
        "outputs": {"expected_agents": ["tech_support"]},
    },
]


def _stored(store: Path) -> dict[str, list[dict]]:
    db = sqlite3.connect(store)
    return {
        example: json.loads(turns)
        for example, turns in db.execute("SELECT example_id, turns_json FROM results")
    }


def test_the_demo_customer_writes_each_conversations_turns(tmp_path, invoke):
    spec = spec_of(
        tmp_path,
        ROWS,
        "[routing_accuracy, handoff_chain_length]",
        f"  function: {CUSTOMER}\n  max_turns: 4\n",
    )
    result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    turns = _stored(tmp_path / "s.db")
    # the scenario, then each follow-up, then the customer is done
    assert [t["inputs"] for t in turns["invoice-then-refund"]] == [
        {"question": ROWS[0]["inputs"]["scenario"]},
        {"question": ROWS[0]["inputs"]["followups"][0]},
    ]
    assert len(turns["sso-alone"]) == 1
    # a plain function made no model call: nothing is spent on the user's side
    assert all(t["user_calls"] == [] for each in turns.values() for t in each)
    # the refund follow-up is answered by billing, the agent the invoice left active
    first, second = turns["invoice-then-refund"]
    assert first["trace"]["agent_path"][-1] == "billing"
    assert second["trace"]["agent_path"] == ["billing"]
    exported = json.loads((tmp_path / "r.json").read_text())
    (swarm,) = exported["experiments"]
    scores = {r["example_id"]: r["scores"] for r in swarm["results"]}
    assert scores["invoice-then-refund"]["turns"] == 2
    assert scores["invoice-then-refund"]["agent_continuity"] == 1.0
    assert scores["sso-alone"]["turns"] == 1


def test_a_judge_ends_the_conversation_when_it_says_resolved(tmp_path, invoke):
    judge = (
        "def resolved(outputs):\n"
        "    said = outputs.get('final_response') or ''\n"
        "    return {'key': 'resolved_by_judge', 'score': 'INV-2041' in said}\n"
    )
    rows = [
        {
            "id": "invoice",
            "inputs": {
                "scenario": "Can you send me a copy of invoice INV-2041?",
                "followups": ["Thanks, and who is my account manager?", "Anything else?"],
            },
        }
    ]
    (tmp_path / "judges.py").write_text(judge)
    spec = spec_of(
        tmp_path,
        rows,
        "[{name: resolved_by_judge, type: custom, target: judges.py:resolved}]",
        f"  function: {CUSTOMER}\n  max_turns: 5\n"
        "  stop: {judge: resolved_by_judge, threshold: 1}\n",
    )
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 0, result.output
    (turns,) = _stored(tmp_path / "s.db").values()
    # the first answer already names the invoice: no follow-up is sent
    assert len(turns) == 1
    assert turns[0]["scores"] == [{"key": "resolved_by_judge", "score": True, "comment": None}]


def test_an_llm_users_calls_are_priced_apart_from_the_targets(tmp_path, invoke, monkeypatch):
    from openai_server import openai_server

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = [{"id": "double-charge", "inputs": {"persona": "Dana", "scenario": "a double charge"}}]
    replies = ["I was charged twice in May.", "And the invoice?", "Thanks! ###DONE###"]
    with openai_server(replies) as server:
        server.usage = (100, 20)  # each of the user's three calls, as the server reports it
        spec = spec_of(
            tmp_path,
            rows,
            "[routing_accuracy, token_cost]",
            "  model: 'openai:user-model'\n"
            f"  base_url: '{server.base_url}'\n"
            "  model_kwargs: {max_retries: 0}\n",
        )
        spec.write_text(
            spec.read_text()
            + "pricing:\n"
            + "  user-model: {input: 1.0, output: 2.0}\n"
            + "  scripted-small: {input: 0.15, output: 0.60}\n"
        )
        out = tmp_path / "r.json"
        result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out)
    assert result.exit_code == 0, result.output
    (swarm,) = json.loads(out.read_text())["experiments"]
    (run,) = swarm["results"]
    scores = run["scores"]
    assert scores["turns"] == 2  # the third reply said it is done
    assert scores["user_input_tokens"] == 300 and scores["user_output_tokens"] == 60
    # 300 input tokens at $1 and 60 output tokens at $2 per million
    assert scores["user_cost_usd"] == pytest.approx(300e-6 + 120e-6)
    # the target's own tokens are the swarm's calls only: none is the user's model
    assert {c["model"] for t in run["turns"] for c in t["trace"]["model_calls"]} == {
        "scripted-small"
    }
    assert [c["model"] for c in run["turns"][-1]["user_calls"]] == ["user-model", "user-model"]


def test_a_simulated_conversation_is_cached_whole_and_keyed_by_its_user(tmp_path, invoke):
    def run(max_turns: int) -> dict[str, list[dict]]:
        spec = spec_of(
            tmp_path,
            ROWS,
            "[routing_accuracy]",
            f"  function: {CUSTOMER}\n  max_turns: {max_turns}\n",
        )
        spec.write_text(spec.read_text() + "cache: true\n")
        result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", tmp_path / "r.json")
        assert result.exit_code == 0, result.output
        (swarm,) = json.loads((tmp_path / "r.json").read_text())["experiments"]
        return {r["example_id"]: r for r in swarm["results"]}

    first, again, other_user = run(4), run(4), run(1)
    assert [r["cached"] for r in again.values()] == [True, True]
    for example, result in again.items():  # served with every turn the first run had
        assert [t["inputs"] for t in result["turns"]] == [
            t["inputs"] for t in first[example]["turns"]
        ]
        assert result["scores"]["turns"] == first[example]["scores"]["turns"]
    # another user (one turn at most) writes other conversations: nothing is served
    assert [r["cached"] for r in other_user.values()] == [False, False]
    assert other_user["invoice-then-refund"]["scores"]["turns"] == 1


def test_errored_conversations_are_counted_as_conversations(tmp_path, invoke):
    rows = [
        {"id": "fine", "inputs": {"turns": ["Can you send me a copy of invoice INV-2041?"]}},
        {"id": "bad", "inputs": {"turns": ["Is INV-2041 paid?", {"resume": "yes"}]}},
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n  swarm: {SWARM}\nmax_error_rate: 1\n")
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 0, result.output
    assert "swarm: 1 of 2 conversation(s) failed (50.0%)" in result.text
    assert "1 × turn 2 is a resume, but turn 1 did not stop at interrupt()" in result.text
    first = re.search(r"swarm: (spec-swarm-[0-9a-f]+) \(finished\)", result.text)
    assert first is not None, result.text
    assert invoke("run", spec, "--store", tmp_path / "s.db").exit_code == 0
    compared = invoke("compare", first[1], "swarm", "--store", tmp_path / "s.db")
    assert "1 of 2 conversation(s) failed" in compared.text, compared.output


def test_the_simulated_demo_writes_the_same_conversations_every_run(tmp_path, invoke):
    """configs/simulated.yaml: the demo customer sends each row's scenario and follow-ups,
    one a turn, offline; two runs have the same conversations and figures, and the rows'
    top-level references are scored on the whole conversation."""
    config = Path(__file__).resolve().parent.parent / "configs" / "simulated.yaml"
    rows = {
        row["id"]: row
        for row in map(json.loads, (config.parent.parent / "datasets" / "customers.jsonl").open())
    }
    runs = []
    for attempt in ("first", "second"):
        out = tmp_path / f"{attempt}.json"
        result = invoke("run", config, "--store", tmp_path / f"{attempt}.db", "--json", out)
        assert result.exit_code == 0, result.output
        runs.append(
            {
                (e["target"], r["example_id"]): (
                    [(t["inputs"], t["outputs"]["final_response"]) for t in r["turns"]],
                    {k: v for k, v in r["scores"].items() if "latency" not in k},
                    r["comments"],
                )
                for e in json.loads(out.read_text())["experiments"]
                for r in e["results"]
            }
        )
    first, second = runs
    assert first == second
    assert len(first) == 2 * len(rows)
    for (target, example), (turns, scores, comments) in first.items():
        inputs = rows[example]["inputs"]
        said = [inputs["scenario"], *inputs["followups"]]
        assert [t[0] for t in turns] == [{"question": text} for text in said], (target, example)
        assert scores["turns"] == len(said)
        for key in ("routing_accuracy", "resolution_coverage"):
            assert comments[key].startswith("whole conversation: "), (target, example, key)
