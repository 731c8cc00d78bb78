"""Keep each target call's LangChain run tree in the store, so an upload can send child runs.

Used only when an experiment will be uploaded. A :class:`RunTreeCollector` (a LangChain
tracer that keeps runs in memory and sends nothing) joins the call's callbacks; plain
functions that call ``graph.invoke`` themselves are reached through a configure hook, as
:mod:`agenteval_cli.trace.recorder` does. Each work item gets its own wrapped target, so the tree is
stored under exactly its (experiment, example, repetition); a conversation's turns are
stored together, each run marked with its turn's number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.context import register_configure_hook

from agenteval_cli.data.conversations import TurnInput
from agenteval_cli.targets.adapt import TurnFn
from agenteval_cli.targets.session import Session

_current: ContextVar[RunTreeCollector | None] = ContextVar("agenteval_run_trees", default=None)
register_configure_hook(_current, inheritable=True)


class RunTreeCollector(BaseTracer):
    """Collects finished root runs (with their child runs) of one target call."""

    run_inline = True  # keep the tracer's run map consistent in async graphs

    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Any] = []

    def _persist_run(self, run: Any) -> None:
        self.roots.append(run)

    def flat(self) -> list[dict[str, Any]]:
        """Every collected run, parents before children (each one's in the order they
        started), as JSON-ready dicts; walked on a list, as deep as the runs nest."""
        out: list[dict[str, Any]] = []
        stack = list(reversed(self.roots))
        while stack:
            run = stack.pop()
            out.append(run_dict(run))
            children = sorted(run.child_runs or [], key=lambda r: r.start_time)
            stack.extend(reversed(children))
        return out


def run_dict(run: Any) -> dict[str, Any]:
    metadata = dict((run.extra or {}).get("metadata") or {})
    return {
        "id": str(run.id),
        "parent_run_id": str(run.parent_run_id) if run.parent_run_id else None,
        "name": run.name,
        "run_type": run.run_type,
        "start_time": run.start_time.isoformat() if run.start_time else None,
        "end_time": run.end_time.isoformat() if run.end_time else None,
        "inputs": run.inputs or {},
        "outputs": run.outputs,
        "error": run.error,
        "tags": list(run.tags or []),
        "metadata": metadata,
    }


TreeSink = Callable[[str, str, int, list[dict[str, Any]]], None]


def wrap_items(items: Iterable[Any], experiment_ids: dict[str, str], sink: TreeSink) -> Iterator:
    """Work items whose targets also record their run tree into ``sink``.

    ``experiment_ids`` maps a target name to its experiment id. The item keeps every other
    field, so the runner and the store see the same work.
    """
    for item in items:
        target = item.target
        key = (experiment_ids[target.name], item.example.id, item.repetition)
        wrapped = dataclasses.replace(
            target,
            call=_recording(target.call, *key, sink),
            turn_call=_recording_turns(target.turn, *key, sink),
        )
        yield dataclasses.replace(item, target=wrapped)


def _recording_turns(
    turn: TurnFn, experiment_id: str, example_id: str, repetition: int, sink: TreeSink
) -> TurnFn:
    """A conversation's turns, each recorded as its own tree: every run is marked with the
    number of the turn it belongs to (``"turn"``), and the trees of the turns so far are
    stored together after each turn. A conversation redone on a new thread starts over."""
    kept: dict[str, list[dict[str, Any]]] = {}

    async def recorded(inputs: TurnInput, session: Session, callbacks: list[Any]) -> dict[str, Any]:
        collector = RunTreeCollector()
        token = _current.set(collector)
        number = session.turns + 1  # the turns this session sent before this one, plus it
        try:
            return await turn(inputs, session, [*callbacks, collector])
        finally:
            _current.reset(token)
            if session.thread_id not in kept:
                kept.clear()  # an earlier attempt's turns are not this conversation's
                kept[session.thread_id] = []
            runs = kept[session.thread_id]
            runs[:] = [run for run in runs if run.get("turn") != number]
            runs += [{**run, "turn": number} for run in collector.flat()]
            sink(experiment_id, example_id, repetition, list(runs))

    return recorded


def _recording(call: Any, experiment_id: str, example_id: str, repetition: int, sink: TreeSink):
    async def recorded(inputs: dict[str, Any], callbacks: list[Any]) -> dict[str, Any]:
        collector = RunTreeCollector()
        token = _current.set(collector)
        try:
            return await call(inputs, [*callbacks, collector])
        finally:
            _current.reset(token)
            sink(experiment_id, example_id, repetition, collector.flat())

    return recorded
