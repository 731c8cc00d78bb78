"""Each model call keeps the price its run gave it; every later view reads that price.

A one-call target (``gpt-4o-mini``, 1,000 input and 200 output tokens a request, no
``pricing:`` in the spec) runs over two rows with the price data bundled with genai-prices
0.2.3: $0.15 in / $0.60 out per 1M tokens (``genai_prices/data.py``, OpenAI's entry), so by
hand a request costs 1000 x 0.15 / 1M + 200 x 0.6 / 1M = $0.00027 and the run $0.00054.

Then the process's price data change (the database lookup patched: $1 in / $2 out, which
would make a request $0.0014). compare, report (HTML and Markdown), the run table's
warning, ``--json`` and the per-agent tables of the stored experiment still say $0.00027 a
request and $0.00054 for the two; a rescore keeps them; only a rescore asked to re-price
changes them: ``--prices FILE`` at $3 in / $7 out makes a request 0.003 + 0.0014 =
$0.0044, ``--reprice`` with the changed data $0.0014.

A store written before prices were kept (the calls' ``price`` removed from its rows) reads
its per-call and per-agent cost as n/a, with why and what prices it; the per-request cost
its run stored stays; ``rescore`` prices those calls and keeps the prices.
"""

from __future__ import annotations

import json
import re
import sqlite3
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from projects import project, rows

from agenteval_cli.core.records import ModelCall
from agenteval_cli.metrics import prices
from agenteval_cli.report.comparison import agent_usage
from agenteval_cli.report.json_report import experiment_json
from agenteval_cli.report.table import unpriced_models, unstored_models
from agenteval_cli.results.figures import from_store
from agenteval_cli.results.sources import from_json_file
from agenteval_cli.store.db import Store

TARGET = """\
from fakes import reply, scripted


def answer(inputs):
    model = scripted("MODEL", reply("about " + inputs["question"], tokens=(1000, 200)))
    return {"final_response": model.invoke(inputs["question"]).content}
"""
RUN = 0.00027  # a request at the bundled data's rates, by hand
CHANGED = 0.0014  # at $1 in / $2 out: 1000 x 1 / 1M + 200 x 2 / 1M
FILE = 0.0044  # at $3 in / $7 out: 1000 x 3 / 1M + 200 x 7 / 1M


def run(folder: Path, invoke: Any, model: str = "gpt-4o-mini") -> Any:
    """The project in ``folder``, its target calling ``model``, run once: its store is
    ``folder/db``."""
    code = TARGET.replace("MODEL", model)
    spec = project(folder, code, targets={"solo": "answer"}, data=rows(2))
    spec.write_text(spec.read_text() + "evaluators: [token_cost]\nexperiment_prefix: p\n")
    result = invoke("run", spec, "--store", folder / "db", "--by-agent")
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def ran(tmp_path: Path, invoke: Any) -> Path:
    """The project, run once with the bundled price data."""
    run(tmp_path, invoke)
    return tmp_path


