"""Cost you can bill by: each model call priced by its parts (cache reads, cache writes of
each lifetime, reasoning), from the spec's ``pricing:`` first, else the genai-prices
database; provenance in every figure; unknown models n/a, never $0; the whole run's spend,
failed requests included; money in fixed point.

Expected dollars come twice over: from ``genai_prices.calc_price`` itself and by hand from
the published rates (claude-sonnet-5: $2 input, $0.20 cache read, $2.50 5-minute cache
write, $4 1-hour cache write, $10 output per 1M tokens; gpt-5: $1.25 input, $0.125 cache
read, $10 output, reasoning billed as output).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from projects import project
from serving import serve

from agenteval_cli.core.records import ModelCall, Result, Score, Trace
from agenteval_cli.evaluators.cost import token_cost
from agenteval_cli.evaluators.judge_model import _usage as judge_usage
from agenteval_cli.evaluators.judge_model import usage_scores
from agenteval_cli.metrics import prices
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.info import money
from agenteval_cli.metrics.prices import price_call, price_calls
from agenteval_cli.report.agents import aggregate
from agenteval_cli.results.figures import from_results
from agenteval_cli.trace.usage import read_usage

DB = f"genai-prices {__import__('genai_prices').__version__}"


def sonnet(**parts: object) -> ModelCall:
    fields = {"input_tokens": 60_000, "output_tokens": 1_500, "provider": "anthropic", **parts}
    return ModelCall(agent="support", model="claude-sonnet-5", **fields)  # type: ignore[arg-type]


def scores(trace: Trace, pricing: dict | None = None) -> dict[str, dict]:
    return {item["key"]: item for item in token_cost(pricing=pricing)(trace)}


# --- one call ------------------------------------------------------------------------------


def test_a_cache_heavy_claude_call_costs_what_the_provider_bills():
    call = sonnet(cache_read_tokens=54_000, cache_write_tokens=0)
    price = price_call(call, {})
    by_hand = Decimal(6_000 * 2 + 54_000 * 0.2 + 1_500 * 10) / 1_000_000
    library = calc_price(
        Usage(input_tokens=60_000, cache_read_tokens=54_000, output_tokens=1_500),
        "claude-sonnet-5",
        provider_id="anthropic",
    ).total_price
    assert price.usd == library == by_hand == Decimal("0.0378")
    assert price.source == DB and price.matched == "anthropic/claude-sonnet-5"


def test_anthropic_one_hour_cache_writes_are_priced_apart_from_five_minute_ones():
    # writes split by lifetime, as langchain-anthropic reports them: cache_creation 0
    call = ModelCall(agent="a", model="claude-sonnet-5", provider="anthropic")
    read_usage(
        call,
        {
            "input_tokens": 10_000,
            "output_tokens": 100,
            "input_token_details": {
                "cache_read": 0,
                "cache_creation": 0,
                "ephemeral_5m_input_tokens": 2_000,
                "ephemeral_1h_input_tokens": 3_000,
            },
        },
    )
    assert call.cache_write_tokens == 5_000
    by_hand = Decimal(5_000 * 2 + 2_000 * 2.5 + 3_000 * 4 + 100 * 10) / 1_000_000
    library = calc_price(
        Usage(
            input_tokens=10_000,
            cache_write_tokens=5_000,
            cache_write_5m_tokens=2_000,
            cache_write_1h_tokens=3_000,
            output_tokens=100,
        ),
        "claude-sonnet-5",
    ).total_price
    assert price_call(call, {}).usd == library == by_hand == Decimal("0.028")
    # the spec's own 1-hour rate; without one, the 1-hour writes at the write rate, said so
    spec = {"input": 1, "output": 5, "cache_write": 1.25, "cache_write_1h": 2}
    assert price_call(call, {"claude-sonnet-5": spec}).usd == Decimal("0.014")
    del spec["cache_write_1h"]
    bare = price_call(call, {"claude-sonnet-5": spec})
    assert bare.usd == Decimal(5_000 * 1 + 5_000 * 1.25 + 100 * 5) / 1_000_000
    assert bare.notes == (
        "cache_write_1h tokens of 'claude-sonnet-5' priced at its cache_write rate",
    )


def test_an_openai_reasoning_call_bills_reasoning_as_output_and_cache_reads_cheaper():
    call = ModelCall(
        agent="a",
        model="gpt-5",
        provider="openai",
        input_tokens=20_000,
        output_tokens=3_000,
        cache_read_tokens=16_000,
        reasoning_tokens=2_000,
    )
    by_hand = Decimal(4_000 * 1.25 + 16_000 * 0.125 + 3_000 * 10) / 1_000_000
    library = calc_price(
        Usage(input_tokens=20_000, cache_read_tokens=16_000, output_tokens=3_000),
        "gpt-5",
        provider_id="openai",
    ).total_price
    assert price_call(call, {}).usd == library == by_hand == Decimal("0.037")


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-5", "anthropic"),
        ("gpt-5", "openai"),
        ("gemini-2.5-pro", "google_genai"),  # tiered by the input tokens
        ("sonar-deep-research", "perplexity"),  # reasoning at a rate of its own
        ("sonar", "perplexity"),  # a fee per request
        ("gemini-2.5-flash", None),
    ],
)
def test_every_call_costs_what_genai_prices_calc_price_says(model, provider):
    import random

    draw = random.Random(f"{model}/{provider}")
    provider_id = {"google_genai": "google"}.get(provider or "", provider)
    for _ in range(200):
        inp = draw.randint(0, 400_000)
        read = draw.randint(0, inp)
        write = draw.randint(0, inp - read)
        hour = draw.randint(0, write)
        out = draw.randint(0, 20_000)
        thought = draw.randint(0, out)
        call = ModelCall(
            "a",
            model,
            inp,
            out,
            cache_read_tokens=read,
            cache_write_tokens=write,
            reasoning_tokens=thought,
            token_details={"cache_write_5m_tokens": write - hour, "cache_write_1h_tokens": hour},
            provider=provider,
        )
        usage = Usage(
            input_tokens=inp,
            output_tokens=out,
            cache_read_tokens=read,
            cache_write_tokens=write,
            cache_write_5m_tokens=write - hour,
            cache_write_1h_tokens=hour,
            output_reasoning_tokens=thought,
        )
        expected = calc_price(usage, model, provider_id=provider_id).total_price
        assert price_call(call, {}).usd == expected, (inp, read, write, hour, out, thought)


def test_a_gateway_that_names_no_provider_is_matched_by_the_model_name():
    # ChatOpenAI(base_url=gateway, model="claude-sonnet-5") says ls_provider "openai"
    call = sonnet(cache_read_tokens=54_000, provider="openai")
    assert price_call(call, {}).usd == Decimal("0.0378")
    assert price_call(call, {}).matched == "anthropic/claude-sonnet-5"
    google = ModelCall("a", "gemini-2.5-flash", 1_000, 500, provider="google_genai")
    assert price_call(google, {}).matched == "google/gemini-2.5-flash"


def test_a_spec_price_wins_over_the_database_and_cache_reads_without_a_rate_are_input():
    call = sonnet(cache_read_tokens=54_000)
    own = price_call(call, {"claude-sonnet-5": {"input": 3, "output": 15, "cache_read": 0.3}})
    assert own.usd == Decimal(6_000 * 3 + 54_000 * 0.3 + 1_500 * 15) / 1_000_000
    assert own.source == "spec"
    flat = price_call(call, {"claude-sonnet-5": {"input": 2, "output": 10}})
    assert flat.usd == Decimal("0.135")  # every input token at the input rate, and said so
    assert flat.notes == ("cache_read tokens of 'claude-sonnet-5' priced at its input rate",)


def test_a_model_neither_knows_is_unpriced_with_its_name_never_zero():
    price = price_call(ModelCall("a", "acme-llm-9", 100, 10, provider="acme"), {})
    assert price.usd is None
    assert "no price for model 'acme-llm-9'" in (price.reason or "")
    local = price_call(ModelCall("a", "llama3.1", 100, 10, provider="ollama"), {})
    assert local.usd is None and "served locally by ollama" in (local.reason or "")


# --- a request, the agents, the run --------------------------------------------------------


def supervisor_trace() -> Trace:
    boss = ModelCall(
        "boss",
        "claude-sonnet-5",
        60_000,
        1_500,
        provider="anthropic",
        cache_read_tokens=54_000,
        cache_write_tokens=0,
    )
    worker = ModelCall(
        "billing",
        "gpt-5",
        20_000,
        3_000,
        path=["team", "billing"],
        provider="openai",
        cache_read_tokens=16_000,
        reasoning_tokens=2_000,
    )
    failed = ModelCall("billing", "gpt-5", None, None, path=["team", "billing"], failed=True)
    return Trace(agent_path=["boss", "billing"], model_calls=[boss, worker, failed])


def test_a_request_and_its_agents_cost_the_sum_of_their_calls_with_the_source():
    trace = supervisor_trace()
    got = scores(trace)
    assert got["cost_usd"]["score"] == pytest.approx(0.0378 + 0.037, abs=1e-15)
    assert got["cost_usd"]["comment"].endswith(f"prices: {DB}")
    assert got["cache_share"]["score"] == (54_000 + 16_000) / 80_000
    price_calls(trace.model_calls, {})  # as the run prices them: each keeps its price
    usage = aggregate([trace.model_calls], {})
    assert usage.get("boss").cost_usd == 0.0378
    assert usage.get("team").cost_usd == usage.get("team > billing").cost_usd == 0.037
    assert usage.total.cost_usd == pytest.approx(0.0748, abs=1e-15)
    billing = usage.get("team > billing").to_json()
    assert (billing["cache_read_tokens"], billing["reasoning_tokens"]) == (16_000, 2_000)
    assert billing["cache_write_tokens"] is None  # gpt-5 reported no cache writes
    assert billing["price_source"] == DB


def test_an_unpriced_model_leaves_the_request_na_naming_it():
    trace = Trace(model_calls=[sonnet(), ModelCall("x", "acme-llm-9", 10, 1)])
    cost = scores(trace)["cost_usd"]
    assert cost["score"] is None and "'acme-llm-9'" in cost["comment"]
    price_calls(trace.model_calls, {})
    assert aggregate([trace.model_calls], {}).unpriced == ["acme-llm-9"]


def test_the_run_spend_counts_errored_interrupted_and_retried_requests():
    calls = [
        sonnet(input_tokens=1_000, output_tokens=100),  # $0.003
        sonnet(input_tokens=1_000, output_tokens=100, retried=True),  # a discarded attempt
    ]
    results = []
    for index, (error, interrupt) in enumerate([(None, None), ("boom", None), (None, "ask")]):
        trace = Trace(model_calls=calls[: index + 1] if index < 2 else calls[:1])
        score = [Score(i["key"], i["score"], i["comment"]) for i in token_cost()(trace)]
        results.append(Result(f"e{index}", 0, None, trace, score, error=error, interrupt=interrupt))
    metrics = from_results(results, repetitions=1).metrics()
    assert metrics["cost_usd_total"] == pytest.approx(0.003 + 0.006 + 0.003, abs=1e-15)
    assert metrics["cost_usd"] == pytest.approx(0.004, abs=1e-15)
    # one request's cost unknown: the run's spend is unknown, not a sum of the others
    unknown = Trace(model_calls=[ModelCall("x", "acme-llm-9", 10, 1)])
    unscored = [Score(i["key"], i["score"]) for i in token_cost()(unknown)]
    results.append(Result("e3", 0, None, unknown, unscored))
    assert from_results(results, repetitions=1).metrics()["cost_usd_total"] is None


def test_judge_spend_is_priced_by_the_database_and_kept_apart():
    usage = {
        "input_tokens": 2_000,
        "output_tokens": 300,
        "input_token_details": {"cache_read": 1_000},
        "output_token_details": {"reasoning": 200},
    }
    spent = judge_usage("gpt-5-2025-08-07", usage, "openai:gpt-5", {})
    by_hand = (1_000 * 1.25 + 1_000 * 0.125 + 300 * 10) / 1_000_000
    assert spent.cost_usd == pytest.approx(by_hand, abs=1e-15)
    cost = {s.key: s for s in usage_scores([spent])}["judge_cost_usd"]
    assert cost.score == spent.cost_usd and cost.comment.endswith(f"prices: {DB}")
    unknown = usage_scores([judge_usage("acme-judge", usage, "acme-judge", {})])
    assert [s.score for s in unknown if s.key == "judge_cost_usd"] == [None]


# A spec stored before prices had a ceiling can still hold one no provider charges.
ABSURD = {"m": {"input": 1e308, "output": 0}}


def test_a_call_whose_cost_overflows_is_na_with_the_reason_not_inf():
    price = price_call(ModelCall("a", "m", 10_000_000, 0), ABSURD)  # 1e309 USD
    assert price.usd is None and price.source == "spec"
    assert "overflows the largest number a score holds" in (price.reason or "")
    cost = scores(Trace(model_calls=[ModelCall("a", "m", 10_000_000, 0)]), ABSURD)["cost_usd"]
    assert cost["score"] is None and "of model 'm' of 1.000E+309 USD" in cost["comment"]


def test_a_request_whose_calls_add_up_past_the_largest_float_is_na_with_the_reason():
    calls = [ModelCall("a", "m", 1_000_000, 0), ModelCall("b", "m", 1_000_000, 0)]  # 1e308 each
    assert all(price_call(call, ABSURD).usd == Decimal("1E+308") for call in calls)
    cost = scores(Trace(model_calls=calls), ABSURD)["cost_usd"]
    assert cost["score"] is None and cost["comment"].startswith("a cost of 2.000E+308 USD")
    usage = aggregate([calls], ABSURD)
    assert usage.get("a").cost_usd == 1e308 and usage.total.cost_usd is None


def test_judge_spend_past_the_largest_float_is_na_with_the_reason():
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    spent = judge_usage("m", usage, "m", ABSURD)
    assert spent.cost_usd == 1e308
    cost = {s.key: s for s in usage_scores([spent, spent])}["judge_cost_usd"]
    assert cost.score is None and "overflows the largest number a score holds" in cost.comment


@pytest.mark.parametrize(
    "reported",
    [10**400, float("inf"), float("nan"), 2**53 + 1],
    ids=["huge", "inf", "nan", "2**53+1"],
)
def test_a_token_count_no_score_holds_is_unknown_with_the_reason(reported):
    """A count past any call's (or not finite) would overflow the float a score is, or its
    cost: the call's usage is unknown, and its tokens and cost n/a naming why."""
    call = ModelCall("a", "m")
    read_usage(call, {"input_tokens": reported, "output_tokens": 1})
    assert call.input_tokens is None and call.output_tokens == 1
    got = scores(Trace(model_calls=[call]), {"m": {"input": 1, "output": 1}})
    assert got["input_tokens"]["score"] is None and got["cost_usd"]["score"] is None
    comment = got["cost_usd"]["comment"]
    assert "impossible token count(s) taken as unknown: input_tokens" in comment
    assert any(why in comment for why in ("(infinite)", "(not a number)", "1,000,000,000"))


