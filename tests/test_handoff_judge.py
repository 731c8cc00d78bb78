"""handoff_judge through the real openevals and ChatOpenAI, against a local OpenAI-compatible
server: the request it sends holds each handoff's received input and the receiving agent's
reply, and the score is the one parsed from the server's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai_server import openai_server

from agenteval_cli.core.records import Handoff, Trace
from agenteval_cli.evaluators import build_evaluator
from agenteval_cli.evaluators.handoff_judge import receptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GRAPHS = Path(__file__).resolve().parent / "handoff_graphs.py"
QUESTION = "Who manages order ORD-1182?"
ASKED = "Which order number is this about?"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with openai_server() as srv:
        yield srv


def test_the_judge_is_shown_what_account_was_given_and_what_it_asked(server, invoke, tmp_path):
    """The swarm's account agent is handed the whole conversation (the order number in it)
    and asks for the number anyway (forget); kept, it looks the manager up."""
    rows = [
        {"id": "forgot", "inputs": {"question": QUESTION, "forget": True}, "outputs": {}},
        {"id": "kept", "inputs": {"question": QUESTION}, "outputs": {}},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        f"targets:\n  swarm: {GRAPHS}:swarm\n"
        "evaluators:\n"
        "  - {name: handoff_judge, model: 'openai:gpt-4o-mini',"
        f" base_url: '{server.base_url}', model_kwargs: {{max_retries: 0}}}}\n"
        "concurrency: 1\n"
    )

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        content = request["messages"][-1]["content"]
        if ASKED in content:
            return {"reasoning": "account asked for ORD-1182, which it was given", "score": False}
        return {"reasoning": "account used the order number", "score": True}

    server.reply_for = answer
    out = tmp_path / "out.json"
    result = invoke("run", spec, "--store", tmp_path / "a.db", "--json", out)
    assert result.exit_code == 0, result.output
    found = {r["example_id"]: r for r in json.loads(out.read_text())["experiments"][0]["results"]}
    assert len(server.requests) == 2  # one call per request with a handoff
    sent = {
        "forgot" if ASKED in r["messages"][-1]["content"] else "kept": r for r in server.requests
    }
    for row in ("forgot", "kept"):
        request = sent[row]
        assert request["model"] == "gpt-4o-mini"
        content = request["messages"][-1]["content"]
        assert content.startswith(
            "A multi-agent system passed the user's request from one agent to another."
        )
        assert f"The user's request: {QUESTION}\n" in content
        handoffs = json.loads(content.split("Handoffs: ", 1)[1].split("\n\nDid a receiving")[0])
        [handed] = handoffs
        assert (handed["from"], handed["to"]) == ("desk", "account")
        # what account's first call was given: the question and the handoff's tool message
        # (desk's reply has no text, its handoff call no arguments)
        assert handed["given"] == f"{QUESTION}\nSuccessfully transferred to account"
        reply = found[row]["outputs"]["final_response"]
        assert handed["replies"] == [reply]
        schema = request["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["score"]["type"] == "boolean"
    assert found["forgot"]["outputs"]["final_response"] == ASKED
    # account's own log: it was given the order number in both
    assert all(any("ORD-1182" in t for t in found[r]["outputs"]["given"][0]) for r in found)
    assert found["forgot"]["scores"]["handoff_judge"] is False
    assert found["forgot"]["comments"]["handoff_judge"] == (
        "account asked for ORD-1182, which it was given"
    )
    assert found["kept"]["scores"]["handoff_judge"] is True


def test_no_handoff_traced_is_null_without_a_call(server):
    fn = build_evaluator(
        "handoff_judge",
        {"model": "openai:gpt-4o-mini", "base_url": server.base_url},
        context={"name": "handoff_judge"},
    )
    import asyncio

    alone = asyncio.run(fn(inputs={}, trace=Trace(agent_path=["a"])))
    assert alone == {"key": "handoff_judge", "score": None, "comment": "no handoff"}
    old = Trace(agent_path=["a", "b"], handoffs=[Handoff("a", "b")])
    assert asyncio.run(fn(inputs={}, trace=old))["comment"] == "no handoff's received input traced"
    assert server.requests == []


def test_each_reception_gets_the_replies_of_the_stretch_that_followed_it():
    trace = Trace(
        agent_path=["desk", "account", "desk", "account"],
        handoffs=[
            Handoff("desk", "account", received="q1"),
            Handoff("account", "desk", received="r"),
            Handoff("desk", "account", received="q2"),
        ],
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "name": "desk", "content": ""},
            {"role": "assistant", "name": "account", "content": "first"},
            {"role": "assistant", "name": "desk", "content": "back"},
            {"role": "assistant", "name": "account", "content": "second"},
        ],
    )
    # desk is the first agent: its first stretch came before any handoff to it
    assert [(r["to"], r["replies"]) for r in receptions(trace)] == [
        ("account", ["first"]),
        ("desk", ["back"]),
        ("account", ["second"]),
    ]
