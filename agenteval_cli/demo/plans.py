"""What a specialist does for its part of a request: which tools, with which arguments.

The arguments are pulled from the clauses that mention the specialist's domain, so in
"reset MFA for a@x.io and change my profile email to b@x.io" each agent gets its own
address. Tool names here must match ``tools.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agenteval_cli.demo.rules import domain_text

PlannedCall = tuple[str, dict[str, Any]]

CURRENT_PLAN = "Pro"
PLAN_TIERS = ("Free", "Starter", "Pro", "Team", "Enterprise")

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\b\d{3}-\d{4}\b")
_AMOUNT = re.compile(r"\$(\d+(?:\.\d{1,2})?)")
_INVOICE = re.compile(r"\bINV-\d+\b", re.IGNORECASE)
_ERROR_CODE = re.compile(r"\b(?!INV-)[A-Z]{1,5}-\d{3}\b")
_SEATS = re.compile(r"\b(\d+) (?:more|additional|extra) seats\b", re.IGNORECASE)
_CHANGE = re.compile(r"\b(?:change|update|switch|add|use|replace|move|set)\b", re.IGNORECASE)
_PAYMENT = re.compile(r"\b(?:payment method|credit card|card|paypal|bank)\b", re.IGNORECASE)
_SSO = re.compile(r"\b(?:sso|saml|single sign-on|okta|azure ad)\b", re.IGNORECASE)
_MFA = re.compile(r"\b(?:mfa|2fa|two-factor)\b", re.IGNORECASE)
_PROFILE = re.compile(r"\b(?:profile|email address|phone number)\b", re.IGNORECASE)
_CANCEL = re.compile(r"\bcancel\b", re.IGNORECASE)


def plan_calls(domain: str, question: str) -> list[PlannedCall]:
    """The tool calls ``domain``'s specialist makes for its part of ``question``.

    Empty when the specialist finds nothing it can act on (it then just answers).
    """
    return _PLANNERS[domain](domain_text(domain, question))


def _billing(text: str) -> list[PlannedCall]:
    low = text.lower()
    invoice = _INVOICE.search(text)
    invoice_id = invoice.group().upper() if invoice else "latest"
    calls: list[PlannedCall] = []
    if _PAYMENT.search(text) and _CHANGE.search(text):
        method = "PayPal" if "paypal" in low else "bank transfer" if "bank" in low else ""
        calls.append(("update_payment_method", {"method": method or "credit card"}))
    if "refund" in low:
        args: dict[str, Any] = {"invoice_id": invoice_id}
        if amount := _AMOUNT.search(text):
            args["amount"] = float(amount.group(1))
        calls.append(("issue_refund", args))
    elif invoice or not calls:
        calls.append(("lookup_invoice", {"invoice_id": invoice_id}))
    return calls


def _tech_support(text: str) -> list[PlannedCall]:
    low = text.lower()
    calls: list[PlannedCall] = []
    if _SSO.search(text):
        provider = "Okta" if "okta" in low else "Azure AD" if "azure ad" in low else "SAML"
        calls.append(("check_sso_config", {"provider": provider}))
    calls.extend(("lookup_error_code", {"code": code}) for code in _ERROR_CODE.findall(text))
    if _MFA.search(text):
        email = _EMAIL.search(text)
        calls.append(("reset_mfa", {"user": email.group() if email else "the requesting user"}))
    return calls or [("lookup_error_code", {"code": "UNSPECIFIED"})]


def _account(text: str) -> list[PlannedCall]:
    low = text.lower()
    calls: list[PlannedCall] = []
    if "account manager" in low or "account owner" in low:
        calls.append(("get_account_manager", {}))
    named = next((p for p in PLAN_TIERS if re.search(rf"\b{p}\b", text)), None)
    seats = _SEATS.search(text)
    wants_change = "upgrade" in low or "downgrade" in low or (named and _CHANGE.search(text))
    if wants_change or seats:
        default = "Enterprise" if "upgrade" in low else "Starter" if "downgrade" in low else ""
        args: dict[str, Any] = {"plan": named or default or CURRENT_PLAN}
        if seats:
            args["extra_seats"] = int(seats.group(1))
        calls.append(("change_plan", args))
    if _CANCEL.search(text):
        calls.append(("cancel_subscription", {}))
    if _PROFILE.search(text):
        email, phone = _EMAIL.search(text), _PHONE.search(text)
        if email:
            calls.append(("update_profile", {"field": "email", "value": email.group()}))
        elif phone:
            calls.append(("update_profile", {"field": "phone", "value": phone.group()}))
        else:
            calls.append(("update_profile", {"field": "details", "value": "as requested"}))
    return calls


_PLANNERS: dict[str, Callable[[str], list[PlannedCall]]] = {
    "billing": _billing,
    "tech_support": _tech_support,
    "account": _account,
}
