"""Faults injected into a target's calls from the outside: a callback handler that raises.

LangChain lets a handler's exception out of ``on_tool_start`` / ``on_chat_model_start``
when its ``raise_error`` is true, before the tool or model runs. The error then travels
the graph's own way: a tool's through ``ToolNode`` (its ``handle_tool_errors``, or up and
out), a model's through the agent (retry middleware, ``with_fallbacks``) or up and out. The
user's graph is not changed. Which calls fail is a hash of the fault's seed, the example,
the repetition and the call's index among the calls the fault matches, so neither the run's
concurrency nor other requests change it; each failed call is marked in the trace.

A call is recorded before it fails: an async call runs the recorder in place and the
injector after it, on a worker thread (where a timeout's wait blocks nothing); a sync call
runs its handlers in an order LangChain does not keep, so an injector that comes first
hands the start to the recorder itself, which the raised error would otherwise keep from it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import ToolException
from langchain_core.tracers.context import register_configure_hook

from agenteval_cli.core.faults import MARK
from agenteval_cli.spec.faults import FaultSpec
from agenteval_cli.trace.recorder import TraceRecorder, agent_from_metadata

__all__ = ["FaultInjector", "fault_error", "injecting"]

_injecting: ContextVar[FaultInjector | None] = ContextVar("agenteval_faults", default=None)
# A function target's graph gets the injector as it gets the recorder: through a hook.
register_configure_hook(_injecting, inheritable=True)


class _QuietInjections(logging.Filter):
    """LangChain logs a warning for every handler that raises; an injected fault is meant."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (args and args[0] == FaultInjector.__name__)


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietInjections())


@contextmanager
def injecting(injector: FaultInjector) -> Iterator[FaultInjector]:
    """Inject ``injector``'s faults into every LangChain run started inside the block."""
    token = _injecting.set(injector)
    try:
        yield injector
    finally:
        _injecting.reset(token)


class FaultInjector(BaseCallbackHandler):
    """Fails the calls the target's ``faults`` select, for one request or all the turns of
    one conversation (``key``: the example's id and the repetition). ``recorder`` is the
    trace of the call under way, where each failed call is marked."""

    raise_error = True
    run_inline = False  # async: after the inline recorder, on a thread (a timeout sleeps)
    ignore_llm = ignore_chat_model = ignore_agent = False  # models; tools (agent)
    ignore_chain = ignore_retry = ignore_retriever = ignore_custom_event = True

    def __init__(
        self,
        faults: Sequence[FaultSpec],
        key: Sequence[Any],
        recorder: TraceRecorder | None = None,
        own_agent: str | None = None,
    ) -> None:
        self._faults = list(faults)
        self._key = list(key)
        self.recorder = recorder  # the trace that marks each failed call
        self._own_agent = own_agent
        self._lock = threading.Lock()
        self._counts: dict[tuple[int, str], int] = {}

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        invocation_params: Any = None,
        **kw: Any,
    ) -> None:
        model = model_name(metadata, invocation_params, serialized)
        agents = self._agents(metadata)
        chosen = self._choose(lambda f: not f.on_tools and _matches_model(f, model, agents), model)
        if chosen is None:
            return
        recorder = self.recorder
        if recorder is not None and not recorder.saw(run_id):
            recorder.on_chat_model_start(
                serialized,
                messages,
                run_id=run_id,
                metadata=metadata,
                invocation_params=invocation_params,
                **kw,
            )
        self._fail(chosen, run_id, model, (metadata or {}).get("ls_provider"), model=True)

    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kw.get("name") or "tool")
        agents = self._agents(metadata)
        chosen = self._choose(lambda f: f.on_tools and _matches_tool(f, name, agents), name)
        if chosen is None:
            return
        recorder = self.recorder
        if recorder is not None and not recorder.saw(run_id):
            recorder.on_tool_start(serialized, input_str, run_id=run_id, metadata=metadata, **kw)
        self._fail(chosen, run_id, name, None, model=False)

    def _agents(self, metadata: dict[str, Any] | None) -> set[str]:
        """The agents a call runs under, as its run's metadata says: the agent's name
        (``lc_agent_name``) and the graph nodes of its namespace, outer to inner; and the
        target's own agent (named after the target) when no agent name is there."""
        metadata = metadata or {}
        names = set()
        lc_name = metadata.get("lc_agent_name")
        if isinstance(lc_name, str) and lc_name:
            names.add(lc_name)
        elif self._own_agent:
            names.add(self._own_agent)
        namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns")
        if isinstance(namespace, str):
            names.update(part.partition(":")[0] for part in namespace.split("|") if part)
        top = agent_from_metadata(metadata)
        if top:
            names.add(top)
        return names

    def _choose(self, matches: Callable[[FaultSpec], bool], name: str) -> FaultSpec | None:
        """The first fault that fails this call; each matching fault counts it."""
        chosen = None
        with self._lock:
            for position, fault in enumerate(self._faults):
                if not matches(fault):
                    continue
                counted = fault.agent if fault.agent is not None and not fault.on_tools else name
                index = self._counts.get((position, counted), 0) + 1
                self._counts[(position, counted)] = index
                if chosen is None and self._fails(fault, position, counted, index):
                    chosen = fault
        return chosen

    def _fails(self, fault: FaultSpec, position: int, counted: str, index: int) -> bool:
        if fault.calls is not None and index not in fault.calls:
            return False
        if fault.rate is None:
            return True
        return draw([fault.seed, *self._key, position, counted, index]) < fault.rate

    def _fail(
        self, fault: FaultSpec, run_id: UUID, what: str, provider: Any, *, model: bool
    ) -> None:
        if fault.fail == "timeout" and fault.after_s:
            time.sleep(fault.after_s)
        error = fault_error(fault.fail, what, fault.after_s, provider, model=model)
        if self.recorder is not None:
            self.recorder.injected(run_id, fault.fail, error)
        raise error


