"""A langgraph-supervisor and a langgraph-swarm on the real provider clients, on loopback
servers of their own (fresh clients: none shares a connection with another module's run).

The graphs and the servers' script are :mod:`provider_graphs`' (the usage each agent's
provider reports, cache reads and writes and reasoning tokens included, is its ``USAGE``).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langgraph_swarm import create_handoff_tool, create_swarm
from provider_graphs import (
    CLAUDE,
    GPT,
    PROMPTS,
    build_supervisor,
    claude,
    gpt,
    script,
)
from provider_servers import AnthropicServer, OpenAIChatServer

OPENAI = OpenAIChatServer(script, model=GPT).start()
ANTHROPIC = AnthropicServer(script, model=CLAUDE).start()

supervisor = build_supervisor(ANTHROPIC, OPENAI)


def _swarm() -> Any:
    alice = create_agent(
        gpt(server=OPENAI, streaming=True, stream_usage=True),
        [create_handoff_tool(agent_name="bob", description="Transfer to Bob, for refunds")],
        system_prompt=PROMPTS["alice"],
        name="alice",
    )
    bob = create_agent(
        claude(ANTHROPIC),
        [create_handoff_tool(agent_name="alice", description="Transfer to Alice")],
        system_prompt=PROMPTS["bob"],
        name="bob",
    )
    return create_swarm([alice, bob], default_active_agent="alice").compile()


swarm = _swarm()
