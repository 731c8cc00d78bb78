"""Dollars for the real provider clients' calls, with no ``pricing:`` table: the price database.

The same runs as :mod:`test_provider_usage` (supervisor and swarm on ``ChatAnthropic`` and
``ChatOpenAI`` against the loopback servers, no ``pricing:`` in the spec). Every model call's
``cost_usd`` in ``--json``, every request's and every agent's must equal genai-prices' own
computation from the usage the server sent (``genai_prices.extract_usage`` on the provider's
response, then ``calc_price``) and a hand computation from the published rates.

The rates, USD per 1M tokens, from genai-prices' data (``genai_prices/data.py``, the
``claude-sonnet-5`` entry of provider ``anthropic`` and ``gpt-5-mini`` of ``openai``), which
follow https://www.anthropic.com/pricing#api and https://openai.com/api/pricing/:

    claude-sonnet-5   input 2, output 10, cache read 0.2, cache write 2.5 (5 minutes),
                      cache write 1 hour 4
    gpt-5-mini        input 0.25, output 2, cache read 0.025

By hand (uncached input is the input less cache reads and writes), in millionths of a dollar:

    supervisor 0  1200x2 + 3000x0.2 + 500x2.5 + 40x10                 = 4650
    supervisor 1  300x2 + 3500x0.2 + 200x2.5 + 500x4 + 60x10          = 4400
    billing 0     (2000-1536)x0.25 + 1536x0.025 + 120x2               = 394.4
    billing 1     (2300-2048)x0.25 + 2048x0.025 + 80x2                = 274.2
    tech 0        900x2 + 1100x4 + 50x10                              = 6700
    tech 1        150x2 + 2000x0.2 + 70x10                            = 1400
    alice 0       (1500-1024)x0.25 + 1024x0.025 + 30x2                = 204.6
    alice 1       (1600-1024)x0.25 + 1024x0.025 + 45x2                = 259.6
    bob 0         400x2 + 1800x0.2 + 600x2.5 + 90x10                  = 3560
    carol 0       (5000-4000)x2 + 4000x0.2 + 100x10                   = 3800
                  (claude-sonnet-5 behind an OpenAI-compatible gateway: the usage is in
                  OpenAI's form, the provider ChatOpenAI names is openai, the price is
                  claude-sonnet-5's, matched by the model's name)

Priced as all-input at the full rate, supervisor 1 would be 4500x2 + 60x10 = 9600: the cache
rates more than halve it; priced without the 1-hour split it would be 3650, not 4400.

These need agenteval to price a model from the price database when the spec has no
``pricing:`` for it; until it does, the module is skipped (``_prices_from_database``).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import pytest
from genai_prices import calc_price, extract_usage
from test_provider_usage import TARGETS


def graphs() -> ModuleType:
    """:mod:`provider_graphs`, imported by the tests that run it: it loads the provider
    clients and starts its servers (over a second), which collecting the tests need not."""
    import provider_graphs

    return provider_graphs


def _prices_from_database() -> bool:
    """Whether agenteval prices a model the spec gives no price for."""
    from agenteval_cli.core.records import ModelCall, Trace
    from agenteval_cli.evaluators.cost import token_cost

    call = ModelCall("a", "gpt-5-mini", 1000, 100, provider="openai")
    try:
        scores = {s["key"]: s["score"] for s in token_cost(pricing={})(Trace(model_calls=[call]))}
    except Exception:
        return False
    return scores.get("cost_usd") is not None


pytestmark = pytest.mark.skipif(
    not _prices_from_database(),
    reason="agenteval does not price models from the price database (no spec pricing) yet",
)

MICRO = 1e-6
BY_HAND = {  # (agent, step) -> USD, from the table above
    ("supervisor", 0): 4650 * MICRO,
    ("supervisor", 1): 4400 * MICRO,
    ("billing", 0): 394.4 * MICRO,
    ("billing", 1): 274.2 * MICRO,
    ("tech", 0): 6700 * MICRO,
    ("tech", 1): 1400 * MICRO,
    ("alice", 0): 204.6 * MICRO,
    ("alice", 1): 259.6 * MICRO,
    ("bob", 0): 3560 * MICRO,
    ("carol", 0): 3800 * MICRO,
}
PROVIDER = {"supervisor": "anthropic", "tech": "anthropic", "bob": "anthropic"}  # else openai
GATEWAYED = {"carol"}  # claude-sonnet-5 behind an OpenAI-compatible gateway
STEPS = {  # each example's calls, as (agent, step)
    "supervisor": {
        "b": [("supervisor", 0), ("billing", 0), ("billing", 1), ("supervisor", 1)],
        "t": [("supervisor", 0), ("tech", 0), ("tech", 1), ("supervisor", 1)],
        "r": [("supervisor", 1)],
        "c": [("supervisor", 1)],
    },
    "swarm": {
        "b": [("alice", 1)],
        "t": [("alice", 1)],
        "r": [("alice", 0), ("bob", 0)],
        "c": [("alice", 1)],
    },
    "gateway": {
        "b": [("alice", 1)],
        "t": [("alice", 1)],
        "r": [("alice", 1)],
        "c": [("alice", 0), ("carol", 0)],
    },
}


def database_price(agent: str, step: int) -> float:
    """genai-prices' price of the usage the server sent for this call, read by genai-prices
    from the provider's own response form."""
    provider = PROVIDER.get(agent, "openai")  # the wire format the server spoke
    claude = provider == "anthropic" or agent in GATEWAYED
    model = graphs().CLAUDE if claude else graphs().GPT
    # genai-prices reads the usage from the response as the provider sent it (a gateway's
    # model is no model of the provider's form: read the usage alone, then price the model)
    read_as = graphs().GPT if agent in GATEWAYED else model
    response = {"model": read_as, "usage": graphs().USAGE[(agent, step)]}
    flavor = "default" if provider == "anthropic" else "chat"
    usage = extract_usage(response, provider_id=provider, api_flavor=flavor).usage
    if agent in GATEWAYED:  # a gateway names no provider: the model's name decides
        return float(calc_price(usage, model).total_price)
    return float(calc_price(usage, model, provider_id=provider).total_price)


