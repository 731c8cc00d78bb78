"""The agents a recorded request's spans name, which the import can stand behind.

LangChain's runs are attributed by the tracer as a callback-traced run is: every agent it
finds is one the run would find. Other spans name an agent only by an agent span
(:func:`agenteval_cli.otel.ingest.runs.agent_of`); a model call under none of them gets a
name from the replay (its model's, or the target's), which the import must not pass off as
an agent the producer recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

from agenteval_cli.core.records import Trace
from agenteval_cli.otel.ingest.otlp import Span
from agenteval_cli.otel.ingest.runs import agent_of

__all__ = ["named_agents"]


def named_agents(spans: Sequence[Span], trace: Trace, langchain: bool) -> frozenset[str]:
    """The agents the request's spans name: the replayed trace's for LangChain's runs, else
    those of its agent spans."""
    if langchain:
        return frozenset(trace.agents_at_any_level)
    return frozenset(name for name in map(agent_of, spans) if name)
