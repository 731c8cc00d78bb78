"""A langgraph-swarm whose receiving agent answers from what it was handed, for the tests
that carry handoff_context, handoff_clean, recovery and blame through every path.

``desk`` hands over to ``account`` (a prebuilt ReAct agent). ``account``'s model
(:class:`OrderDesk`) looks the account manager up only when the order number is among the
messages it was given; without it, it asks the user for the number again. The row's
``trim`` input gives ``account`` a ``pre_model_hook`` that keeps only the messages since the
handoff's tool message, as a swarm member filtering its history would: the user's message,
and its order number, are then lost at the handoff. ``forget`` has account ask for the
number although it was given it. ``announce`` has the desk also say it
transfers the user to that agent (billing: one of the swarm it never hands over to).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph_swarm import create_handoff_tool, create_swarm
from pydantic import ConfigDict, PrivateAttr

ORDER = "ORD-1182"
MANAGER = "Priya Shah"
ASK_AGAIN = "Which order number is this about?"


@tool
def get_account_manager(order: str) -> str:
    """Find the account manager of an order."""
    return f"The account manager of {order} is {MANAGER}."


class OrderDesk(BaseChatModel):
    """Looks the manager up when ``ORD-1182`` is in what it is given, then answers; asks
    for the order number otherwise (or always, ``forgetful``). Reports 20+2 tokens a call,
    logs what each call got."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    model_name: str = "account-model"
    forgetful: bool = False  # asks for the order number even when it was given it
    _given: list[list[str]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "order-desk"

    @property
    def given(self) -> list[list[str]]:
        """The text of each message every call was given, in call order."""
        return self._given

    def bind_tools(self, tools: Any, **_: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        texts = [str(m.content) for m in messages]
        with self._lock:
            self._given.append(texts)
        usage = {"input_tokens": 20, "output_tokens": 2, "total_tokens": 22}
        if isinstance(messages[-1], ToolMessage) and MANAGER in texts[-1]:
            reply = AIMessage(f"{MANAGER} is your account manager.", usage_metadata=usage)
        elif any(ORDER in t for t in texts) and not self.forgetful:
            call = {"name": "get_account_manager", "args": {"order": ORDER}, "id": "c-manager"}
            reply = AIMessage("", tool_calls=[call], usage_metadata=usage)
        else:
            reply = AIMessage(ASK_AGAIN, usage_metadata=usage)
        reply.response_metadata["model_name"] = self.model_name
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Desk(BaseChatModel):
    """The front desk: hands over to account (10+1 tokens), saying so when told."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    model_name: str = "desk-model"
    say: str = ""

    @property
    def _llm_type(self) -> str:
        return "desk"

    def bind_tools(self, tools: Any, **_: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        usage = {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}
        call = {"name": "transfer_to_account", "args": {}, "id": "c-desk"}
        reply = AIMessage(self.say, tool_calls=[call], usage_metadata=usage)
        reply.response_metadata["model_name"] = self.model_name
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _since_handoff(state: dict[str, Any]) -> dict[str, Any]:
    messages = state["messages"]
    last = max(i for i, m in enumerate(messages) if isinstance(m, ToolMessage))
    return {"llm_input_messages": messages[last:]}


def swarm(inputs: dict[str, Any]) -> dict[str, Any]:
    """The swarm, built afresh; ``given``: what each of account's model calls was given."""
    from langgraph.prebuilt import create_react_agent

    account_model = OrderDesk(forgetful=bool(inputs.get("forget")))
    said = inputs.get("announce")
    say = f"Let me transfer you to {said}." if said else ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        desk = create_react_agent(
            Desk(say=say),
            [create_handoff_tool(agent_name="account"), create_handoff_tool(agent_name="billing")],
            name="desk",
        )
        account = create_react_agent(
            account_model,
            [get_account_manager],
            name="account",
            pre_model_hook=_since_handoff if inputs.get("trim") else None,
        )
        billing = create_react_agent(Desk(), [], name="billing")
    graph = create_swarm([desk, account, billing], default_active_agent="desk").compile()
    state = graph.invoke({"messages": [HumanMessage(inputs["question"])]})
    return {"final_response": state["messages"][-1].text, "given": account_model.given}


def _graph(trim: bool, checkpointer: Any = None) -> Any:
    """The swarm of :func:`swarm` (no announcement) compiled once."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        desk = create_react_agent(Desk(), [create_handoff_tool(agent_name="account")], name="desk")
        account = create_react_agent(
            OrderDesk(),
            [get_account_manager],
            name="account",
            pre_model_hook=_since_handoff if trim else None,
        )
    return create_swarm([desk, account], default_active_agent="desk").compile(
        checkpointer=checkpointer
    )


def _conversational(trim: bool) -> Any:
    """The swarm for conversations: compiled with a checkpointer, each conversation on a
    thread of its own (the swarm remembers its active agent between turns)."""
    from langgraph.checkpoint.memory import InMemorySaver

    return _graph(trim, InMemorySaver())


conversational_swarm = _conversational(trim=False)
conversational_swarm_trimmed = _conversational(trim=True)

# What ``langgraph dev`` serves (its server keeps the threads), and the same in-process.
served_swarm = _graph(trim=False)
served_swarm_trimmed = _graph(trim=True)


class Relay(BaseChatModel):
    """A deep agent's orchestrator: sends the task to ``account`` through deepagents' ``task``
    tool (the user's question as its description, or a rewrite of it), then answers with
    what the sub-agent said (10+1 tokens a call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    model_name: str = "main-model"
    description: str

    @property
    def _llm_type(self) -> str:
        return "relay"

    def bind_tools(self, tools: Any, **_: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        usage = {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage(f"Account says: {messages[-1].content}", usage_metadata=usage)
        else:
            task = {"description": self.description, "subagent_type": "account"}
            call = {"name": "task", "args": task, "id": "c-task"}
            reply = AIMessage("", tool_calls=[call], usage_metadata=usage)
        reply.response_metadata["model_name"] = self.model_name
        return ChatResult(generations=[ChatGeneration(message=reply)])


def deep(inputs: dict[str, Any]) -> dict[str, Any]:
    """deepagents: the orchestrator hands the request to its ``account`` sub-agent with
    ``task``; ``rewrite`` has it describe the task without the order number."""
    from deepagents import SubAgent, create_deep_agent

    question = inputs["question"]
    description = "Find the customer's account manager." if inputs.get("rewrite") else question
    account_model = OrderDesk()
    account = SubAgent(
        name="account",
        description="Finds account managers.",
        system_prompt="You are account.",
        tools=[get_account_manager],
        model=account_model,
    )
    agent = create_deep_agent(
        model=Relay(description=description),
        subagents=[account],
        system_prompt="Delegate.",
        name="orchestrator",
    )
    state = agent.invoke({"messages": [HumanMessage(question)]})
    return {"final_response": state["messages"][-1].text, "given": account_model.given}
