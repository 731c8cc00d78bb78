"""Specialist agents and the system prompts every demo agent runs with.

The prompts matter only with a real provider (``$AGENTEVAL_DEMO_MODEL``); the scripted
model decides from the conversation, but still pays for the prompt in input tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from agenteval_cli.demo.state import SpecialistState
from agenteval_cli.demo.tools import CONFIRMED_TOOLS, TOOLS

SUPERVISOR_PROMPT = (
    "You are the supervisor of a customer-support team. Your specialists are: "
    "billing (payments, payment methods, invoices, refunds), "
    "tech_support (SSO and SAML, MFA, error codes, outages) and "
    "account (plans, upgrades and downgrades, seats, profile details, the account manager). "
    "Never solve a request yourself. Split the customer's request into its parts and "
    "transfer each part to the right specialist, one at a time, with the transfer_to_<agent> "
    "tools; wait for each specialist to report back before routing the next part. When every "
    "part has been handled, reply to the customer with a short summary of what each "
    "specialist did. If nothing in the request belongs to a specialist, answer directly."
)

SUPERVISOR_CONFIRMED_SUFFIX = (
    " The account specialist also cancels subscriptions, after the customer confirms."
)

_SPECIALIST_PROMPTS = {
    "billing": (
        "You are the billing specialist. You change payment methods, look up invoices and "
        "issue refunds with your tools. Handle only the billing part of the request and "
        "mention what you changed, e.g. the new payment method or the refunded amount."
    ),
    "tech_support": (
        "You are the technical support specialist. You check SSO/SAML configurations, "
        "explain error codes and reset MFA with your tools. Handle only the technical part "
        "of the request and name the error code or SSO provider in your answer."
    ),
    "account": (
        "You are the account specialist. You find the account manager, change plans "
        "(upgrades, downgrades, seats) and update profile fields with your tools. Handle "
        "only the account part of the request and say what changed."
    ),
}

_SWARM_SUFFIX = (
    " You work in a team without a manager. If none of the request is yours, transfer it "
    "right away with the matching transfer_to_<agent> tool. If part of it belongs to another "
    "specialist, finish your part first, then transfer the rest."
)
_FRONT_DESK_SUFFIX = " Every new request reaches you first."
_CONFIRMED_SUFFIXES = {
    "account": (
        " You can also cancel the subscription with cancel_subscription; it asks the "
        "customer to confirm before anything is cancelled."
    ),
}


def specialist_prompt(
    name: str, *, swarm: bool = False, front_desk: bool = False, confirmed: bool = False
) -> str:
    """The system prompt of specialist ``name``, with the team rules when in a swarm.

    ``confirmed``: the agent also has its tools that ask the customer first.
    """
    prompt = _SPECIALIST_PROMPTS[name]
    if confirmed:
        prompt += _CONFIRMED_SUFFIXES.get(name, "")
    if swarm:
        prompt += _SWARM_SUFFIX
    if front_desk:
        prompt += _FRONT_DESK_SUFFIX
    return prompt


def make_specialist(
    name: str,
    model: BaseChatModel,
    *,
    handoffs: Sequence[BaseTool] = (),
    front_desk: bool = False,
    confirmed: bool = False,
) -> CompiledStateGraph:
    """A ``create_agent`` specialist named ``name`` (its node name in the parent graph).

    ``confirmed`` adds the agent's ``CONFIRMED_TOOLS`` (they interrupt to ask the customer).
    """
    extra = CONFIRMED_TOOLS.get(name, []) if confirmed else []
    prompt = specialist_prompt(
        name, swarm=bool(handoffs), front_desk=front_desk, confirmed=confirmed
    )
    return create_agent(
        model,
        [*TOOLS[name], *extra, *handoffs],
        system_prompt=prompt,
        state_schema=SpecialistState,
        name=name,
    )
