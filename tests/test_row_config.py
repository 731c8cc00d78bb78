"""A target's ``config:`` filled from each row (``configurable: {user_id: "{user_id}"}``),
once per conversation; the thread a row names, else one of each call's own; and a row that
lacks a field the config reads, refused before any call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Result
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.spec.model import load_spec
from agenteval_cli.targets import adapt


def user_graph(saver: Any = None) -> Any:
    """Answers with the configurable user_id and how many questions its thread holds."""

    def answer(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        user = config["configurable"].get("user_id")
        asked = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        return {"messages": [AIMessage(f"{user}: {len(asked)} asked")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=saver)


def run_all(target: Any, rows: list[dict[str, Any]]) -> list[Result]:
    """Every row at once, as a run with concurrency runs them."""
    runner = Runner(targets=[target], evaluators=[], settings=RunSettings(timeout_s=30))
    items = [WorkItem(target, Example(f"e{i}", row), 0) for i, row in enumerate(rows)]

    async def together() -> list[Result]:
        return list(await asyncio.gather(*(runner.run_one(item) for item in items)))

    return asyncio.run(together())


def answers(results: list[Result]) -> list[Any]:
    return [r.outputs["final_response"] if r.outputs else r.error for r in results]


def test_each_concurrent_row_gets_its_own_configurable():
    target = adapt(
        user_graph(),
        name="t",
        import_path="x:t",
        config={"configurable": {"user_id": "{user_id}", "tenant": "acme"}},
    )
    rows = [{"question": "q", "user_id": u} for u in ("u1", "u2", "u3")]
    assert target.config_fields == ("user_id",)
    assert answers(run_all(target, rows)) == ["u1: 1 asked", "u2: 1 asked", "u3: 1 asked"]


def test_a_runnable_gets_the_rows_config_and_keeps_its_type():
    seen: list[Any] = []

    def record(value: Any, config: RunnableConfig) -> str:
        seen.append((config["configurable"]["user_id"], config["metadata"]["note"]))
        return "ok"

    target = adapt(
        RunnableLambda(record),
        name="t",
        import_path="x:t",
        config={"configurable": {"user_id": "{n}"}, "metadata": {"note": "row {n}"}},
    )
    run_all(target, [{"n": 7}])
    assert seen == [(7, "row 7")]  # a lone placeholder keeps the field's value as it is


def test_a_thread_the_row_names_is_the_calls_thread_else_each_call_has_its_own():
    saver = InMemorySaver()
    named = adapt(
        user_graph(saver),
        name="t",
        import_path="x:t",
        config={"configurable": {"thread_id": "ticket-{ticket}", "user_id": "{ticket}"}},
    )
    # one after the other: the second row of ticket 1 finds the first's question there
    results = [run_all(named, [row])[0] for row in ({"question": "a", "ticket": 1},) * 2]
    results += run_all(named, [{"question": "b", "ticket": 2}])
    assert answers(results) == ["1: 1 asked", "1: 2 asked", "2: 1 asked"]
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert threads == {"ticket-1", "ticket-2"}

    fresh_saver = InMemorySaver()
    fresh = adapt(user_graph(fresh_saver), name="t", import_path="x:t")
    assert answers(run_all(fresh, [{"question": "a"}] * 2)) == ["None: 1 asked"] * 2
    assert len({c.config["configurable"]["thread_id"] for c in fresh_saver.list(None)}) == 2


def test_a_conversation_fills_its_config_once_from_its_first_turn():
    saver = InMemorySaver()
    target = adapt(
        user_graph(saver),
        name="t",
        import_path="x:t",
        config={"configurable": {"user_id": "{user_id}", "thread_id": "conv-{user_id}"}},
    )
    turns = [{"question": "hi", "user_id": "u9"}, "and then?"]  # the second has no user_id
    (result,) = run_all(target, [{"turns": turns}])
    assert (result.status, result.error) == ("ok", None)
    assert [t.outputs["final_response"] for t in result.turns] == ["u9: 1 asked", "u9: 2 asked"]
    assert {c.config["configurable"]["thread_id"] for c in saver.list(None)} == {"conv-u9"}


def test_a_row_lacking_a_config_field_is_that_examples_error_when_called():
    target = adapt(
        user_graph(), name="t", import_path="x:t", config={"configurable": {"user_id": "{uid}"}}
    )
    (result,) = run_all(target, [{"question": "q"}])
    assert result.error == (
        "MissingInputField: config: this example's inputs have no field 'uid' (its fields: "
        "question)"
    )


def _spec(tmp_path: Path, rows: list[dict[str, Any]], config: str) -> Path:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"inputs": r}) + "\n" for r in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {data}\ntargets:\n  sup:\n    target: agenteval_cli.demo.supervisor:graph\n"
        f"    config:\n      configurable: {config}\n"
    )
    return spec


@pytest.mark.parametrize(
    ("rows", "where"),
    [
        (
            [{"question": "a", "customer_id": "c1"}, {"question": "b"}],
            "row 2 lacks (it has: question)",
        ),
        ([{"turns": [{"question": "a"}, "b"]}], "row 1 turn 1 lacks (it has: question)"),
    ],
    ids=["single-turn", "conversation"],
)
def test_a_row_lacking_a_config_field_fails_the_run_before_any_call(tmp_path, invoke, rows, where):
    spec = _spec(tmp_path, rows, '{user_id: "{customer_id}"}')
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: {spec}:5: target 'sup' config: fills {{customer_id}} from the row, which "
        f"{where} (give every row inputs.customer_id, or take the placeholder out of config:)"
    ]
    assert "Traceback" not in result.output


def test_a_thread_id_the_same_for_every_row_is_refused_in_the_spec(tmp_path):
    spec = _spec(tmp_path, [{"question": "a"}], "{thread_id: t1}")
    with pytest.raises(UserError) as caught:
        load_spec(spec)
    assert str(caught.value) == (
        f"{spec}:6: targets.sup.config.configurable.thread_id: 'thread_id' is the same for "
        "every example, so they would share one thread (fill it from the row, e.g. thread_id: "
        '"{ticket_id}", or leave it out: agenteval then gives every call a thread of its own)'
    )
    per_row = _spec(tmp_path, [{"question": "a", "ticket": "7"}], '{thread_id: "t-{ticket}"}')
    target = load_spec(per_row).targets[0]
    assert target.config is not None
    assert target.config.runnable_config() == {"configurable": {"thread_id": "t-{ticket}"}}


class StubServer:
    """Stands for the LangGraph SDK client of a served graph: records the threads made and
    each run's thread and config, answering each run with one AI message."""

    def __init__(self) -> None:
        self.threads: list[Any] = []
        self.runs: list[tuple[str, Any]] = []
        self.threads_api = SimpleNamespace(create=self.create)
        self.runs_api = SimpleNamespace(stream=self.stream)

    async def get(self) -> Any:  # as targets.remote's clients, made off the event loop
        return SimpleNamespace(threads=self.threads_api, runs=self.runs_api)

    async def create(self, thread_id: str | None = None, **_: Any) -> dict[str, Any]:
        made = thread_id or f"server-{len(self.threads)}"
        self.threads.append(thread_id)
        return {"thread_id": made}

    def stream(self, thread_id: str, graph: str, *, config: Any, **_: Any) -> Any:
        self.runs.append((thread_id, config))
        values = {"messages": [{"type": "ai", "content": f"on {thread_id}"}]}

        async def parts() -> Any:
            yield SimpleNamespace(event="values", data=values)

        return parts()


def test_a_served_graph_gets_the_rows_config_and_runs_on_the_thread_it_names():
    from agenteval_cli.targets.remote import RemoteGraph, remote_target

    config = {"configurable": {"user_id": "{user_id}", "thread_id": "t-{user_id}"}, "tags": ["x"]}
    target = remote_target(
        RemoteGraph("http://127.0.0.1:1", "agent"), name="r", import_path="r", config=config
    )
    server = StubServer()
    target.call.__self__.clients = server  # type: ignore[attr-defined]
    results = run_all(target, [{"question": "q", "user_id": "u1"}, {"turns": ["a", "b"]}])
    assert results[0].outputs["final_response"] == "on t-u1"
    # the conversation's first turn has no user_id: that conversation's error, in one line
    assert results[1].error == (
        "turn 1: MissingInputField: config: this example's inputs have no field 'user_id' (its "
        "fields: question)"
    )
    # the thread is the run's, never a configurable the server is sent
    assert server.threads == ["t-u1"]
    assert server.runs == [("t-u1", {"configurable": {"user_id": "u1"}, "tags": ["x"]})]