@pytest.fixture
def changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's price data changed: gpt-4o-mini at $1 in / $2 out, from another
    version of the data."""
    from genai_prices.types import ModelPrice

    changed = ModelPrice(input_mtok=Decimal(1), output_mtok=Decimal(2))
    info = SimpleNamespace(id="gpt-4o-mini", get_prices=lambda _when: changed)
    monkeypatch.setattr(prices, "_database_model", lambda model, provider: ("openai", info))
    monkeypatch.setattr(prices, "database_source", lambda: "genai-prices 9.9.9")


def only_experiment(db: Path) -> dict[str, Any]:
    with Store(db) as store:
        [record] = store.experiments()
        return experiment_json(store, record.id)


def call_costs(exported: dict[str, Any]) -> list[tuple[float | None, str | None]]:
    return [
        (call["cost_usd"], call["price_source"])
        for result in exported["results"]
        for call in result["trace"]["model_calls"]
    ]


def test_the_run_keeps_each_calls_price_with_its_rates_and_source(ran: Path) -> None:
    exported = only_experiment(ran / "db")
    assert call_costs(exported) == [(RUN, "genai-prices 0.2.3")] * 2
    price = exported["results"][0]["trace"]["model_calls"][0]["price"]
    assert price["usd"] == "0.00027"  # exact, as a decimal string
    assert (price["rates"]["input_mtok"], price["rates"]["output_mtok"]) == ("0.15", "0.6")
    assert (price["source"], price["matched"]) == ("genai-prices 0.2.3", "openai/gpt-4o-mini")
    assert exported["metrics"]["cost_usd"] == pytest.approx(RUN, abs=1e-15)
    assert exported["agents"]["gpt-4o-mini"]["cost_usd"] == pytest.approx(2 * RUN, abs=1e-15)


def test_every_view_of_a_stored_run_shows_its_dollars_after_the_price_data_change(
    ran: Path, changed: None, invoke: Any
) -> None:
    db = ran / "db"
    now = prices.price_call(ModelCall("a", "gpt-4o-mini", 1000, 200), {})
    assert now.usd == Decimal("0.0014")  # this process would price the call otherwise
    exported = only_experiment(db)
    assert call_costs(exported) == [(RUN, "genai-prices 0.2.3")] * 2
    assert exported["agents"]["gpt-4o-mini"]["cost_usd"] == pytest.approx(2 * RUN, abs=1e-15)
    assert exported["agents"]["gpt-4o-mini"]["price_source"] == "genai-prices 0.2.3"

    # a rescore keeps the prices: its --json, table and per-agent figures are the run's
    kept = invoke("rescore", ran / "spec.yaml", "solo", "--store", db, "--json", "-")
    assert kept.exit_code == 0, kept.output
    document = json.loads(kept.stdout)["experiments"][0]
    assert call_costs(document) == [(RUN, "genai-prices 0.2.3")] * 2
    assert document["metrics"]["cost_usd_total"] == pytest.approx(2 * RUN, abs=1e-15)
    assert document["agents"]["gpt-4o-mini"]["cost_usd"] == pytest.approx(2 * RUN, abs=1e-15)
    with Store(db) as store:
        names = [r.name for r in reversed(store.experiments())]  # the run, the rescore

    compared = invoke("compare", *names, "--store", db, "--by-agent")
    assert compared.exit_code == 0, compared.output
    agents = [line for line in compared.output.splitlines() if "gpt-4o-mini" in line]
    assert sum(line.count("$0.00054") for line in agents) == 2  # side by side, or stacked
    assert "$0.0028" not in compared.output  # the two requests at the changed data
    as_json = json.loads(invoke("compare", *names, "--store", db, "--json").stdout)
    means = {row["metric"]: row["means"] for row in as_json["rows"]}
    assert means["cost_usd"] == [pytest.approx(RUN, abs=1e-15)] * 2
    assert means["cost_usd_total"] == [pytest.approx(2 * RUN, abs=1e-15)] * 2

    html, md = ran / "r.html", ran / "r.md"
    report = invoke("report", *names, "-o", html, "--markdown", md, "--store", db)
    assert report.exit_code == 0, report.output
    page = html.read_text()
    # the agents section (both runs) and each request's agents: the run's dollars
    costs = re.findall(r'data-agent="gpt-4o-mini">.*?<td title="prices: ([^"]*)">([^<]*)<', page)
    assert {cost for _, cost in costs} == {"$0.00054", "$0.00027"}
    assert {source for source, _ in costs} == {"genai-prices 0.2.3"}
    assert "genai-prices 9.9.9" not in page and "$0.0028" not in page
    cost = next(line for line in md.read_text().splitlines() if "cost / request" in line)
    assert cost.count("$0.00027") == 2


def test_a_refused_fresh_price_data_says_how_to_reprice(ran: Path, invoke: Any) -> None:
    result = invoke(
        "report", "solo", "-o", ran / "r.html", "--store", ran / "db", "--update-prices"
    )
    assert result.exit_code == 2
    assert "rescore SPEC EXPERIMENT --reprice --update-prices" in result.text
    compared = invoke("compare", "solo", "solo", "--store", ran / "db", "--update-prices")
    assert compared.exit_code == 2 and "never the price data of this command" in compared.text


def test_rescore_with_a_prices_file_or_reprice_writes_the_new_prices(
    ran: Path, changed: None, invoke: Any
) -> None:
    db = ran / "db"
    file = ran / "prices.yaml"
    file.write_text("gpt-4o-mini: {input: 3, output: 7}\n")
    result = invoke("rescore", ran / "spec.yaml", "solo", "--store", db, "--prices", file)
    assert result.exit_code == 0, result.output
    assert "$0.0044" in result.output and "$0.0088" in result.output  # a request, the run
    with Store(db) as store:
        rescored, first = store.experiments()  # newest first
        exported = experiment_json(store, rescored.id)
        original = experiment_json(store, first.id)
    assert call_costs(exported) == [(FILE, "spec")] * 2
    price = exported["results"][0]["trace"]["model_calls"][0]["price"]
    assert price["rates"] == {"input_mtok": "3.0", "output_mtok": "7.0"}
    assert exported["pricing"] == {"gpt-4o-mini": {"input": 3.0, "output": 7.0}}
    assert exported["agents"]["gpt-4o-mini"]["cost_usd"] == pytest.approx(2 * FILE, abs=1e-15)

    again = invoke("rescore", ran / "spec.yaml", "solo", "--store", db, "--reprice", "--json", "-")
    assert again.exit_code == 0, again.output
    document = json.loads(again.stdout)["experiments"][0]
    assert call_costs(document) == [(CHANGED, "genai-prices 9.9.9")] * 2
    assert document["metrics"]["cost_usd"] == pytest.approx(CHANGED, abs=1e-15)
    assert call_costs(original) == [(RUN, "genai-prices 0.2.3")] * 2  # the run's, kept


def test_the_no_price_warning_is_the_runs_until_a_rescore_prices_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, invoke: Any
) -> None:
    warning = "no price for model(s) acme-llm-9"
    assert warning in run(tmp_path, invoke, "acme-llm-9").text
    from genai_prices.types import ModelPrice

    info = SimpleNamespace(
        id="acme-llm-9", get_prices=lambda _when: ModelPrice(input_mtok=Decimal(1))
    )
    monkeypatch.setattr(prices, "_database_model", lambda model, provider: ("acme", info))
    kept = invoke("rescore", tmp_path / "spec.yaml", "solo", "--store", tmp_path / "db")
    assert kept.exit_code == 0, kept.output
    assert warning in kept.text  # the run found no price: its figures say so still
    cost = next(line for line in kept.output.splitlines() if "cost / request" in line)
    assert "n/a" in cost
    again = invoke(
        "rescore", tmp_path / "spec.yaml", "solo", "--store", tmp_path / "db", "--reprice"
    )
    assert warning not in again.text
    cost = next(line for line in again.output.splitlines() if "cost / request" in line)
    assert cost.split("│")[2].strip() == "$0.001"  # 1000 input tokens at $1 per 1M, no output rate


def test_a_json_file_written_before_calls_kept_their_price_reads_the_cost_it_gives(
    ran: Path,
) -> None:
    exported = only_experiment(ran / "db")
    for result in exported["results"]:
        for call in result["trace"]["model_calls"]:
            del call["price"]  # as an export of an earlier version wrote it
            call["cost_usd"], call["price_source"] = 0.00031, "genai-prices 0.1.0"
    path = ran / "old.json"
    path.write_text(json.dumps({"experiments": [exported]}))
    [side] = from_json_file(path)
    [usage] = agent_usage([side])
    assert usage is not None
    assert usage.total.cost_usd == pytest.approx(2 * 0.00031, abs=1e-15)
    assert usage.total.price_sources == ["genai-prices 0.1.0"]


def strip_prices(db: Path) -> None:
    """The store as one written before prices were kept with each call."""
    with sqlite3.connect(db) as conn:
        for row, text in conn.execute("SELECT id, trace_json FROM results").fetchall():
            trace = json.loads(text)
            for call in trace.get("model_calls") or []:
                del call["price"]
            conn.execute("UPDATE results SET trace_json = ? WHERE id = ?", (json.dumps(trace), row))


def test_an_older_store_reads_its_call_costs_as_na_and_rescore_prices_them(
    ran: Path, invoke: Any
) -> None:
    db = ran / "db"
    strip_prices(db)
    exported = only_experiment(db)
    assert [cost for cost, _ in call_costs(exported)] == [None, None]
    note = exported["results"][0]["trace"]["model_calls"][0]["price_note"]
    assert "stored before prices were kept with each call" in note
    assert exported["agents"]["gpt-4o-mini"]["cost_usd"] is None
    assert exported["metrics"]["cost_usd"] == pytest.approx(RUN, abs=1e-15)  # the run's own

    with Store(db) as store:  # the run table's note: the summary says which models
        summary = from_store(store, store.experiments()[0])
    assert unstored_models(summary, {}) == ["gpt-4o-mini"] and unpriced_models(summary) == []
    assert unstored_models(summary, {"gpt-4o-mini": {"input": 1, "output": 1}}) == []

    rescored = invoke("rescore", ran / "spec.yaml", "solo", "--store", db, "--json", "-")
    assert rescored.exit_code == 0, rescored.output
    assert "2 model call(s) were stored without their price" in rescored.text
    document = json.loads(rescored.stdout)["experiments"][0]
    assert call_costs(document) == [(RUN, "genai-prices 0.2.3")] * 2

    with Store(db) as store:
        names = [r.name for r in reversed(store.experiments())]  # the old run, the rescore
    compared = invoke("compare", *names, "--store", db, "--by-agent")
    assert compared.exit_code == 0, compared.output
    assert "cost n/a for model(s) gpt-4o-mini: stored before prices were kept" in compared.text
    assert "no price for model" not in compared.text  # it had one: unknown, not missing
    agents = [line for line in compared.output.splitlines() if line.startswith("│ gpt-4o-mini")]
    assert sum(line.count("$0.00054") for line in agents) == 1  # the rescore's; the old n/a
    assert sum(line.count("n/a") for line in agents) == 1


def test_an_older_store_with_a_spec_price_reads_the_specs_rates() -> None:
    call = ModelCall("a", "m", 1000, 200)  # read back without a price
    spec = prices.stored_price(call, {"m": {"input": 2, "output": 10}})
    assert (spec.usd, spec.source) == (Decimal("0.004"), "spec")  # the run's own table
    unknown = prices.stored_price(call, {})
    assert unknown.usd is None and prices.NOT_STORED in (unknown.reason or "")
