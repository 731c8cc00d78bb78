"""A triage agent handing off to billing or tech, on the OpenAI Agents SDK, talking to a
loopback OpenAI-compatible server (chat completions): a multi-agent system outside
LangChain whose traces tests record with OpenInference's processor and import.

The server's script: triage hands off to the agent a question names ("billing: ...",
"tech: ...") or answers itself; billing calls its ``refund`` tool, then answers; tech
answers. Each (agent, step) reports the usage in :data:`USAGE` (prompt, completion).
"""

from __future__ import annotations

from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from provider_servers import Exchange, OpenAIChatServer, Reply, openai_usage

MODEL = "gpt-4o-mini"
PROMPTS = {"triage": "You route requests.", "billing": "You do refunds.", "tech": "You fix apps."}
USAGE = {
    ("triage", 0): (100, 10),  # hands off
    ("triage", 1): (120, 12),  # answers itself
    ("billing", 0): (200, 20),  # calls refund
    ("billing", 1): (300, 30),  # answers
    ("tech", 1): (250, 25),  # answers
}


def script(exchange: Exchange) -> Reply:
    agent = next(name for name, prompt in PROMPTS.items() if prompt == exchange.system)
    wanted = exchange.question.partition(":")[0]
    if agent == "triage" and f"transfer_to_{wanted}" in exchange.tools:
        return Reply(openai_usage(*USAGE[("triage", 0)]), tool=f"transfer_to_{wanted}")
    if agent == "billing" and "refund" not in exchange.tool_results:
        return Reply(openai_usage(*USAGE[("billing", 0)]), tool="refund", args={"amount": 49})
    return Reply(openai_usage(*USAGE[(agent, 1)]), text=f"{agent} handled it.")


SERVER = OpenAIChatServer(script, model=MODEL).start()
model = OpenAIChatCompletionsModel(
    model=MODEL, openai_client=AsyncOpenAI(base_url=SERVER.base_url, api_key="test")
)


@function_tool
def refund(amount: int) -> str:
    """Refund an amount in dollars."""
    return f"refunded ${amount}"


billing = Agent(name="billing", instructions=PROMPTS["billing"], tools=[refund], model=model)
tech = Agent(name="tech", instructions=PROMPTS["tech"], model=model)
triage = Agent(name="triage", instructions=PROMPTS["triage"], handoffs=[billing, tech], model=model)


def answer(inputs: dict[str, Any]) -> dict[str, Any]:
    """The app as a target: the question through the agents, the last agent's answer."""
    result = Runner.run_sync(triage, inputs["question"])
    return {"final_response": str(result.final_output)}
