"""A langgraph-supervisor and a langgraph-swarm on the real provider clients, three times: one
pair for the export tests (``supervisor``, ``swarm``), one for the import tests
(``recorded_supervisor``, ``recorded_swarm``), one for OpenLLMetry's import tests
(``openllmetry_supervisor``, ``openllmetry_swarm``), each on loopback servers of its own.

A pair is run in one event loop only: the provider clients' async HTTP clients keep
keep-alive connections that another run's loop cannot use (see
``provider_graphs.run_providers``), so no two test modules share one. The graphs and the
servers' script are :mod:`provider_graphs`' (the usage each agent's provider reports, cache
reads and writes and reasoning tokens included, is its ``USAGE``).
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


def _pair() -> tuple[Any, Any]:
    """A supervisor and a swarm on fresh servers and fresh clients."""
    openai = OpenAIChatServer(script, model=GPT).start()
    anthropic = AnthropicServer(script, model=CLAUDE).start()
    alice = create_agent(
        gpt(server=openai, streaming=True, stream_usage=True),
        [create_handoff_tool(agent_name="bob", description="Transfer to Bob, for refunds")],
        system_prompt=PROMPTS["alice"],
        name="alice",
    )
    bob = create_agent(
        claude(anthropic),
        [create_handoff_tool(agent_name="alice", description="Transfer to Alice")],
        system_prompt=PROMPTS["bob"],
        name="bob",
    )
    swarm = create_swarm([alice, bob], default_active_agent="alice").compile()
    return build_supervisor(anthropic, openai), swarm


supervisor, swarm = _pair()
recorded_supervisor, recorded_swarm = _pair()
openllmetry_supervisor, openllmetry_swarm = _pair()
