"""Checkpointers: whether a graph keeps a conversation itself, and whether its saver can be
called from ``ainvoke`` at all.

A saver that implements only LangGraph's sync methods (``SqliteSaver``, the first one most
guides show, or a saver of one's own) fails a graph's ``ainvoke`` on its first read. Such a
graph is run through ``graph.invoke`` on a worker thread instead; which savers need it is
told by what they do, never by their class's name.
"""

from __future__ import annotations

import uuid
from typing import Any

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
    probe = {"configurable": {"thread_id": f"agenteval-probe-{uuid.uuid4()}", "checkpoint_ns": ""}}
    try:
        await saver.aget_tuple(probe)
    except NotImplementedError:
        return True
    except Exception:
        return False
    return False
