"""Checkpointers: whether a graph keeps a conversation itself, and whether its saver can be
called from ``ainvoke`` at all.

A saver that implements only LangGraph's sync methods (``SqliteSaver``, the first one most
guides show, or a saver of one's own) fails a graph's ``ainvoke`` on its first read. Such a
graph is run through ``graph.invoke`` on a worker thread instead; which savers need it is
told by what they do, never by their class's name: the async methods their class lacks, a
read that refuses to run async, or, past that, a ``NotImplementedError`` the saver itself
raised under ``ainvoke``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from agenteval_cli.targets.errors import TargetOptionError

# The async methods a run calls: a saver whose class leaves any to BaseCheckpointSaver
# (which raises NotImplementedError) runs only synchronously.
ASYNC_METHODS = ("aget_tuple", "aput", "aput_writes")


def saver_of(graph: Any) -> Any:
    """The graph's checkpointer when it is a saver, else None. ``checkpointer=True`` is
    only for subgraphs, which keep theirs in the saver of the graph above."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    saver = getattr(graph, "checkpointer", None)
    return saver if isinstance(saver, BaseCheckpointSaver) else None


def lacks_async_methods(saver: Any) -> bool:
    """Whether the saver's class leaves one of the async methods a run calls to
    BaseCheckpointSaver, which only raises."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    return any(
        getattr(type(saver), name, None) is getattr(BaseCheckpointSaver, name)
        for name in ASYNC_METHODS
    )


async def runs_only_sync(graph: Any) -> bool:
    """Whether the graph's checkpointer refuses async calls: its class lacks one
    (``SqliteSaver`` lacks ``aput_writes``), or it overrides them only to refuse, which a read
    of a thread nobody uses shows. Any other failure of that read is left for the graph's
    own call to report."""
    saver = saver_of(graph)
    if saver is None:
        return False
    if lacks_async_methods(saver):
        return True
    try:
        await saver.aget_tuple(_unused_thread())
    except NotImplementedError:
        return True
    except Exception:
        return False
    return False


def refused_by_saver(error: NotImplementedError, graph: Any) -> bool:
    """Whether the graph's own saver raised ``error`` (an async method it has only to
    refuse, past the probe's read): the graph works, called as ``graph.invoke``."""
    saver = saver_of(graph)
    if saver is None:
        return False
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_locals.get("self") is saver:
            return True
        trace = trace.tb_next
    return False


PROBE_TIMEOUT_S = 30.0  # a read that takes longer is left to the calls to report


def check_worker_thread_read(graph: Any) -> None:
    """Refuse, before any call, a sync-only saver that cannot be read from a worker thread,
    where its graph will run: a ``SqliteSaver`` whose connection was opened with the default
    ``check_same_thread=True`` would fail every example with SQLite's thread error."""
    saver = saver_of(graph)
    if saver is None or not lacks_async_methods(saver):
        return
    failed: list[BaseException] = []

    def read() -> None:
        try:
            saver.get_tuple(_unused_thread())
        except BaseException as exc:  # reported below, in the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=read, name="agenteval-checkpointer-probe", daemon=True)
    worker.start()
    worker.join(PROBE_TIMEOUT_S)
    if not failed:
        return
    name = type(saver).__name__
    raise TargetOptionError(
        f"the graph's checkpointer ({name}) has only sync methods, so the graph runs on a worker "
        f"thread, where the checkpointer cannot be read: {failed[0]}",
        hint="make it usable from any thread; for a SqliteSaver, open its connection with "
        'sqlite3.connect("checkpoints.sqlite", check_same_thread=False), as '
        "SqliteSaver.from_conn_string does",
    )


def _unused_thread() -> dict[str, Any]:
    """The config of a thread nobody uses: a read of it finds nothing and changes nothing."""
    return {"configurable": {"thread_id": f"agenteval-probe-{uuid.uuid4()}", "checkpoint_ns": ""}}