def close(got: Any, want: float) -> bool:
    return got is not None and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


@pytest.fixture(scope="module")
def providers(tmp_path_factory: Any, invoke: Any) -> dict[str, Any]:
    return graphs().run_providers(tmp_path_factory.mktemp("provider-cost"), invoke, TARGETS)


def results(providers: dict[str, Any], target: str) -> dict[str, Any]:
    return {r["example_id"]: r for r in providers["experiments"][target]["results"]}


def test_the_hand_computation_is_the_databases():
    for (agent, step), usd in BY_HAND.items():
        assert close(database_price(agent, step), usd), (agent, step)


@pytest.mark.parametrize("target", ["supervisor", "swarm", "gateway"])
def test_every_call_and_every_request_costs_what_the_database_says(providers, target):
    for example, steps in STEPS[target].items():
        result = results(providers, target)[example]
        calls = result["trace"]["model_calls"]
        assert [c["agent"] for c in calls] == [agent for agent, _ in steps]
        for call, step in zip(calls, steps, strict=True):
            assert close(call["cost_usd"], database_price(*step)), (example, step)
            assert close(call["cost_usd"], BY_HAND[step]), (example, step)
            assert call["price_source"], (example, step)  # where the price came from
        want = sum(BY_HAND[step] for step in steps)
        assert close(result["scores"]["cost_usd"], want), example


def test_every_agent_costs_the_sum_of_its_calls(providers):
    experiments = providers["experiments"]
    got = {
        target: {name: a["cost_usd"] for name, a in experiments[target]["agents"].items()}
        for target in ("supervisor", "swarm", "gateway")
    }
    want = {
        "supervisor": {
            "supervisor": BY_HAND[("supervisor", 0)] * 2 + BY_HAND[("supervisor", 1)] * 4,
            "billing": BY_HAND[("billing", 0)] + BY_HAND[("billing", 1)],
            "tech": BY_HAND[("tech", 0)] + BY_HAND[("tech", 1)],
        },
        "swarm": {
            "alice": BY_HAND[("alice", 0)] + BY_HAND[("alice", 1)] * 3,
            "bob": BY_HAND[("bob", 0)],
        },
        "gateway": {
            "alice": BY_HAND[("alice", 1)] * 3 + BY_HAND[("alice", 0)],
            "carol": BY_HAND[("carol", 0)],
        },
    }
    assert got.keys() == want.keys()
    for target, agents in want.items():
        assert got[target].keys() == agents.keys()
        for name, usd in agents.items():
            assert close(got[target][name], usd), (target, name)


def test_a_call_without_usage_has_no_price(providers):
    """alice streamed without stream_usage: her calls' cost is unknown, never $0, and so is
    the request's; bob's call is still priced."""
    silent = results(providers, "silent")
    for example in ("b", "t", "r", "c"):
        result = silent[example]
        assert result["trace"]["model_calls"][0]["cost_usd"] is None
        assert result["scores"]["cost_usd"] is None
    assert close(silent["r"]["trace"]["model_calls"][1]["cost_usd"], BY_HAND[("bob", 0)])


@pytest.fixture(scope="module")
def failed(tmp_path_factory: Any, invoke: Any) -> dict[str, Any]:
    """The supervisor whose billing provider answers 500 (as in test_provider_usage)."""
    return graphs().run_providers(
        tmp_path_factory.mktemp("failed-cost"),
        invoke,
        {"failing": "provider_graphs:failing"},
        max_error_rate=1,
    )


def test_a_failed_request_costs_the_calls_it_made(failed):
    """The billing request failed after the supervisor's first call: that call was billed,
    and the request, the agent and the run count it."""
    by_example = results(failed, "failing")
    result = by_example["b"]
    assert result["status"] == "error"
    supervisor, billing = result["trace"]["model_calls"]
    assert close(supervisor["cost_usd"], BY_HAND[("supervisor", 0)])
    assert billing["failed"]  # it answered nothing: its usage is not the request's
    assert close(result["scores"]["cost_usd"], BY_HAND[("supervisor", 0)])
    agents = failed["experiments"]["failing"]["agents"]
    want = (  # b: supervisor 0; t: supervisor 0 and 1; r, c: supervisor 1
        BY_HAND[("supervisor", 0)] * 2 + BY_HAND[("supervisor", 1)] * 3
    )
    assert close(agents["supervisor"]["cost_usd"], want)
