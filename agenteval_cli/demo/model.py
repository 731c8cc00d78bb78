"""A deterministic chat model that plays one agent of the demo graphs, plus the model switch.

``RuleBasedChatModel`` is a real LangChain ``BaseChatModel``: it binds tools, runs through
callbacks like any provider, reports ``usage_metadata`` and a model name, and decides its
reply with the keyword rules in ``policy``. Same input, same output: no randomness, no
network, so the demo runs offline and its scores are reproducible.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, model_validator

from agenteval_cli.demo import policy
from agenteval_cli.demo.rules import AGENTS

MODEL_ENV_VAR = "AGENTEVAL_DEMO_MODEL"
LARGE_MODEL = "scripted-large"
SMALL_MODEL = "scripted-small"

ModelChoice = BaseChatModel | str | Callable[[str], BaseChatModel]
"""A chat model for every agent, an ``init_chat_model`` id, or a factory called per role."""


class ScriptedChatModel(BaseChatModel):
    """A real LangChain chat model whose replies come from rules, not from a network.

    Subclasses say what to answer (:meth:`_decide`); this class binds tools, reports a model
    name and ``usage_metadata`` and runs through callbacks as a provider's model does.
    Token usage is estimated as ceil(characters / 4): the input counts every message
    (system prompt included) and the bound tool schemas, the output counts the text plus
    the tool calls as JSON. That makes cost grow with what the model is given to read, as
    with a real provider.
    """

    model_config = ConfigDict(protected_namespaces=())

    role: str = "supervisor"
    model_name: str = ""

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "role": self.role}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "scripted"
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in OpenAI form; ``_generate`` reads their names to know its options."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond(messages, kwargs.get("tools") or [])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._respond(messages, kwargs.get("tools") or [])

    def _decide(
        self, messages: list[BaseMessage], tool_names: tuple[str, ...]
    ) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        """The reply's text and its tool calls (name, arguments)."""
        raise NotImplementedError

    def _respond(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> ChatResult:
        names = tuple(_tool_name(t) for t in tools)
        content, calls = self._decide(messages, names)

        digest = _digest([self.role, self.model_name, names, [_fingerprint(m) for m in messages]])
        tool_calls = [
            {"name": name, "args": args, "id": f"call_{digest[:16]}_{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ]
        input_tokens = _tokens(sum(_chars(m) for m in messages) + len(_dumps(tools)))
        calls_json = _dumps([{"name": c["name"], "args": c["args"]} for c in tool_calls])
        output_tokens = _tokens(len(content) + len(calls_json))
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        message = AIMessage(
            content=content,
            tool_calls=tool_calls,
            id=f"scripted-{digest[:24]}",
            usage_metadata=usage,
            response_metadata={
                "model_name": self.model_name,
                "model_provider": "scripted",
                "finish_reason": "tool_calls" if tool_calls else "stop",
            },
        )
        llm_output = {"model_name": self.model_name, "token_usage": dict(usage)}
        return ChatResult(generations=[ChatGeneration(message=message)], llm_output=llm_output)


class RuleBasedChatModel(ScriptedChatModel):
    """Plays ``role`` ("supervisor" or a specialist name) by keyword rules over the messages.

    Its input grows with the history it is given, which is what the supervisor/swarm token
    comparison is about.
    """

    model_name: str = ""
    """Defaults to ``scripted-large`` for the supervisor, ``scripted-small`` otherwise."""

    @model_validator(mode="before")
    @classmethod
    def _default_model_name(cls, values: Any) -> Any:
        if isinstance(values, dict):
            role = values.get("role", "supervisor")
            if role != "supervisor" and role not in AGENTS:
                raise ValueError(f"unknown role {role!r}; expected 'supervisor' or one of {AGENTS}")
            if not values.get("model_name"):
                values = {
                    **values,
                    "model_name": LARGE_MODEL if role == "supervisor" else SMALL_MODEL,
                }
        return values

    def _decide(
        self, messages: list[BaseMessage], tool_names: tuple[str, ...]
    ) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        convo = policy.Conversation(tuple(_turn(m) for m in messages), tool_names)
        if self.role == "supervisor":
            reply = policy.supervisor_turn(convo)
        else:
            reply = policy.specialist_turn(self.role, convo)
        return reply.content, list(reply.calls)


def model_for(role: str, choice: ModelChoice | None = None) -> BaseChatModel:
    """The chat model for one agent of a demo graph.

    Without ``choice``, ``$AGENTEVAL_DEMO_MODEL`` (e.g. ``openai:gpt-4o-mini``) selects a
    real provider through ``init_chat_model``; unset, the agent gets a scripted model.
    """
    if choice is None:
        choice = os.environ.get(MODEL_ENV_VAR) or None
    if choice is None:
        return RuleBasedChatModel(role=role)
    if isinstance(choice, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(choice)
    if isinstance(choice, BaseChatModel):
        return choice
    return choice(role)


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", {}).get("name") or tool.get("name") or "")


def _text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in message.content
        if isinstance(b, str) or b.get("type") == "text"
    )


def _turn(message: BaseMessage) -> policy.Turn:
    if isinstance(message, AIMessage):
        return policy.Turn(
            "ai",
            _text(message),
            message.name,
            tuple(c["name"] for c in message.tool_calls),
            bool(message.response_metadata.get("__is_handoff_back")),
        )
    # "tool", "human", "system", ...
    return policy.Turn(message.type, _text(message), message.name)


def _fingerprint(message: BaseMessage) -> list[Any]:
    calls = [[c["name"], c["args"]] for c in getattr(message, "tool_calls", [])]
    return [message.type, message.name, _text(message), calls]


def _chars(message: BaseMessage) -> int:
    calls = getattr(message, "tool_calls", [])
    extra = _dumps([{"name": c["name"], "args": c["args"]} for c in calls]) if calls else ""
    return len(_text(message)) + len(extra)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _digest(value: Any) -> str:
    return hashlib.sha256(_dumps(value).encode()).hexdigest()


def _tokens(chars: int) -> int:
    return math.ceil(chars / 4)
