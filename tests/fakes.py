"""A deterministic tool-calling chat model for offline tests.

It replays a script of ``AIMessage`` objects (or raises a scripted exception), one per call,
so multi-agent graphs built with langgraph-supervisor and langgraph-swarm run without a
provider and produce exact, assertable traces.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr


class ScriptedChatModel(BaseChatModel):
    """Returns the next scripted reply on every call; ``bind_tools`` is accepted and ignored."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # AIMessage or BaseException items; typed loosely so pydantic keeps exceptions as they are.
    script: list[Any] = Field(default_factory=list)
    model_name: str = "scripted-model"
    report_model_name: bool = True  # put ``model_name`` into response_metadata like providers do
    delay_s: float = 0.0  # async calls sleep this long first, so concurrent runs interleave
    _cursor: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _received: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def calls(self) -> int:
        """How many replies were handed out."""
        return self._cursor

    @property
    def received(self) -> list[list[BaseMessage]]:
        """The messages each call was given, in call order."""
        return self._received

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            if self._cursor >= len(self.script):
                raise RuntimeError(f"{self.model_name}: script exhausted after {self._cursor}")
            step = self.script[self._cursor]
            self._cursor += 1
            self._received.append(list(messages))
        if isinstance(step, BaseException):
            raise step
        reply = step.model_copy(deep=True)
        reply.tool_calls = [
            {**call, "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}"}
            for call in reply.tool_calls
        ]
        if self.report_model_name:
            reply.response_metadata = {**reply.response_metadata, "model_name": self.model_name}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(self.delay_s)
        return self._generate(messages, stop, **kwargs)


def reply(
    content: str = "",
    *,
    tools: Sequence[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]] = (),
    tokens: tuple[int, int] | None = None,
) -> AIMessage:
    """One scripted reply: text, tool calls ``(name, args[, id])``, optional ``(in, out)`` tokens.

    Tool calls without an id get a fresh one per call, as providers do.
    """
    usage = None
    if tokens is not None:
        usage = {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": tokens[0] + tokens[1],
        }
    return AIMessage(
        content=content,
        tool_calls=[
            {"name": call[0], "args": call[1], "id": call[2] if len(call) > 2 else None}
            for call in tools
        ],
        usage_metadata=usage,
    )


def scripted(
    name: str, *steps: AIMessage | BaseException, delay_s: float = 0.0
) -> ScriptedChatModel:
    """A fresh scripted model called ``name`` (each graph run needs its own cursor)."""
    return ScriptedChatModel(script=list(steps), model_name=name, delay_s=delay_s)