def test_the_price_ceiling_is_above_every_rate_the_database_lists():
    """No real price is refused: the spec's ceiling is over genai-prices' dearest rate."""
    from genai_prices import data_snapshot
    from genai_prices.types import TieredPrices

    from agenteval_cli.spec.fields import MAX_PRICE_PER_MTOK

    rates = []
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            listed = model.prices if isinstance(model.prices, list) else [model.prices]
            for entry in listed:
                price = getattr(entry, "prices", entry)
                for name in dir(price):
                    value = getattr(price, name) if name.endswith("_mtok") else None
                    if isinstance(value, TieredPrices):
                        rates += [value.base, *(tier.price for tier in value.tiers)]
                    elif value is not None:
                        rates.append(value)
    assert rates and 10 * max(rates) <= MAX_PRICE_PER_MTOK


# --- money, the network, start-up ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (9.3e-05, "$0.000093"),
        (0.000267, "$0.000267"),
        (0.00378, "$0.00378"),
        (3e-05, "$0.00003"),
        (1.2e-09, "$0.0000000012"),
        (0.1208, "$0.1208"),
        (0.0, "$0"),
    ],
)
def test_money_reads_as_money_never_in_exponent_form(value, shown):
    assert money(value) == shown == BUILT_IN.fmt("cost_usd", value)
    assert "e" not in BUILT_IN.fmt("cost_usd_total", value)


