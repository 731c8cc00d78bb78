"""A supervisor and a swarm on the real provider clients, against the loopback servers.

Built as langgraph-supervisor's and langgraph-swarm's READMEs build them (``create_agent``,
``create_react_agent``), with ``ChatAnthropic`` and ``ChatOpenAI`` talking to the servers of
:mod:`provider_servers`, started once per process when this module is imported. The servers
answer by one script: an agent calls its tool (or hands off) first, then answers, and each
(agent, step) reports the usage in :data:`USAGE`, in the provider's own form.

    supervisor  ChatAnthropic claude-sonnet-5, not streamed
      billing   ChatOpenAI gpt-5-mini (create_agent), not streamed; tool lookup_invoice
      tech      ChatAnthropic claude-sonnet-5 (create_react_agent), streamed; tool check_status
    swarm       alice: ChatOpenAI gpt-5-mini, streamed with stream_usage=True, hands off to bob
                bob:   ChatAnthropic claude-sonnet-5, not streamed
    swarm_silent  the swarm with alice streamed without stream_usage (no usage comes back)
    failing     the supervisor on servers of its own where billing's provider answers 500
    gateway     alice as in swarm, hands off to carol: ChatOpenAI claude-sonnet-5 behind an
                OpenAI-compatible gateway (its own server), not streamed

A question names the agent it is for ("billing: ...", "tech: ...", "bob: ...", "carol: ...");
an agent that cannot hand off to it (the supervisor has no carol, the swarm no carol) answers
it itself.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import yaml
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm
from provider_servers import (
    AnthropicServer,
    Exchange,
    OpenAIChatServer,
    Reply,
    anthropic_usage,
    openai_usage,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

CLAUDE, GPT = "claude-sonnet-5", "gpt-5-mini"
PROMPTS = {
    "supervisor": "You are the supervisor: route billing questions to billing, others to tech.",
    "billing": "You are the billing specialist: invoices and refunds.",
    "tech": "You are the tech specialist: crashes and errors.",
    "alice": "You are Alice, the front desk; Bob handles refunds.",
    "bob": "You are Bob, the refunds clerk.",
    "carol": "You are Carol, the gateway's claims clerk.",
}
# (agent, step) -> the usage the provider reports; step 0 calls a tool or hands off,
# step 1 answers. Anthropic's input_tokens are the uncached ones only.
USAGE: dict[tuple[str, int], dict[str, Any]] = {
    ("supervisor", 0): anthropic_usage(1200, 40, cache_read=3000, cache_write=500),
    ("supervisor", 1): anthropic_usage(300, 60, cache_read=3500, cache_write=700, split=(200, 500)),
    ("billing", 0): openai_usage(2000, 120, cached=1536, reasoning=64),
    ("billing", 1): openai_usage(2300, 80, cached=2048, reasoning=0),
    ("tech", 0): anthropic_usage(900, 50, cache_write=1100, split=(0, 1100), thinking=20),
    ("tech", 1): anthropic_usage(150, 70, cache_read=2000),
    ("alice", 0): openai_usage(1500, 30, cached=1024, reasoning=16),
    ("alice", 1): openai_usage(1600, 45, cached=1024, reasoning=0),
    ("bob", 0): anthropic_usage(400, 90, cache_read=1800, cache_write=600, split=(600, 0)),
    # claude-sonnet-5 behind an OpenAI-compatible gateway: OpenAI's form, no provider in it
    ("carol", 0): openai_usage(5000, 100, cached=4000),
}
ANSWERS = {
    "supervisor": "All done.",
    "billing": "Refund issued for invoice 42.",
    "tech": "The service is back up.",
    "alice": "Happy to help.",
    "bob": "Your refund is on its way.",
    "carol": "Claim filed.",
}
OWN_TOOL = {"billing": "lookup_invoice", "tech": "check_status"}


def agent_of(exchange: Exchange) -> str:
    """Which agent sent the request, by its system prompt."""
    return next(name for name, prompt in PROMPTS.items() if prompt in exchange.system)


def addressee(question: str) -> str:
    """The agent a question is for: ``"billing: ..."`` is billing's."""
    return question.partition(":")[0].strip()


def step_of(agent: str, exchange: Exchange) -> int:
    """0 until the agent's tool or handoff has answered in this request, then 1."""
    results = exchange.tool_results
    if agent == "supervisor":
        back = any(name.startswith("transfer_back_to") for name in results)
        return int(back or addressee(exchange.question) not in OWN_TOOL)
    if agent == "alice":  # hands off to the agent the question names, if she can
        return int(f"transfer_to_{addressee(exchange.question)}" not in exchange.tools)
    if agent in ("bob", "carol"):
        return 0
    return int(OWN_TOOL[agent] in results)


def script(exchange: Exchange) -> Reply:
    agent = agent_of(exchange)
    step = step_of(agent, exchange)
    usage = USAGE[(agent, step)]
    if step == 1 or agent in ("bob", "carol"):
        return Reply(usage, text=ANSWERS[agent])
    if agent in ("supervisor", "alice"):
        return Reply(usage, tool=f"transfer_to_{addressee(exchange.question)}")
    return Reply(usage, tool=OWN_TOOL[agent], args={"ref": "42"})


OPENAI = OpenAIChatServer(script, model=GPT).start()
ANTHROPIC = AnthropicServer(script, model=CLAUDE).start()
GATEWAY = OpenAIChatServer(script, model=GPT).start()  # an OpenAI-compatible gateway
SERVERS = (OPENAI, ANTHROPIC, GATEWAY)


