"""Graphs compiled with each kind of checkpointer run conversations and single-turn rows:
async savers through ``ainvoke``, savers with only sync methods through ``invoke`` on a
worker thread, their conversation kept on one thread either way."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from agenteval_cli.core.records import Example, Result
from agenteval_cli.execution.runner import Runner, RunSettings, WorkItem
from agenteval_cli.targets import adapt
from agenteval_cli.targets.checkpointers import lacks_async_methods, runs_only_sync


class SyncOnlySaver(BaseCheckpointSaver[str]):
    """A saver of one's own with LangGraph's sync methods only (kept in an InMemorySaver)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept = InMemorySaver()

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.kept.get_tuple(config)

    def list(self, config: Any, **options: Any) -> Iterator[CheckpointTuple]:
        return self.kept.list(config, **options)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: ChannelVersions):
        return self.kept.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.kept.put_writes(config, writes, task_id, task_path)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.kept.get_next_version(current, channel)


class RefusingSaver(SyncOnlySaver):
    """One that overrides every async method only to refuse it: told by a probe."""

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        raise NotImplementedError("sync only")

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("sync only")

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("sync only")


def counting_graph(saver: Any) -> Any:
    """Answers how many user messages the thread holds: 2 on a second turn only when the
    checkpointer kept the first."""

    def answer(state: MessagesState) -> dict[str, Any]:
        asked = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        return {"messages": [AIMessage(f"{len(asked)} asked, last: {asked[-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=saver)


async def run(graph: Any, inputs: dict[str, Any]) -> Result:
    target = adapt(graph, name="t", import_path="x:t")
    runner = Runner(targets=[target], evaluators=[], settings=RunSettings(timeout_s=30))
    return await runner.run_one(WorkItem(target, Example("e1", inputs), 0))


def thread_ids(tuples: list[CheckpointTuple]) -> set[str]:
    return {c.config["configurable"]["thread_id"] for c in tuples}


def sqlite_saver() -> SqliteSaver:
    # check_same_thread=False: the graph runs on a worker thread (as from_conn_string opens it)
    return SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


SYNC_SAVERS = {
    "SqliteSaver": sqlite_saver,
    "own sync-only saver": SyncOnlySaver,
    "own refusing saver": RefusingSaver,
}


@pytest.mark.parametrize("make", list(SYNC_SAVERS.values()), ids=list(SYNC_SAVERS))
def test_a_graph_with_a_sync_only_checkpointer_keeps_its_conversation(make):
    saver = make()
    result = asyncio.run(run(counting_graph(saver), {"turns": ["Hi", "And now?"]}))

    assert (result.status, result.error) == ("ok", None)
    assert [t.outputs["final_response"] for t in result.turns] == [
        "1 asked, last: Hi",
        "2 asked, last: And now?",
    ]
    assert len(thread_ids(list(saver.list(None)))) == 1
    # traced on the worker thread as on the loop: the transcript of both turns, once
    assert result.trace.untraced is None
    assert [(m["role"], m["content"]) for m in result.trace.messages] == [
        ("user", "Hi"),
        ("assistant", "1 asked, last: Hi"),
        ("user", "And now?"),
        ("assistant", "2 asked, last: And now?"),
    ]


@pytest.mark.parametrize("make", list(SYNC_SAVERS.values()), ids=list(SYNC_SAVERS))
def test_a_single_turn_row_runs_on_a_sync_only_checkpointer_on_a_fresh_thread(make):
    saver = make()
    graph = counting_graph(saver)

    async def twice() -> list[Result]:
        return [await run(graph, {"question": q}) for q in ("Hi", "Again")]

    results = asyncio.run(twice())
    assert [(r.status, r.outputs["final_response"]) for r in results] == [
        ("ok", "1 asked, last: Hi"),
        ("ok", "1 asked, last: Again"),
    ]
    assert len(thread_ids(list(saver.list(None)))) == 2


def test_async_savers_run_through_ainvoke_on_the_loop():
    async def both() -> tuple[Result, Result, set[str], set[str]]:
        memory = InMemorySaver()
        on_memory = await run(counting_graph(memory), {"turns": ["Hi", "And now?"]})
        async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
            on_sqlite = await run(counting_graph(saver), {"turns": ["Hi", "And now?"]})
            kept = thread_ids([c async for c in saver.alist(None)])
        return on_memory, on_sqlite, thread_ids(list(memory.list(None))), kept

    on_memory, on_sqlite, memory_threads, sqlite_threads = asyncio.run(both())
    for result in (on_memory, on_sqlite):
        assert result.status == "ok"
        assert [t.outputs["final_response"] for t in result.turns] == [
            "1 asked, last: Hi",
            "2 asked, last: And now?",
        ]
    assert (len(memory_threads), len(sqlite_threads)) == (1, 1)


def test_which_savers_run_only_synchronously():
    async def verdicts() -> list[bool]:
        savers = (sqlite_saver(), SyncOnlySaver(), RefusingSaver(), InMemorySaver())
        graphs = [counting_graph(s) for s in savers]
        async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
            graphs.append(counting_graph(saver))
            return [await runs_only_sync(g) for g in [*graphs, counting_graph(None)]]

    assert asyncio.run(verdicts()) == [True, True, True, False, False, False]
    # told by their methods, but for one that overrides them all only to refuse them
    savers = (sqlite_saver(), SyncOnlySaver(), RefusingSaver(), InMemorySaver())
    assert [lacks_async_methods(s) for s in savers] == [True, True, False, False]


SQLITE_GRAPH = """
import sqlite3

from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

builder = StateGraph(MessagesState)
builder.add_node("answer", lambda state: {"messages": [AIMessage("hi")]})
builder.add_edge(START, "answer")
connection = sqlite3.connect(":memory:"{options})
graph = builder.compile(checkpointer=SqliteSaver(connection))
"""


def test_a_sqlite_saver_only_its_own_thread_may_use_is_refused_before_any_call(tmp_path, invoke):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"inputs": {"question": "hello"}}\n')
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n  keeper: graphs.py:graph\n")
    (tmp_path / "graphs.py").write_text(SQLITE_GRAPH.replace("{options}", ""))
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(
        f"error: {spec}:3: targets.keeper: the graph's checkpointer (SqliteSaver) has only sync "
        "methods, so the graph runs on a worker thread, where the checkpointer cannot be read: "
        "SQLite objects created in a thread can only be used in that same thread."
    )
    assert line.endswith(
        "(make it usable from any thread; for a SqliteSaver, open its connection with "
        'sqlite3.connect("checkpoints.sqlite", check_same_thread=False), as '
        "SqliteSaver.from_conn_string does)"
    )
    # opened for any thread, as the hint says: it runs (another module: that one is loaded)
    options = ", check_same_thread=False"
    (tmp_path / "any_thread.py").write_text(SQLITE_GRAPH.replace("{options}", options))
    spec.write_text(f"dataset: {data}\ntargets:\n  keeper: any_thread.py:graph\n")
    again = invoke("run", spec, "--store", tmp_path / "s.db")
    assert again.exit_code == 0, again.output


def test_concurrent_conversations_on_one_sqlite_saver_keep_apart():
    saver = sqlite_saver()
    graph = counting_graph(saver)

    async def together() -> list[Result]:
        openings = [f"Hi from {n}" for n in range(4)]
        return list(await asyncio.gather(*(run(graph, {"turns": [o, "More?"]}) for o in openings)))

    results = asyncio.run(together())
    assert [[t.outputs["final_response"] for t in r.turns] for r in results] == [
        [f"1 asked, last: Hi from {n}", "2 asked, last: More?"] for n in range(4)
    ]
    assert len(thread_ids(list(saver.list(None)))) == 4


class WritesOnlySync(SyncOnlySaver):
    """Reads async, but refuses to write so: the probe's read passes, the first write fails."""

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.kept.get_tuple(config)

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("sync writes only")

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("sync writes only")


def test_a_saver_refusing_an_async_write_the_probe_missed_is_run_synchronously():
    saver = WritesOnlySync()
    graph = counting_graph(saver)
    assert asyncio.run(runs_only_sync(graph)) is False  # its reads work under ainvoke
    result = asyncio.run(run(graph, {"turns": ["Hi", "And now?"]}))
    assert (result.status, result.error) == ("ok", None)
    assert [t.outputs["final_response"] for t in result.turns] == [
        "1 asked, last: Hi",
        "2 asked, last: And now?",
    ]
    assert len(thread_ids(list(saver.list(None)))) == 1  # the refused first step's thread: none


def test_a_not_implemented_error_of_the_graphs_own_code_is_its_error():
    def answer(state: MessagesState) -> dict[str, Any]:
        raise NotImplementedError("no answer yet")

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    result = asyncio.run(run(builder.compile(checkpointer=InMemorySaver()), {"question": "q"}))
    assert result.status == "error"
    assert "no answer yet" in (result.error or "")