def test_help_and_importing_the_cli_never_load_genai_prices():
    code = (
        "from agenteval_cli.cli import app\ntry:\n    app(['--help'])\nexcept SystemExit:\n    pass"
    )
    probe = f"{code}\nimport sys\nprint('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.split()[-1:] == ["False"], out.stderr


def test_update_prices_fetches_with_genai_prices_updater_and_a_failure_is_exit_4(
    invoke, tmp_path, monkeypatch
):
    import http.server

    payload = [
        {
            "id": "anthropic",
            "name": "Anthropic",
            "api_pattern": "https://api\\.anthropic\\.com",
            "model_match": {"starts_with": "claude"},
            "models": [
                {
                    "id": "claude-sonnet-5",
                    "match": {"equals": "claude-sonnet-5"},
                    "prices": {"input_mtok": 1, "output_mtok": 5},
                }
            ],
        }
    ]

    class Prices(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(payload).encode() if self.path == "/data.json" else b""
            self.send_response(200 if body else 500)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Prices)
    serve(server)
    try:
        source = prices.update_database(f"http://127.0.0.1:{server.server_port}/data.json")
        assert source.startswith(f"{DB}, data fetched ")
        fetched = price_call(sonnet(), {})
        assert fetched.usd == Decimal(60_000 * 1 + 1_500 * 5) / 1_000_000
        assert fetched.source == source
        prices.use_bundled_database()
        assert price_call(sonnet(), {}).usd == Decimal("0.135")
        spec = write_spend_spec(tmp_path)
        base = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setenv("AGENTEVAL_PRICES_URL", f"{base}/data.json")
        out = tmp_path / "r.json"
        fresh = invoke("run", spec, "--store", tmp_path / "a.db", "--update-prices", "--json", out)
        assert fresh.exit_code == 0, fresh.output
        assert f"prices: {DB}, data fetched " in fresh.output
        (experiment,) = json.loads(out.read_text())["experiments"]
        # at the fetched $1 / $5: 1,000 + 100, then that and 2,000 + 50 for the errored one
        assert experiment["metrics"]["cost_usd_total"] == pytest.approx(0.00525, abs=1e-15)
        assert experiment["results"][0]["price_source"].startswith(f"{DB}, data fetched ")
        prices.use_bundled_database()
        monkeypatch.setenv("AGENTEVAL_PRICES_URL", f"{base}/gone")
        result = invoke("run", spec, "--store", tmp_path / "db", "--update-prices")
        assert result.exit_code == 4
        assert "error: --update-prices: could not fetch the price data" in result.text
        assert "Traceback" not in result.output and not (tmp_path / "db").exists()
    finally:
        prices.use_bundled_database()
        server.shutdown()


