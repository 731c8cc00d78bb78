"""Other people's graphs, each with the recovery its authors built in, for the fault tests.

Every target builds its graph afresh per call with scripted models (:mod:`fakes`), so each
request starts its script from the first reply, and returns the scripted models' own call
log (``calls``: the replies each handed out) beside its answer: a model call that a fault
failed never reaches the model, so the log says which calls got through.
"""

from __future__ import annotations

import warnings
from typing import Any

from fakes import reply, scripted
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, ToolRetryMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

INVOICE = "INV-1042"
RETRY = {"initial_delay": 0.0, "jitter": False}


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice by id, or "latest"."""
    return f"Invoice {INVOICE}: $49.00, paid."


@tool
def get_account_manager() -> str:
    """Find the customer's account manager."""
    return "Your account manager is Priya Shah."


def _react(model: Any, tools: list[Any], name: str) -> Any:
    """langgraph's prebuilt ReAct agent, its ToolNode turning tool errors into messages."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(model, ToolNode(tools, handle_tool_errors=True), name=name)


def _answer(state: dict[str, Any], *models: Any) -> dict[str, Any]:
    return {
        "final_response": state["messages"][-1].text,
        "calls": {m.model_name: m.calls for m in models},
    }


def model_retry(inputs: dict[str, Any]) -> dict[str, Any]:
    """create_agent with ModelRetryMiddleware (two retries, no wait): one tool call, then
    the answer."""
    model = scripted(
        "gpt-4o",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})], tokens=(100, 10)),
        reply(f"Your latest invoice is {INVOICE}, paid in full.", tokens=(150, 20)),
    )
    agent = create_agent(
        model, [lookup_invoice], name="billing", middleware=[ModelRetryMiddleware(**RETRY)]
    )
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, model)


def tool_retry(inputs: dict[str, Any]) -> dict[str, Any]:
    """create_agent with ToolRetryMiddleware (two retries, then the error as the tool's
    message): the model tells the user it could not."""
    model = scripted(
        "gpt-4o",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
        reply("Sorry, the invoice system is down; I could not look your invoice up."),
    )
    middleware = ToolRetryMiddleware(max_retries=2, on_failure="continue", **RETRY)
    agent = create_agent(model, [lookup_invoice], name="billing", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, model)


def one_tool_call(inputs: dict[str, Any]) -> dict[str, Any]:
    """One tool call per request, its error given back as a message (no retry)."""
    model = scripted(
        "gpt-4o",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
        reply(f"Your latest invoice is {INVOICE}."),
    )
    middleware = ToolRetryMiddleware(max_retries=0, on_failure="continue", **RETRY)
    agent = create_agent(model, [lookup_invoice], name="billing", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, model)


def supervisor(inputs: dict[str, Any]) -> dict[str, Any]:
    """langgraph-supervisor: billing's tool errors come back as messages; the supervisor
    routes to billing, then (billing having failed) to account, then answers."""
    boss = scripted(
        "boss-model",
        reply(tools=[("transfer_to_billing", {})], tokens=(10, 1)),
        reply(tools=[("transfer_to_account", {})], tokens=(20, 2)),
        reply(
            "Billing is down; your account manager Priya Shah will send the invoice.",
            tokens=(30, 3),
        ),
    )
    billing_model = scripted(
        "billing-model",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})], tokens=(40, 4)),
        reply("I could not reach the invoice system.", tokens=(50, 5)),
    )
    account_model = scripted(
        "account-model",
        reply(tools=[("get_account_manager", {})], tokens=(60, 6)),
        reply("Priya Shah is your account manager.", tokens=(70, 7)),
    )
    workers = [
        _react(billing_model, [lookup_invoice], "billing"),
        _react(account_model, [get_account_manager], "account"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = create_supervisor(workers, model=boss, supervisor_name="boss").compile()
    state = graph.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, boss, billing_model, account_model)


def swarm(inputs: dict[str, Any]) -> dict[str, Any]:
    """langgraph-swarm: front desk hands over to account, whose model has no retry."""
    desk_model = scripted("desk-model", reply(tools=[("transfer_to_account", {})], tokens=(10, 1)))
    account_model = scripted(
        "account-model",
        reply(tools=[("get_account_manager", {})], tokens=(20, 2)),
        reply("Priya Shah is your account manager.", tokens=(30, 3)),
    )
    desk = create_agent(
        desk_model,
        [create_handoff_tool(agent_name="account", description="Transfer to account")],
        name="desk",
    )
    account = create_agent(account_model, [get_account_manager], name="account")
    graph = create_swarm([desk, account], default_active_agent="desk").compile()
    state = graph.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, desk_model, account_model)


def looping_model() -> Any:
    """A model that asks for the same tool again whatever it is told."""
    return scripted("gpt-4o", *[reply(tools=[("lookup_invoice", {"invoice_id": "latest"})])] * 10)


def looping(inputs: dict[str, Any]) -> dict[str, Any]:
    """A ReAct agent that keeps calling a failing tool, under a recursion limit of 6."""
    model = looping_model()
    agent = _react(model, [lookup_invoice], "billing")
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]}, {"recursion_limit": 6})
    return _answer(state, model)


def looping_agent(inputs: dict[str, Any]) -> dict[str, Any]:
    """create_agent keeping on calling a failing tool (its error given back as a message),
    under a recursion limit of 6: LangGraph stops it with GraphRecursionError."""
    model = looping_model()
    middleware = ToolRetryMiddleware(max_retries=0, on_failure="continue", **RETRY)
    agent = create_agent(model, [lookup_invoice], name="billing", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]}, {"recursion_limit": 6})
    return _answer(state, model)


def unnamed_agent(inputs: dict[str, Any]) -> dict[str, Any]:
    """create_agent without a name, with retry middleware: its agent is the target's."""
    model = scripted(
        "gpt-4o",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
        reply(f"Your latest invoice is {INVOICE}."),
    )
    agent = create_agent(model, [lookup_invoice], middleware=[ModelRetryMiddleware(**RETRY)])
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, model)


def model_fallback(inputs: dict[str, Any]) -> dict[str, Any]:
    """create_agent on gpt-4o with ModelFallbackMiddleware to a second model."""
    from langchain.agents.middleware import ModelFallbackMiddleware

    primary = scripted("gpt-4o", reply(f"Your latest invoice is {INVOICE}.", tokens=(5, 1)))
    backup = scripted("claude-haiku", reply(f"Invoice {INVOICE} is paid.", tokens=(7, 2)))
    agent = create_agent(primary, [], name="billing", middleware=[ModelFallbackMiddleware(backup)])
    state = agent.invoke({"messages": [HumanMessage(inputs["question"])]})
    return _answer(state, primary, backup)
