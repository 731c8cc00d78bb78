"""Token usage as the real provider clients report it, through ``agenteval run``.

``ChatOpenAI`` and ``ChatAnthropic`` talk to the loopback servers of :mod:`provider_servers`
inside the supervisor and swarm of :mod:`provider_graphs`; every model call's usage is what
the server sent, read by hand into LangChain's convention (input includes cache reads and
writes, output includes reasoning; Anthropic's ``input_tokens`` are the uncached ones only):

    supervisor 0  anthropic  1200 + read 3000 + write 500           = 4700 in,  40 out
    supervisor 1  anthropic   300 + read 3500 + write 700 (5m 200, 1h 500) = 4500 in, 60 out
    billing 0     openai     2000 in (1536 cached), 120 out (64 reasoning)
    billing 1     openai     2300 in (2048 cached),  80 out (0 reasoning)
    tech 0        anthropic   900 + write 1100 (5m 0, 1h 1100)     = 2000 in,  50 out (20 thinking)
                  streamed
    tech 1        anthropic   150 + read 2000 + write 0             = 2150 in,  70 out, streamed
    alice 0       openai     1500 in (1024 cached), 30 out (16 reasoning), streamed
    alice 1       openai     1600 in (1024 cached), 45 out (0 reasoning), streamed
    bob 0         anthropic   400 + read 1800 + write 600 (5m 600, 1h 0) = 2800 in, 90 out
    carol 0       openai     5000 in (4000 cached), 100 out: claude-sonnet-5 behind a gateway

The examples: ``b`` (billing: supervisor 0, billing 0, billing 1, supervisor 1), ``t``
(tech: supervisor 0, tech 0, tech 1, supervisor 1), ``r`` (for bob: supervisor 1 alone in
the supervisor; alice 0 then bob in the swarm), ``c`` (for carol: supervisor 1; alice 0 then
carol in the gateway swarm); alice answers what she cannot hand off herself (alice 1).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest


def graphs() -> ModuleType:
    """:mod:`provider_graphs`, imported by the tests that run it: it loads the provider
    clients and starts its servers (over a second), which collecting the tests need not."""
    import provider_graphs

    return provider_graphs


ANT, OAI = "anthropic", "openai"
# (agent, input, output, cache read, cache write, reasoning, token details, provider)
SUPERVISOR_0 = ("supervisor", 4700, 40, 3000, 500, None, {}, ANT)
SUPERVISOR_1 = (
    "supervisor",
    4500,
    60,
    3500,
    700,
    None,
    {"cache_write_5m_tokens": 200, "cache_write_1h_tokens": 500},
    ANT,
)
AUDIO = {"input_audio_tokens": 0, "output_audio_tokens": 0}  # OpenAI reports 0 audio tokens
BILLING_0 = ("billing", 2000, 120, 1536, None, 64, AUDIO, OAI)
BILLING_1 = ("billing", 2300, 80, 2048, None, 0, AUDIO, OAI)
TECH_0 = (
    "tech",
    2000,
    50,
    0,
    1100,
    20,
    {"cache_write_5m_tokens": 0, "cache_write_1h_tokens": 1100},
    ANT,
)
TECH_1 = ("tech", 2150, 70, 2000, 0, None, {}, ANT)
ALICE_0 = ("alice", 1500, 30, 1024, None, 16, AUDIO, OAI)
ALICE_1 = ("alice", 1600, 45, 1024, None, 0, AUDIO, OAI)
BOB_0 = (
    "bob",
    2800,
    90,
    1800,
    600,
    None,
    {"cache_write_5m_tokens": 600, "cache_write_1h_tokens": 0},
    ANT,
)
CAROL_0 = ("carol", 5000, 100, 4000, None, None, {"input_audio_tokens": 0}, OAI)
CALLS = {
    "supervisor": {
        "b": [SUPERVISOR_0, BILLING_0, BILLING_1, SUPERVISOR_1],
        "t": [SUPERVISOR_0, TECH_0, TECH_1, SUPERVISOR_1],
        "r": [SUPERVISOR_1],
        "c": [SUPERVISOR_1],
    },
    "swarm": {"b": [ALICE_1], "t": [ALICE_1], "r": [ALICE_0, BOB_0], "c": [ALICE_1]},
    "gateway": {"b": [ALICE_1], "t": [ALICE_1], "r": [ALICE_1], "c": [ALICE_0, CAROL_0]},
}
FIELDS = (
    "agent",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "token_details",
    "provider",
)
TARGETS = {
    "supervisor": "provider_graphs:supervisor",
    "swarm": "provider_graphs:swarm",
    "silent": "provider_graphs:swarm_silent",
    "gateway": "provider_graphs:gateway",
}


def model_of(call: tuple[Any, ...]) -> str:
    """The model each agent runs: carol's claude-sonnet-5 is served by an OpenAI gateway."""
    anthropic = call[-1] == ANT or call[0] == "carol"
    return graphs().CLAUDE if anthropic else graphs().GPT