def draw(parts: list[Any]) -> float:
    """A number in [0, 1) fixed by ``parts``: the same call of the same request always
    draws the same, whatever else runs."""
    text = json.dumps(parts, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _matches_tool(fault: FaultSpec, name: str, agents: set[str]) -> bool:
    return fault.tool in ("*", name) and (fault.agent is None or fault.agent in agents)


def _matches_model(fault: FaultSpec, model: str, agents: set[str]) -> bool:
    return (fault.model is None or fault.model == model) and (
        fault.agent is None or fault.agent in agents
    )


def model_name(metadata: dict[str, Any] | None, params: Any, serialized: Any) -> str:
    """The model a call asks for: as configured (``ls_model_name``, the ``model``
    parameter), else the chat model's class name."""
    for value in (
        (metadata or {}).get("ls_model_name"),
        *((params.get(k) for k in ("model", "model_name")) if isinstance(params, dict) else ()),
    ):
        if isinstance(value, str) and value:
            return value
    ids = (serialized or {}).get("id") if isinstance(serialized, dict) else None
    return str(ids[-1]) if isinstance(ids, list) and ids else "unknown-model"


_PROVIDER_URLS = {
    "openai": "https://api.openai.com/v1/chat/completions",
    "azure": "https://api.openai.com/v1/chat/completions",
    "anthropic": "https://api.anthropic.com/v1/messages",
}
# The classes a provider's LangChain integration raises for a 429 and a 5xx: its client's
# error and LangChain's provider-neutral one at once.
_PROVIDER_ERRORS = {
    "openai": ("langchain_openai.chat_models.base", "OpenAIRateLimitError", "OpenAIAPIError"),
    "azure": ("langchain_openai.chat_models.base", "OpenAIRateLimitError", "OpenAIAPIError"),
    "anthropic": (
        "langchain_anthropic.chat_models",
        "AnthropicRateLimitError",
        "AnthropicAPIError",
    ),
}


def fault_error(
    kind: str, what: str, after_s: float = 0.0, provider: Any = None, *, model: bool = False
) -> Exception:
    """The error a real failure of this kind raises, marked as injected: a tool's
    ``ToolException``; Python's ``TimeoutError``; for a model's rate limit (429) or server
    error (500) the class its provider's integration raises (``OpenAIRateLimitError``,
    ``AnthropicAPIError``...) when it is loaded, else LangChain's ``ModelRateLimitError`` /
    ``ModelAPIError``; a tool's rate limit is httpx's ``HTTPStatusError`` (429)."""
    error: Exception
    if kind == "error":
        error = ToolException(f"{what} failed (injected fault)")
    elif kind == "timeout":
        error = TimeoutError(f"{what} timed out after {after_s:g} s (injected fault)")
    else:
        status = 429 if kind == "rate_limit" else 500
        name = provider if isinstance(provider, str) else ""
        error = _model_error(status, what, name) if model else _http_error(status, what, name)
    setattr(error, MARK, kind)
    return error


def _message(status: int, what: str) -> str:
    if status == 429:
        return f"Error code: 429 - rate limit reached for {what} (injected fault)"
    return f"Error code: 500 - the server had an error serving {what} (injected fault)"


def _response(status: int, provider: str) -> Any:
    import httpx

    request = httpx.Request("POST", _PROVIDER_URLS.get(provider, "https://model.invalid/v1/chat"))
    return httpx.Response(status, request=request, headers={"retry-after": "0"})


def _model_error(status: int, what: str, provider: str) -> Exception:
    from langchain_core.exceptions import ModelAPIError, ModelRateLimitError

    module_name, *names = _PROVIDER_ERRORS.get(provider, ("", "", ""))
    module = sys.modules.get(module_name) if module_name else None
    cls = getattr(module, names[0 if status == 429 else 1], None) if module else None
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls(_message(status, what), response=_response(status, provider), body=None)  # type: ignore[call-arg]
    error: Any = (ModelRateLimitError if status == 429 else ModelAPIError)(_message(status, what))
    error.status_code = status  # as the HTTP errors say it
    return error


def _http_error(status: int, what: str, provider: str) -> Exception:
    import httpx

    response = _response(status, provider)
    return httpx.HTTPStatusError(
        _message(status, what), request=response.request, response=response
    )