# --- through the CLI -----------------------------------------------------------------------

TARGET = """
from fakes import reply, scripted


def answer(inputs):
    question = inputs["question"]
    model = scripted(
        inputs.get("model", "claude-sonnet-5"),
        reply("ok", tokens=(1000, 100)),
        reply("again", tokens=(2000, 50)),
    )
    first = model.invoke(question)
    if question == "boom":
        model.invoke(question)
        raise RuntimeError("the target failed after two model calls")
    return {"final_response": first.content}
"""


def write_spend_spec(folder: Path, rows: list[dict] | None = None) -> Path:
    rows = rows or [
        {"id": "fine", "inputs": {"question": "fine"}},
        {"id": "boom", "inputs": {"question": "boom"}},
    ]
    return project(
        folder,
        TARGET,
        module="spend_target.py",
        data=rows,
        evaluators="[token_cost]",
        extra="max_error_rate: 0.5\n",
    )


def test_without_pricing_the_run_prices_every_request_from_the_database_errored_too(
    invoke, tmp_path
):
    spec = write_spend_spec(tmp_path)
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 0, result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    by_id = {r["example_id"]: r for r in experiment["results"]}
    fine, boom = by_id["fine"], by_id["boom"]
    # fine: 1,000 in + 100 out at $2 / $10; boom: that call and 2,000 + 50 before it raised
    assert fine["scores"]["cost_usd"] == pytest.approx(0.003, abs=1e-15)
    assert boom["status"] == "error"
    assert boom["scores"]["cost_usd"] == pytest.approx(0.003 + 0.0045, abs=1e-15)
    assert experiment["metrics"]["cost_usd_total"] == pytest.approx(0.0105, abs=1e-15)
    assert experiment["metrics"]["cost_usd"] == pytest.approx(0.00525, abs=1e-15)
    calls = boom["trace"]["model_calls"]
    assert [c["cost_usd"] for c in calls] == pytest.approx([0.003, 0.0045], abs=1e-15)
    assert {c["price_source"] for c in calls} == {DB} and boom["price_source"] == DB
    assert fine["comments"]["cost_usd"] == f"claude-sonnet-5: 1000+100; prices: {DB}"
    assert re.search(r"cost \(total\) +│ +\$0\.0105 \(n=2\) │", result.output)
    assert re.search(r"cost / request +│ +\$0\.00525 │", result.output)