@pytest.fixture(scope="module")
def providers(tmp_path_factory: Any, invoke: Any) -> dict[str, Any]:
    return graphs().run_providers(tmp_path_factory.mktemp("providers"), invoke, TARGETS)


def results(providers: dict[str, Any], target: str) -> dict[str, Any]:
    return {r["example_id"]: r for r in providers["experiments"][target]["results"]}


@pytest.mark.parametrize("target", ["supervisor", "swarm", "gateway"])
def test_every_model_call_keeps_the_usage_its_provider_sent(providers, target):
    for example, expected in CALLS[target].items():
        calls = results(providers, target)[example]["trace"]["model_calls"]
        got = [tuple(call[f] for f in FIELDS) for call in calls]
        assert got == expected, example
        assert [c["model"] for c in calls] == [model_of(e) for e in expected]


def test_the_servers_were_asked_as_each_client_asks(providers):
    """The calls really went through the wire formats: streamed where the graph streams,
    and ChatOpenAI asked for the stream's usage only with ``stream_usage=True``."""
    by_agent: dict[str, set[tuple[bool, str | None]]] = {}
    for exchange in providers["exchanges"]:
        options = exchange.body.get("stream_options")
        options = None if options is None else json.dumps(options)
        by_agent.setdefault(graphs().agent_of(exchange), set()).add((exchange.streamed, options))
    assert by_agent["supervisor"] == {(False, None)}
    assert by_agent["billing"] == {(False, None)}
    assert by_agent["tech"] == {(True, None)}  # Anthropic streams always carry usage
    assert by_agent["bob"] == {(False, None)}
    assert by_agent["carol"] == {(False, None)}
    carol = [e for e in providers["exchanges"] if graphs().agent_of(e) == "carol"]
    asked = {e.body["model"] for e in carol}
    assert asked == {graphs().CLAUDE}  # the gateway was asked for claude-sonnet-5
    # the swarm with stream_usage=True, and the one without
    assert by_agent["alice"] == {(True, '{"include_usage": true}'), (True, None)}


@pytest.mark.parametrize(
    ("target", "example", "tokens"),
    [
        ("supervisor", "b", (4700 + 2000 + 2300 + 4500, 40 + 120 + 80 + 60)),
        ("supervisor", "t", (4700 + 2000 + 2150 + 4500, 40 + 50 + 70 + 60)),
        ("supervisor", "r", (4500, 60)),
        ("supervisor", "c", (4500, 60)),
        ("swarm", "b", (1600, 45)),
        ("swarm", "t", (1600, 45)),
        ("swarm", "r", (1500 + 2800, 30 + 90)),
        ("swarm", "c", (1600, 45)),
        ("gateway", "c", (1500 + 5000, 30 + 100)),
    ],
)
def test_each_request_sums_its_calls(providers, target, example, tokens):
    scores = results(providers, target)[example]["scores"]
    assert (scores["input_tokens"], scores["output_tokens"]) == tokens
    assert scores["total_tokens"] == sum(tokens)


def _per_agent(calls: list[dict[str, Any]], field: str) -> dict[str, int | None]:
    sums: dict[str, int | None] = {}
    for call in calls:
        value = call[field]
        before = sums.get(call["agent"], 0)
        sums[call["agent"]] = None if value is None or before is None else before + value
    return sums


