"""A real OpenTelemetry instrumentation recording what a test runs, written as OTLP JSON.

:func:`recording` instruments LangChain with OpenInference's instrumentor (``langchain``)
or OpenLLMetry's (``openllmetry``), or the OpenAI Agents SDK with OpenInference's processor,
on an SDK ``TracerProvider`` with an in-memory exporter, for the block only; the spans it
finished are then written by :func:`otlp_files.write_otlp`, as a Collector's file exporter
writes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otlp_files import write_otlp


class Recording:
    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    def write(self, path: Path) -> Path:
        """The spans so far into ``path``, a line per trace (as exports arrive), then cleared."""
        by_trace: dict[int, list[Any]] = {}
        for span in self.spans():
            by_trace.setdefault(span.context.trace_id, []).append(span)
        self.exporter.clear()
        return write_otlp(path, by_trace.values())


_KEPT: dict[str, tuple[Any, Any]] = {}  # framework -> (provider, exporter) kept for the process


def _provider(framework: str) -> tuple[Any, Any]:
    """A fresh provider and in-memory exporter; OpenLLMetry's, one for the process: agents
    built while it instruments keep its callback handler, and so its provider, afterwards
    (as an application instruments once, at startup)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = _KEPT.get(framework)
    if kept is not None:
        kept[1].clear()
        return kept
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if framework == "openllmetry":
        _KEPT[framework] = (provider, exporter)
    return provider, exporter


@contextmanager
def recording(framework: str = "langchain") -> Iterator[Recording]:
    provider, exporter = _provider(framework)
    if framework == "langchain":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        instrumentor: Any = LangChainInstrumentor()
    elif framework == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        instrumentor = LangchainInstrumentor()
    else:
        import agents
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        agents.set_trace_processors([])  # nothing sent to OpenAI's own trace backend
        instrumentor = OpenAIAgentsInstrumentor()
    kept = _patched_by_openllmetry() if framework == "openllmetry" else {}
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield Recording(exporter)
    finally:
        instrumentor.uninstrument()
        for (owner, name), original in kept.items():  # what its uninstrument leaves wrapped
            setattr(owner, name, original)
        if framework not in _KEPT:
            provider.shutdown()


def _patched_by_openllmetry() -> dict[tuple[Any, str], Any]:
    """The class attributes OpenLLMetry's LangChain instrumentation wraps, as they are now.
    Its uninstrument leaves most of them wrapped (the callback managers' ``__init__`` among
    them), so every later test in the process would get its callback handler."""
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.callbacks import BaseCallbackManager
    from langgraph.pregel import Pregel
    from langgraph.types import Command

    hooks = ["before_agent", "before_model", "after_model", "after_agent"]
    names = {
        BaseCallbackManager: ["__init__"],
        AgentMiddleware: hooks + [f"a{hook}" for hook in hooks],
        Pregel: ["stream", "astream"],
        Command: ["__init__"],
    }
    return {
        (owner, name): vars(owner)[name]
        for owner, attrs in names.items()
        for name in attrs
        if name in vars(owner)
    }
