"""provider_graphs' langgraph-supervisor and langgraph-swarm graphs, on loopback servers of
their own: a run of them here never shares the provider clients' connections with the runs
other test modules make of provider_graphs' graphs (see ``provider_graphs.run_providers``)."""

from __future__ import annotations

from langchain.agents import create_agent
from langgraph_swarm import create_handoff_tool, create_swarm
from provider_graphs import PROMPTS, build_supervisor, claude, gpt, script
from provider_servers import AnthropicServer, OpenAIChatServer

OPENAI = OpenAIChatServer(script, model="gpt-5-mini").start()
ANTHROPIC = AnthropicServer(script, model="claude-sonnet-5").start()

supervisor = build_supervisor(ANTHROPIC, OPENAI)

swarm = create_swarm(
    [
        create_agent(
            gpt(server=OPENAI, streaming=True, stream_usage=True),
            [create_handoff_tool(agent_name="bob", description="Transfer to Bob, for refunds")],
            system_prompt=PROMPTS["alice"],
            name="alice",
        ),
        create_agent(
            claude(ANTHROPIC),
            [create_handoff_tool(agent_name="alice", description="Transfer to Alice")],
            system_prompt=PROMPTS["bob"],
            name="bob",
        ),
    ],
    default_active_agent="alice",
).compile()