def test_each_agent_sums_its_calls(providers):
    """The --by-agent figures per agent, over the four examples, and the cache and
    reasoning parts of each agent's calls (supervisor and swarm)."""
    agents = providers["experiments"]["supervisor"]["agents"]
    got = {
        name: (a["model_calls"], a["input_tokens"], a["output_tokens"])
        for name, a in agents.items()
    }
    assert got == {
        "supervisor": (6, 4700 * 2 + 4500 * 4, 40 * 2 + 60 * 4),
        "billing": (2, 2000 + 2300, 120 + 80),
        "tech": (2, 2000 + 2150, 50 + 70),
    }
    for target, want in {
        "swarm": {"alice": (4, 1500 + 1600 * 3, 30 + 45 * 3), "bob": (1, 2800, 90)},
        "gateway": {"alice": (4, 1600 * 3 + 1500, 45 * 3 + 30), "carol": (1, 5000, 100)},
    }.items():
        agents = providers["experiments"][target]["agents"]
        sums = {
            n: (a["model_calls"], a["input_tokens"], a["output_tokens"]) for n, a in agents.items()
        }
        assert sums == want, target
    calls = [
        call
        for target in ("supervisor", "swarm")
        for result in results(providers, target).values()
        for call in result["trace"]["model_calls"]
    ]
    assert _per_agent(calls, "cache_read_tokens") == {
        "supervisor": 3000 * 2 + 3500 * 4,
        "billing": 1536 + 2048,
        "tech": 0 + 2000,
        "alice": 1024 * 4,
        "bob": 1800,
    }
    writes = _per_agent(calls, "cache_write_tokens")
    assert writes == {
        "supervisor": 500 * 2 + 700 * 4,
        "billing": None,  # OpenAI's chat completions report no cache writes
        "tech": 1100 + 0,
        "alice": None,
        "bob": 600,
    }
    reasoning = _per_agent(calls, "reasoning_tokens")
    assert reasoning == {
        "supervisor": None,  # Anthropic sent no output_tokens_details: not reported
        "billing": 64 + 0,
        "tech": None,  # one call reported 20 thinking tokens, the other nothing
        "alice": 16 + 0 + 0,
        "bob": None,
    }


def test_a_chatopenai_stream_without_usage_says_to_set_stream_usage(providers):
    """With a custom base_url, ChatOpenAI asks for no usage on a stream unless
    stream_usage=True: the tokens are unknown, and the note says how to get them."""
    silent = results(providers, "silent")
    for example in ("b", "t", "r", "c"):
        result = silent[example]
        alice = result["trace"]["model_calls"][0]
        assert (alice["agent"], alice["input_tokens"], alice["output_tokens"]) == (
            "alice",
            None,
            None,
        )
        assert "stream_usage=True" in alice["no_usage_reason"]
        assert result["scores"]["input_tokens"] is None
        assert result["scores"]["cost_usd"] is None
        comment = result["comments"]["input_tokens"]
        assert "['gpt-5-mini'] reported no token usage" in comment
        assert "set stream_usage=True on ChatOpenAI" in comment
    bob = silent["r"]["trace"]["model_calls"][1]  # the Anthropic call still counts
    assert (bob["agent"], bob["input_tokens"], bob["output_tokens"]) == ("bob", 2800, 90)
    # the same graph with stream_usage=True has no such note
    assert all(
        "stream_usage" not in (r["comments"].get("input_tokens") or "")
        for r in results(providers, "swarm").values()
    )


def test_the_run_table_says_why_a_streamed_models_tokens_read_n_a(providers):
    """Under the table, not only in --json's comments: the calls without usage and the
    stream_usage=True that brings it; a target whose calls all reported usage says nothing."""
    calls = sum(len(r["trace"]["model_calls"][:1]) for r in results(providers, "silent").values())
    assert (
        f"silent: {calls} model call(s) reported no token usage, so tokens and cost read n/a: "
        "streamed without usage: set stream_usage=True on ChatOpenAI (off by default with a "
        "custom base_url)"
    ) in providers["output"]
    assert providers["output"].count("so tokens and cost read n/a") == 1


@pytest.fixture(scope="module")
def failed(tmp_path_factory: Any, invoke: Any) -> dict[str, Any]:
    """The supervisor on servers where billing's provider answers 500 (``max_retries=0``):
    the request for billing fails after the supervisor's first call."""
    return graphs().run_providers(
        tmp_path_factory.mktemp("failed"),
        invoke,
        {"failing": "provider_graphs:failing"},
        max_error_rate=1,
    )


def test_a_failed_request_keeps_the_usage_of_the_calls_it_made(failed):
    result = results(failed, "failing")["b"]
    assert result["status"] == "error"
    assert "500" in result["error"]
    supervisor, billing = result["trace"]["model_calls"]
    assert tuple(supervisor[f] for f in FIELDS) == SUPERVISOR_0  # made and billed
    assert (billing["agent"], billing["failed"]) == ("billing", True)
    assert (billing["input_tokens"], billing["output_tokens"]) == (None, None)
    assert (billing["cache_read_tokens"], billing["reasoning_tokens"]) == (None, None)
    # the request's tokens are the calls that answered: the supervisor's
    assert (result["scores"]["input_tokens"], result["scores"]["output_tokens"]) == (4700, 40)
    agents = failed["experiments"]["failing"]["agents"]
    # b (failed): supervisor 0 alone; t: supervisor 0 and 1; r, c: supervisor 1
    assert agents["supervisor"]["input_tokens"] == 4700 + (4700 + 4500) + 4500 + 4500
