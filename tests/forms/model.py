"""The corpus's chat model: replies chosen by a policy, every call written to a shared log.

A :class:`FormModel` serves one agent of one graph. Its policy sees the conversation the
model received and returns the reply; nothing depends on call order, so concurrent requests
cannot disturb each other. Token counts are fixed functions of the call, different for every
path through a graph:

- input tokens = 10 + the number of messages received,
- output tokens = 3 + (length of the reply text) // 10.

A model built with ``usage=False`` reports no ``usage_metadata`` at all: its tokens are
unknown (logged as ``None``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field

Policy = Callable[[list[BaseMessage]], AIMessage]


@dataclass(frozen=True)
class Call:
    """One model call as the model itself saw it."""

    seq: int
    graph: str  # which built graph the model belongs to (one per spec target)
    agent: str  # the agent the model serves
    model: str
    question: str  # the first human message's text
    request: str | None  # the first human message's id, when it has one
    humans: int  # human messages received: more than one means an earlier request leaked in
    received: int  # messages received
    input_tokens: int | None
    output_tokens: int | None
    text: str  # the reply's text
    tools: tuple[tuple[str, str], ...]  # the reply's tool calls: (name, JSON arguments)
    # the teams around the agent, outer first, where agents of one name sit in several teams
    # (each team's own "supervisor"); () when the test's Form says it by the agent's name
    team: tuple[str, ...] = ()
    error: str | None = None  # the policy raised (a provider error): no reply, no tokens


class CallLog:
    """Every model call of the corpus, thread-safe, in the order the calls were made."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._seq = itertools.count()

    def add(self, **fields: Any) -> Call:
        with self._lock:
            call = Call(seq=next(self._seq), **fields)
            self._calls.append(call)
            return call

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def calls(self, graph: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if graph is None or c.graph == graph]


LOG = CallLog()


def input_tokens(received: int) -> int:
    return 10 + received


def output_tokens(text: str) -> int:
    return 3 + len(text) // 10


def text_of(message: BaseMessage | dict[str, Any]) -> str:
    """A message's text, whether its content is a string or content blocks."""
    content = message.get("content") if isinstance(message, dict) else message.content
    if isinstance(content, str):
        return content
    parts = [b if isinstance(b, str) else b.get("text", "") for b in content or []]
    return "".join(p for p in parts if isinstance(p, str))


class FormModel(BaseChatModel):
    """A tool-calling chat model whose replies come from ``policy(messages)``.

    ``bind_tools`` is accepted and ignored (the policy names the tools). Async calls sleep
    ``delay_s`` plus ``delay_for(question)`` plus up to ``jitter_s`` at random first, so
    concurrent branches finish in varying order.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: str
    graph: str
    policy: Any = Field(exclude=True)  # Policy; typed loosely so pydantic keeps it as is
    model_name: str = "form-small"
    usage: bool = True
    delay_s: float = 0.0
    jitter_s: float = 0.0
    delay_for: Any = Field(default=None, exclude=True)  # question -> extra seconds to sleep
    log: Any = Field(default=LOG, exclude=True)
    # messages -> the agent this call serves, where one model plays several roles (read from
    # the prompt the graph swapped in); None: always ``agent``
    agent_from: Any = Field(default=None, exclude=True)
    team: tuple[str, ...] = ()  # logged with each call (see Call.team)

    @property
    def _llm_type(self) -> str:
        return "form-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        try:
            reply = self.policy(list(messages)).model_copy(deep=True)
        except Exception as error:  # a provider error: logged as made, with no reply
            self._log(messages, None, None, "", (), error=f"{type(error).__name__}: {error}")
            raise
        reply.tool_calls = [
            {**call, "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}"}
            for call in reply.tool_calls
        ]
        text = text_of(reply)
        tokens_in, tokens_out = input_tokens(len(messages)), output_tokens(text)
        reply.usage_metadata = (
            {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            }
            if self.usage
            else None
        )
        reply.response_metadata = {**reply.response_metadata, "model_name": self.model_name}
        self._log(
            messages,
            tokens_in if self.usage else None,
            tokens_out if self.usage else None,
            text,
            tuple(
                (c["name"], json.dumps(c.get("args") or {}, sort_keys=True))
                for c in reply.tool_calls
            ),
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _log(
        self,
        messages: list[BaseMessage],
        tokens_in: int | None,
        tokens_out: int | None,
        text: str,
        tools: tuple[tuple[str, str], ...],
        error: str | None = None,
    ) -> None:
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        self.log.add(
            graph=self.graph,
            agent=self.agent if self.agent_from is None else self.agent_from(messages),
            model=self.model_name,
            question=text_of(humans[0]) if humans else "",
            request=humans[0].id if humans else None,
            humans=len(humans),
            received=len(messages),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            text=text,
            tools=tools,
            team=self.team,
            error=error,
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        delay = self.delay_s + (random.random() * self.jitter_s if self.jitter_s else 0.0)
        if self.delay_for is not None:
            humans = [m for m in messages if isinstance(m, HumanMessage)]
            delay += self.delay_for(text_of(humans[0]) if humans else "")
        if delay:
            await asyncio.sleep(delay)
        return self._generate(messages, stop, **kwargs)


LARGE, SMALL = "form-large", "form-small"  # coordinators' and specialists' model names
PRICING = {LARGE: {"input": 2.0, "output": 8.0}, SMALL: {"input": 0.5, "output": 1.5}}


def form_model(
    graph: str, agent: str, policy: Policy, *, large: bool = False, **kw: Any
) -> FormModel:
    """The model agent ``agent`` of graph ``graph`` runs on."""
    return FormModel(
        graph=graph, agent=agent, policy=policy, model_name=LARGE if large else SMALL, **kw
    )
