"""A third-party graph whose chat model is built when its module is imported runs against a
local OpenAI-compatible server named in a .env beside the spec, with a dummy key, as
docs/agents.md says."""

from __future__ import annotations

import json

from openai_server import openai_server

AGENT = """
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph

model = ChatOpenAI(model="gpt-4o-mini")  # built at import, from the environment


def agent(state: MessagesState) -> dict:
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_edge(START, "agent")
graph = builder.compile(name="helpdesk")
"""

VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "AGENTEVAL_NO_DOTENV")


def test_a_model_built_at_import_reaches_the_server_a_dotenv_names(tmp_path, invoke, monkeypatch):
    for name in VARIABLES:  # unset for the test, and as they were after it
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    (tmp_path / "agent.py").write_text(AGENT)
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"inputs": {"question": "Where is my invoice?"}}) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n  helpdesk: agent.py:graph\n")
    with openai_server(["It is in your inbox."], model="gpt-4o-mini") as server:
        (tmp_path / ".env").write_text(
            f"OPENAI_BASE_URL={server.base_url}\nOPENAI_API_KEY=sk-local-dummy\n"
        )
        out = tmp_path / "r.json"
        result = invoke("run", spec, "--store", tmp_path / "s.db", "--json", out)
        assert result.exit_code == 0, result.output
    assert [r["messages"][-1]["content"] for r in server.requests] == ["Where is my invoice?"]
    (experiment,) = json.loads(out.read_text())["experiments"]
    (row,) = experiment["results"]
    assert row["outputs"]["final_response"] == "It is in your inbox."
    (call,) = row["trace"]["model_calls"]
    assert (call["agent"], call["input_tokens"], call["output_tokens"]) == ("helpdesk", 120, 30)
