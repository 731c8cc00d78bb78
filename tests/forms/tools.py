"""The specialists' tools: each returns its domain's ``<domain>-result: ...`` sentence."""

from __future__ import annotations

from langchain_core.tools import tool

from forms.policy import RESULTS


@tool
def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice and refund it."""
    return RESULTS["billing"]


@tool
def run_diagnostics(app: str) -> str:
    """Diagnose an app crash and fix it."""
    return RESULTS["tech"]


@tool
def update_profile(field: str) -> str:
    """Update a profile field of the customer's account."""
    return RESULTS["account"]


@tool
def restart_router(site: str) -> str:
    """Restart the customer's router."""
    return RESULTS["network"]


TOOL_OF = {
    "billing": lookup_invoice,
    "tech": run_diagnostics,
    "account": update_profile,
    "network": restart_router,
}
