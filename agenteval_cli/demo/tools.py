"""The specialists' tools: deterministic back-office actions that also write resolution notes.

Each tool returns a ``Command`` so that, besides its ``ToolMessage``, it appends a short
note ("billing: updated payment method to credit card") to ``resolution_notes`` in the
graph state. The notes are what the resolution coverage evaluator reads.

``cancel_subscription`` is destructive, so it asks the customer first with
``interrupt()``; the conversation graphs alone have it (``CONFIRMED_TOOLS``), and it needs a
checkpointer to be resumed.
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.types import Command, interrupt

from agenteval_cli.demo.plans import CURRENT_PLAN, PLAN_TIERS

ToolCallId = Annotated[str, InjectedToolCallId]

_LATEST_INVOICE = "INV-1042"
_INVOICE_AMOUNT = 49.0
_KNOWN_ERRORS = {
    "SAML-401": "the SAML assertion was rejected because its signing certificate does not "
    "match the one on file",
    "SAML-500": "the identity provider returned a malformed SAML response",
    "E-429": "the API rate limit of 600 requests per minute was exceeded",
    "E-503": "the report export service was briefly unavailable; it has been restarted",
}


def _done(name: str, call_id: str, output: str, note: str) -> Command:
    """The tool's answer to the model plus its resolution note, as one state update."""
    message = ToolMessage(output, name=name, tool_call_id=call_id)
    return Command(update={"messages": [message], "resolution_notes": [note]})


# --- billing -------------------------------------------------------------------------


@tool
def update_payment_method(method: str, tool_call_id: ToolCallId) -> Command:
    """Set the payment method used for future invoices, e.g. "credit card" or "PayPal"."""
    output = f"Payment method updated to {method}; the next invoice will be charged to it."
    note = f"billing: updated payment method to {method}"
    return _done("update_payment_method", tool_call_id, output, note)


@tool
def lookup_invoice(invoice_id: str, tool_call_id: ToolCallId) -> Command:
    """Look up an invoice by id ("INV-1234"), or "latest" for the most recent one."""
    number = _LATEST_INVOICE if invoice_id == "latest" else invoice_id
    output = (
        f"Invoice {number}: ${_INVOICE_AMOUNT:.2f} for the {CURRENT_PLAN} plan subscription, "
        "paid in full; the subscription renews on the 1st of next month. "
        "A PDF copy was emailed to the billing contact."
    )
    note = f"billing: looked up invoice {number}"
    return _done("lookup_invoice", tool_call_id, output, note)


@tool
def issue_refund(
    tool_call_id: ToolCallId, invoice_id: str = "latest", amount: float | None = None
) -> Command:
    """Refund part or all (amount omitted) of an invoice to the original payment method."""
    number = _LATEST_INVOICE if invoice_id == "latest" else invoice_id
    value = _INVOICE_AMOUNT if amount is None else amount
    output = (
        f"Refund of ${value:.2f} issued for invoice {number}; it reaches the original "
        "payment method in 5-10 business days."
    )
    note = f"billing: issued refund of ${value:.2f} for {number}"
    return _done("issue_refund", tool_call_id, output, note)


# --- tech support --------------------------------------------------------------------


@tool
def check_sso_config(provider: str, tool_call_id: ToolCallId) -> Command:
    """Check the single sign-on (SSO) setup for an identity provider: Okta, Azure AD, SAML."""
    output = (
        f"SSO check for {provider}: the SAML signing certificate on file expired; upload the "
        "new certificate under Settings > Security > SSO and SSO logins work again."
    )
    note = f"tech_support: checked SSO configuration for {provider}"
    return _done("check_sso_config", tool_call_id, output, note)


@tool
def lookup_error_code(code: str, tool_call_id: ToolCallId) -> Command:
    """Explain an error code shown by the product, e.g. "SAML-401" or "E-503"."""
    meaning = _KNOWN_ERRORS.get(code.upper())
    if meaning:
        output = f"Error {code}: {meaning}."
    else:
        output = f"Error {code}: not a known issue; diagnostics show all services healthy."
    note = f"tech_support: looked up error code {code}"
    return _done("lookup_error_code", tool_call_id, output, note)


@tool
def reset_mfa(user: str, tool_call_id: ToolCallId) -> Command:
    """Reset multi-factor authentication (MFA) for a user so they can enrol a new device."""
    output = f"MFA reset for {user}; they enrol a new device at their next login."
    note = f"tech_support: reset MFA for {user}"
    return _done("reset_mfa", tool_call_id, output, note)


# --- account -------------------------------------------------------------------------


@tool
def get_account_manager(tool_call_id: ToolCallId) -> Command:
    """Find the customer's dedicated account manager and how to reach them."""
    output = "Your account manager is Priya Shah (priya.shah@example.com, +1 555-0142)."
    note = "account: looked up account manager"
    return _done("get_account_manager", tool_call_id, output, note)


@tool
def change_plan(plan: str, tool_call_id: ToolCallId, extra_seats: int = 0) -> Command:
    """Move the account to another plan (Free, Starter, Pro, Team, Enterprise), or add seats."""
    if plan in PLAN_TIERS and plan != CURRENT_PLAN:
        up = PLAN_TIERS.index(plan) > PLAN_TIERS.index(CURRENT_PLAN)
        verb, past = ("Upgrade", "upgraded") if up else ("Downgrade", "downgraded")
        output = f"{verb} from the {CURRENT_PLAN} plan to the {plan} plan is done; "
        output += "the price difference is prorated from today."
        note = f"account: {past} plan to {plan}"
    else:
        output = f"The account stays on the {plan} plan."
        note = f"account: kept the {plan} plan"
    if extra_seats:
        output += f" Added {extra_seats} seats, effective immediately."
        note += f" with {extra_seats} extra seats"
    return _done("change_plan", tool_call_id, output, note)


@tool
def update_profile(field: str, value: str, tool_call_id: ToolCallId) -> Command:
    """Change one field of the account profile, e.g. field="email", value="a@b.io"."""
    output = f"Profile updated: {field} is now {value}."
    note = f"account: updated profile {field} to {value}"
    return _done("update_profile", tool_call_id, output, note)


CANCEL_QUESTION = (
    f"Cancel the {CURRENT_PLAN} plan subscription at the end of the billing period? "
    "Reply yes to confirm."
)


def _confirmed(answer: object) -> bool:
    return str(answer).strip().lower().startswith(("yes", "confirm"))


@tool
def cancel_subscription(tool_call_id: ToolCallId) -> Command:
    """Cancel the subscription at the end of the billing period, once the customer confirms."""
    answer = interrupt(CANCEL_QUESTION)
    if _confirmed(answer):
        output = (
            f"The {CURRENT_PLAN} plan subscription is cancelled; it stays active until the "
            "end of the current billing period and will not renew."
        )
        note = "account: cancelled the subscription"
    else:
        output = f"Nothing was cancelled; the {CURRENT_PLAN} plan subscription stays active."
        note = "account: kept the subscription, cancellation not confirmed"
    return _done("cancel_subscription", tool_call_id, output, note)


TOOLS: dict[str, list[BaseTool]] = {
    "billing": [update_payment_method, lookup_invoice, issue_refund],
    "tech_support": [check_sso_config, lookup_error_code, reset_mfa],
    "account": [get_account_manager, change_plan, update_profile],
}
"""Each specialist's own tools, by agent name."""

CONFIRMED_TOOLS: dict[str, list[BaseTool]] = {"account": [cancel_subscription]}
"""Tools that ask the customer to confirm (``interrupt``), by agent: conversation graphs only."""