def clear() -> None:
    """Forget the exchanges so far (a test reads its own run's)."""
    for server in SERVERS:
        with server._lock:
            server.exchanges.clear()


def claude(server: AnthropicServer = ANTHROPIC, **options: Any) -> ChatAnthropic:
    return ChatAnthropic(
        model=CLAUDE, base_url=server.base_url, api_key="test", max_retries=0, **options
    )


def gpt(model: str = GPT, server: OpenAIChatServer = OPENAI, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=model, base_url=server.base_url, api_key="test", max_retries=0, **options
    )


@tool
def lookup_invoice(ref: str) -> str:
    """Look an invoice up."""
    return f"invoice {ref}: paid twice"


@tool
def check_status(ref: str) -> str:
    """Check a service's status."""
    return f"service {ref}: degraded"


def build_supervisor(anthropic: AnthropicServer, openai: OpenAIChatServer) -> Any:
    billing = create_agent(
        gpt(server=openai), [lookup_invoice], system_prompt=PROMPTS["billing"], name="billing"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tech = create_react_agent(
            claude(anthropic, streaming=True), [check_status], prompt=PROMPTS["tech"], name="tech"
        )
    return create_supervisor(
        [billing, tech], model=claude(anthropic), prompt=PROMPTS["supervisor"]
    ).compile()


def failing_script(exchange: Exchange) -> Reply:
    """The script, but billing's provider answers 500: the request fails after the
    supervisor's first call, which was made and billed."""
    if agent_of(exchange) == "billing":
        return Reply(None, status=500)
    return script(exchange)


FAILING_OPENAI = OpenAIChatServer(failing_script, model=GPT).start()
FAILING_ANTHROPIC = AnthropicServer(failing_script, model=CLAUDE).start()
SERVERS += (FAILING_OPENAI, FAILING_ANTHROPIC)

supervisor = build_supervisor(ANTHROPIC, OPENAI)
failing = build_supervisor(FAILING_ANTHROPIC, FAILING_OPENAI)


def build_swarm(**alice_model: Any) -> Any:
    alice = create_agent(
        gpt(streaming=True, **alice_model),
        [create_handoff_tool(agent_name="bob", description="Transfer to Bob, for refunds")],
        system_prompt=PROMPTS["alice"],
        name="alice",
    )
    bob = create_agent(
        claude(),
        [create_handoff_tool(agent_name="alice", description="Transfer to Alice")],
        system_prompt=PROMPTS["bob"],
        name="bob",
    )
    return create_swarm([alice, bob], default_active_agent="alice").compile()


swarm = build_swarm(stream_usage=True)
swarm_silent = build_swarm()


def build_gateway() -> Any:
    """alice hands off to carol, whose claude-sonnet-5 is served by an OpenAI-compatible
    gateway (``ChatOpenAI`` with the gateway's base URL: ``ls_provider`` says openai)."""
    alice = create_agent(
        gpt(server=GATEWAY, streaming=True, stream_usage=True),
        [create_handoff_tool(agent_name="carol", description="Transfer to Carol, for claims")],
        system_prompt=PROMPTS["alice"],
        name="alice",
    )
    carol = create_agent(
        gpt(CLAUDE, server=GATEWAY),
        [create_handoff_tool(agent_name="alice", description="Transfer to Alice")],
        system_prompt=PROMPTS["carol"],
        name="carol",
    )
    return create_swarm([alice, carol], default_active_agent="alice").compile()


gateway = build_gateway()


ROWS = [
    {"id": "b", "inputs": {"question": "billing: refund invoice 42"}},
    {"id": "t", "inputs": {"question": "tech: the app crashed"}},
    {"id": "r", "inputs": {"question": "bob: refund please"}},
    {"id": "c", "inputs": {"question": "carol: file my claim"}},
]


_RUNS: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}


def run_providers(
    folder: Path, invoke: Any, targets: dict[str, str], *, exit_code: int = 0, **spec: Any
) -> dict[str, Any]:
    """``agenteval run spec.yaml --json out.json --by-agent`` over the three examples, no
    ``pricing:`` table; the experiments of out.json by target, and the servers' exchanges.

    Run once per process for the same targets: the provider clients' async HTTP clients are
    module-level here, and keep-alive connections opened in one run's event loop cannot be
    used from the next one's (``RuntimeError: Event loop is closed``), as in any program
    that calls ``asyncio.run`` twice around the same ``ChatOpenAI``."""
    key = tuple(sorted(targets.items()))
    if key not in _RUNS:
        _RUNS[key] = _run(folder, invoke, targets, exit_code, spec)
    return _RUNS[key]


def _run(
    folder: Path, invoke: Any, targets: dict[str, str], exit_code: int, options: dict[str, Any]
) -> dict[str, Any]:
    spec = {
        "experiment_prefix": "providers",
        "dataset": "data.jsonl",
        "targets": targets,
        "evaluators": ["token_cost"],
        "concurrency": 1,
        **options,
    }
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    clear()
    out = folder / "out.json"
    result = invoke(
        "run",
        folder / "spec.yaml",
        "--json",
        out,
        "--by-agent",
        "--store",
        folder / "a.db",
    )
    assert result.exit_code == exit_code, result.output
    experiments = {e["target"]: e for e in json.loads(out.read_text())["experiments"]}
    exchanges = [exchange for server in SERVERS for exchange in server.answered()]
    return {"experiments": experiments, "output": result.text, "exchanges": exchanges}
