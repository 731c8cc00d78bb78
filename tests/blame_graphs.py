"""Scripted graphs with a failure planted at a known agent and step, for the blame tests.

Each target reads ``inputs["plant"]`` and builds its graph afresh with scripted models
(:mod:`fakes`), so each request replays its script from the first reply. The plants:

- ``none``: the request goes where the row expects and answers;
- ``misroute``: the coordinator (or the agent holding control) routes to the wrong agent;
- ``dropped``: an agent answers and ends the request where it should have handed over;
- ``tool_error``: a tool fails on its own and the agent gives up on it;
- ``fault``: as ``none``, for a spec's ``faults:`` to fail the tool the agent calls.
"""

from __future__ import annotations

import warnings
from typing import Any

from fakes import reply, scripted
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import ToolException, tool
from langgraph.prebuilt import ToolNode
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

INVOICE = "INV-1042"


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice by id, or "latest"."""
    return f"Invoice {INVOICE}: $49.00, paid."


@tool
def get_plan() -> str:
    """The customer's plan."""
    return "Plan: Pro, renews monthly."


@tool
def flaky_ledger(invoice_id: str) -> str:
    """Read the ledger (down today)."""
    raise ToolException("ledger unavailable")


def _worker(model: Any, tools: list[Any], name: str) -> Any:
    """langgraph's prebuilt ReAct agent, its ToolNode turning tool errors into messages."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(model, ToolNode(tools, handle_tool_errors=True), name=name)


def _billing(plant: str) -> Any:
    if plant == "tool_error":
        return scripted(
            "billing-model",
            reply(tools=[("flaky_ledger", {"invoice_id": "latest"})]),
            reply("I could not read the ledger."),
        )
    if plant == "fault":
        return scripted(
            "billing-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
            reply("The invoice system did not answer."),
        )
    return scripted(
        "billing-model",
        reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
        reply(f"Your latest invoice is {INVOICE}."),
    )


def _account() -> Any:
    return scripted(
        "account-model", reply(tools=[("get_plan", {})]), reply("You are on the Pro plan.")
    )


def _final(state: dict[str, Any]) -> dict[str, Any]:
    return {"final_response": state["messages"][-1].text}


# --- supervisor: boss routes to billing, which answers; boss answers -----------------------


def supervisor(inputs: dict[str, Any]) -> dict[str, Any]:
    plant = inputs["plant"]
    first = "transfer_to_account" if plant == "misroute" else "transfer_to_billing"
    if plant == "dropped":  # boss answers alone: billing never reached
        boss = scripted("boss-model", reply("Please check your email for the invoice."))
    else:
        boss = scripted(
            "boss-model",
            reply(tools=[(first, {})]),
            reply("Done: " + ("see above." if plant != "none" else f"invoice {INVOICE}.")),
        )
    workers = [
        _worker(_billing(plant), [lookup_invoice, flaky_ledger], "billing"),
        _worker(_account(), [get_plan], "account"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        graph = create_supervisor(workers, model=boss, supervisor_name="boss").compile()
    return _final(graph.invoke({"messages": [HumanMessage(inputs["question"])]}))


# --- swarm: desk hands to billing, billing hands to account, account answers (sales: none) ---


def swarm(inputs: dict[str, Any]) -> dict[str, Any]:
    plant = inputs["plant"]
    to = "sales" if plant == "misroute" else "billing"
    desk_model = scripted("desk-model", reply(tools=[(f"transfer_to_{to}", {})]))
    sales_model = scripted("sales-model", reply("Would you like to upgrade your plan?"))
    if plant == "dropped":  # billing answers instead of handing to account
        billing_model = scripted(
            "billing-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
            reply(f"Your latest invoice is {INVOICE}."),
        )
    elif plant in ("fault", "tool_error"):
        billing_model = _billing(plant)
    else:
        billing_model = scripted(
            "billing-model",
            reply(tools=[("lookup_invoice", {"invoice_id": "latest"})]),
            reply(tools=[("transfer_to_account", {})]),
        )
    account_model = scripted(
        "account-model",
        reply(tools=[("get_plan", {})]),
        reply(f"Invoice {INVOICE}; you are on the Pro plan."),
    )
    handoff = create_handoff_tool
    desk = create_agent(
        desk_model,
        [handoff(agent_name="billing"), handoff(agent_name="sales")],
        name="desk",
    )
    sales = create_agent(sales_model, [], name="sales")
    billing = create_agent(
        billing_model,
        [lookup_invoice, flaky_ledger, handoff(agent_name="account")],
        name="billing",
    )
    account = create_agent(account_model, [get_plan], name="account")
    graph = create_swarm([desk, billing, account, sales], default_active_agent="desk").compile()
    return _final(graph.invoke({"messages": [HumanMessage(inputs["question"])]}))


# --- hierarchy: top routes to money_team, whose lead routes to billing ---------------------


def hierarchy(inputs: dict[str, Any]) -> dict[str, Any]:
    plant = inputs["plant"]
    lead_to = "transfer_to_account" if plant == "misroute" else "transfer_to_billing"
    if plant == "dropped":  # the team lead answers alone: billing never reached
        lead = scripted("lead-model", reply("The billing team will email you."))
    else:
        lead = scripted("lead-model", reply(tools=[(lead_to, {})]), reply("Team done."))
    done = f"Your latest invoice is {INVOICE}." if plant == "none" else "All done."
    top = scripted("top-model", reply(tools=[("transfer_to_money_team", {})]), reply(done))
    workers = [
        _worker(_billing(plant), [lookup_invoice, flaky_ledger], "billing"),
        _worker(_account(), [get_plan], "account"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        team = create_supervisor(workers, model=lead, supervisor_name="lead").compile(
            name="money_team"
        )
        graph = create_supervisor([team], model=top, supervisor_name="top").compile()
    return _final(graph.invoke({"messages": [HumanMessage(inputs["question"])]}))


# --- deepagents: the orchestrator runs billing through its task tool ------------------------


def deep(inputs: dict[str, Any]) -> dict[str, Any]:
    from deepagents import SubAgent, create_deep_agent

    plant = inputs["plant"]
    if plant == "dropped":  # the orchestrator answers alone: billing never reached
        main = scripted("main-model", reply("Please check your email for the invoice."))
    else:
        to = "account" if plant == "misroute" else "billing"
        task = {"description": inputs["question"], "subagent_type": to}
        done = f"Your latest invoice is {INVOICE}." if plant == "none" else "Done."
        main = scripted("main-model", reply(tools=[("task", task)]), reply(done))
    subagents = [
        SubAgent(
            name="billing",
            description="Handles billing questions.",
            system_prompt="You are billing.",
            tools=[lookup_invoice, flaky_ledger],
            model=_billing(plant),
        ),
        SubAgent(
            name="account",
            description="Handles account questions.",
            system_prompt="You are account.",
            tools=[get_plan],
            model=_account(),
        ),
    ]
    agent = create_deep_agent(
        model=main, subagents=subagents, system_prompt="Delegate.", name="orchestrator"
    )
    return _final(agent.invoke({"messages": [HumanMessage(inputs["question"])]}))