def test_an_unknown_model_reads_na_in_the_table_and_is_named(invoke, tmp_path):
    rows = [{"id": "x", "inputs": {"question": "fine", "model": "acme-llm-9"}}]
    spec = write_spend_spec(tmp_path, rows)
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 0, result.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    (row,) = experiment["results"]
    assert row["scores"]["cost_usd"] is None
    assert "no price for model 'acme-llm-9'" in row["comments"]["cost_usd"]
    assert experiment["metrics"]["cost_usd_total"] is None
    (call,) = row["trace"]["model_calls"]
    assert call["cost_usd"] is None and "'acme-llm-9'" in call["price_note"]
    assert re.search(r"cost / request +│ +n/a │", result.output)
    assert re.search(r"cost \(total\) +│ +n/a │", result.output)
    assert "no price for model(s) acme-llm-9 in the spec or the price database" in result.text


def test_the_langsmith_upload_carries_the_token_parts():
    from agenteval_cli.langsmith.upload import usage_metadata

    usage = usage_metadata(supervisor_trace().model_calls)  # the failed call left out
    assert usage == {
        "input_tokens": 80_000,
        "output_tokens": 4_500,
        "cache_read_tokens": 70_000,
        "cache_write_tokens": None,  # gpt-5 reported no cache writes
        "reasoning_tokens": None,  # claude reported no reasoning
        "token_details": {},
        "providers": ["anthropic", "openai"],
    }


