"""The forms' datasets: single-agent, multi-agent and no-routing requests, each with the
agents it should reach and the terms its answer must mention."""

from __future__ import annotations

from typing import Any

MENTION = {
    "billing": "refunded",
    "tech": "new update",
    "account": "email updated",
    "network": "router restarted",
}
TOOL = {
    "billing": "lookup_invoice",
    "tech": "run_diagnostics",
    "account": "update_profile",
    "network": "restart_router",
}
HOURS = "What are your opening hours?"


def row(
    example_id: str,
    question: str,
    agents: list[str],
    *,
    domains: list[str] | None = None,
    tools: bool = False,
    **outputs: Any,
) -> dict[str, Any]:
    """A dataset row. ``domains`` (default: ``agents``) are the parts the answer must cover;
    with ``tools`` the row also expects those domains' tools, in order."""
    domains = agents if domains is None else domains
    out: dict[str, Any] = {
        "expected_agents": agents,
        "must_mention": [MENTION[d] for d in domains] or ["9 to 5"],
        **outputs,
    }
    if tools:
        out["expected_tools"] = [TOOL[d] for d in domains]
    return {"id": example_id, "inputs": {"question": question}, "outputs": out}


def support(*, tools: bool = False) -> list[dict[str, Any]]:
    """Billing and tech: one each, both (in both orders) and none."""
    return [
        row("billing", "My invoice INV-42 needs a refund.", ["billing"], tools=tools),
        row("tech", "The mobile app shows a crash on start.", ["tech"], tools=tools),
        row(
            "both",
            "Refund my last invoice and fix the crash in the app.",
            ["billing", "tech"],
            tools=tools,
        ),
        row(
            "both-reversed",
            "The app has an error and I want a refund.",
            ["tech", "billing"],
            tools=tools,
        ),
        row("hours", HOURS, [], tools=tools),
    ]


BOUNCE_ROW = row(
    "bounce",
    "Refund my invoice after the app crash, check with tech first.",
    ["billing", "tech"],
)


def peers() -> list[dict[str, Any]]:
    """The support rows with a request on which billing asks tech and finishes after."""
    rows = support()
    return [*rows[:3], BOUNCE_ROW, rows[4]]


def hierarchy() -> list[dict[str, Any]]:
    """Rows naming leaf agents, teams, or both."""
    return [
        row("billing-leaf", "My invoice INV-42 needs a refund.", ["billing"]),
        row("money-team", "Please change my email address.", ["money_team"], domains=["account"]),
        row(
            "tech-team-and-leaf",
            "The wifi router keeps dropping.",
            ["tech_team", "network"],
            domains=["network"],
        ),
        row(
            "two-teams",
            "Refund my invoice and fix the app crash.",
            ["money_team", "tech"],
            domains=["billing", "tech"],
        ),
        row("hours", HOURS, []),
    ]


def weather() -> list[dict[str, Any]]:
    """openevals' README trajectory, as the reference of a weather agent's requests."""
    sf_reference = [
        {"role": "user", "content": "What is the weather in SF?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": '{"city": "SF"}'}}],
        },
        {"role": "tool", "content": "It's 80 degrees and sunny in SF."},
        {"role": "assistant", "content": "The weather in SF is 80 degrees and sunny."},
    ]
    return [
        {
            "id": "sf",
            "inputs": {"question": "What is the weather in SF?"},
            "outputs": {
                "expected_agents": ["weather"],
                "must_mention": ["80 degrees"],
                "trajectory": sf_reference,
            },
        },
        {
            "id": "nyc-against-sf",
            "inputs": {"question": "What is the weather in NYC?"},
            "outputs": {
                "expected_agents": ["weather"],
                "must_mention": ["80 degrees"],
                "trajectory": sf_reference,  # the wrong city: no match
            },
        },
        {
            "id": "hello",
            "inputs": {"question": "Hi there!"},
            "outputs": {
                "expected_agents": [],
                "must_mention": ["hello"],
                "trajectory": [
                    {"role": "user", "content": "Hi there!"},
                    {"role": "assistant", "content": "Hello! Ask me about the weather."},
                ],
            },
        },
    ]