def test_by_agent_html_and_the_run_table_show_the_token_parts_where_reported():
    import io

    from rich.console import Console

    from agenteval_cli.metrics.summary import Summary
    from agenteval_cli.report import comparison
    from agenteval_cli.report.html import render_html
    from agenteval_cli.report.table import agent_table, comparison_table
    from agenteval_cli.results import sources

    trace = supervisor_trace()
    price_calls(trace.model_calls, {})  # as the run prices them: each keeps its price
    result = Result("ex-1", 0, {}, trace, [Score(k, i["score"]) for k, i in scores(trace).items()])
    side = sources.ExperimentData("s-1", "s", [sources.run_from_result({}, {}, result)])
    page = render_html(comparison.build([side]), title="t")
    section = page.split("<h2>Agents</h2>", 1)[1]
    assert "<th>cache read</th><th>cache write</th><th>reasoning</th>" in section
    billing = re.search(r'data-agent="team › billing">(.*?)</tr>', section, re.S)
    assert billing is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", billing.group(1))
    assert cells[3:9] == ["20,000", "3,000", "16,000", "n/a", "2,000", "$0.0370"]
    assert f'title="prices: {DB}"' in billing.group(1)

    console = Console(file=io.StringIO(), width=200)
    console.print(agent_table([("s", aggregate([trace.model_calls], {}))]))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert re.search(
        r"billing +│ +1 │ +1 │ +20,000 / 3,000 │ +16,000 / n/a │ +2,000 │ +\$0\.0370 ", text
    )

    summary = Summary(catalog=Catalog(keys=("cost_usd", "cache_share")))
    summary.add(result)
    console = Console(file=io.StringIO(), width=200)
    console.print(comparison_table([("s", summary)]))
    assert re.search(r"cache share of input +│ +87\.5% │", console.file.getvalue())  # type: ignore[attr-defined]
    plain = Summary(catalog=Catalog(keys=("cost_usd", "cache_share")))
    plain.add(Result("ex-1", 0, {}, Trace(), [Score("cost_usd", 0.1), Score("cache_share", None)]))
    console = Console(file=io.StringIO(), width=200)
    console.print(comparison_table([("s", plain)]))
    assert "cache share" not in console.file.getvalue()  # type: ignore[attr-defined]


def test_the_gate_holds_the_run_spend(invoke, tmp_path):
    spec = write_spend_spec(tmp_path)
    spec.write_text(spec.read_text() + 'thresholds: {cost_usd_total: "<= 0.01"}\n')
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 1, result.output
    assert "cost (total) = $0.0105, threshold <= 0.01 (off by +$0.0005)" in result.text
