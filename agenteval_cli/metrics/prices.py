"""What one model call cost, in USD: the spec's ``pricing:`` entry for its model first, else
the genai-prices database bundled with the package (offline; ``--update-prices`` fetches its
newest data, and only then is the network used).

The one place a call is priced, once, by the run that made it (:func:`price_calls`): the
price is kept with the call (its dollars, source and rates), and the per-request cost, the
per-agent rows, ``--json`` and the pricing gaps read that stored price
(:func:`stored_price`), so a call costs the same wherever and whenever it is shown; only
``agenteval rescore --reprice`` prices it again, into a new experiment. A call is
priced by its parts as the model reported them (LangChain's ``UsageMetadata`` convention:
input includes cache reads and writes, output includes reasoning), each at its own rate, as
``genai_prices.calc_price`` prices them (a spec entry is a genai-prices ``ModelPrice`` too).
A part a spec entry gives no rate for is priced at the rate of the part that holds it
(cache reads at the input rate...), and the result says so.

genai_prices is imported by the first call priced: ``agenteval --help`` and the commands
that show no dollars never load it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from agenteval_cli.core.records import CallPrice, ModelCall, Result

SPEC = "spec"  # the source of a price from the spec's pricing: table (USD per 1M tokens)

# LangChain's ``ls_provider`` where genai-prices names the provider otherwise (the others,
# "openai", "anthropic", "groq", "mistral"..., are matched by genai-prices itself).
PROVIDER_IDS = {
    "google_genai": "google",
    "google_vertexai": "google",
    "google_anthropic_vertex": "google",
    "amazon_bedrock": "aws",
    "bedrock": "aws",
    "bedrock_converse": "aws",
    "azure": "azure",
    "azure_openai": "azure",
    "xai": "x-ai",
    "together": "together",
    "mistralai": "mistral",
}
# Servers that run a model on the user's own machine: a cloud price for the model's name
# would be a bill nobody sends, so only a spec entry prices them.
LOCAL_PROVIDERS = frozenset({"ollama", "llamacpp", "llama_cpp", "vllm", "lmstudio"})


def price_call(call: ModelCall, pricing: Mapping[str, Any] | None) -> CallPrice:
    """The price of ``call``; a failed call answered nothing and costs nothing."""
    if call.failed:
        return CallPrice(Decimal(0))
    entry = (pricing or {}).get(call.model)
    unknown = _unknown_usage(call)
    if unknown is not None:  # no usage, or a part of it impossible: unknown
        if entry is None and _database_model(call.model, call.provider) is None:
            unknown = f"{_unpriced_reason(call.model, call.provider)}; {unknown}"
        return CallPrice(None, reason=unknown)
    try:
        usage = _usage(call)
        if entry is not None:
            price = _spec_price(call.model, entry, usage)
        else:
            price = _database_price(call, usage)
    except ValueError as exc:  # parts that do not add up (cache reads above the input...)
        return CallPrice(None, reason=f"the usage model {call.model!r} reported: {exc}")
    if price.usd is not None and usd_score(price.usd) is None:
        reason = overflow_reason(price.usd, call.model)
        return CallPrice(None, price.source, reason, matched=price.matched, rates=price.rates)
    return price


def _unknown_usage(call: ModelCall) -> str | None:
    """Why the call's usage is unknown, naming the model; None when it is known."""
    if call.no_usage_reason is not None:
        return f"model {call.model!r}: {call.no_usage_reason}"
    if call.input_tokens is None or call.output_tokens is None:
        return f"model {call.model!r} reported no token usage"
    return None


def result_calls(result: Result) -> Iterator[ModelCall]:
    """Every model call a result keeps: its trace's, each turn's and the simulated user's
    that wrote the turns."""
    yield from result.trace.model_calls
    for turn in result.turns or ():
        yield from turn.trace.model_calls
        yield from turn.user_calls


def price_calls(calls: Iterable[ModelCall], pricing: Mapping[str, Any] | None) -> None:
    """Give each call its price now (the spec's ``pricing``, else the price data in use),
    kept with the call: what the run stores, and every later view reads."""
    for call in calls:
        call.price = price_call(call, pricing)


def price_of(call: ModelCall, pricing: Mapping[str, Any] | None) -> CallPrice:
    """The price the call was given, else its price now (an evaluator scoring a trace
    nothing priced: a user's script, a rebuilt trace)."""
    return call.price if call.price is not None else price_call(call, pricing)


# Why a call stored without a price (a store written before prices were kept with each
# call) has no cost of its own: the price data its run used is not known.
NOT_STORED = (
    "stored before prices were kept with each call, so the price its run used is not "
    "known; 'agenteval rescore SPEC EXPERIMENT' prices it and keeps the price"
)


def stored_price(call: ModelCall, pricing: Mapping[str, Any] | None) -> CallPrice:
    """The price a stored call was given by its run; never the price data of the process
    reading it. A call stored without one (an older store) is priced only where nothing
    but the run's own figures decide it: a failed call (0), unknown usage (unknown), a
    model the run's spec priced (its ``pricing``, kept with the experiment); otherwise its
    cost is unknown, and :data:`NOT_STORED` says why."""
    if call.price is not None:
        return call.price
    if call.failed:
        return CallPrice(Decimal(0))
    unknown = _unknown_usage(call)
    if unknown is not None:
        return CallPrice(None, reason=unknown)
    if (pricing or {}).get(call.model) is not None:
        return price_call(call, pricing)  # the spec's entry: no price database read
    return CallPrice(None, reason=f"model {call.model!r}: {NOT_STORED}")


UNPRICED, UNSTORED = "unpriced", "unstored"
NO_PRICE = "no price for model"  # how the reason of a model neither prices begins


def price_gap(call: Mapping[str, Any]) -> str | None:
    """Why a stored call (as its trace's JSON keeps it) has no cost for want of a price:
    :data:`UNPRICED` (its run found none for the model, whatever its usage), :data:`UNSTORED`
    (its usage is known, but it was stored before prices were kept); None otherwise."""
    if call.get("failed"):
        return None
    price = call.get("price")
    if price is None:
        known = not call.get("no_usage_reason")
        known = known and call.get("input_tokens") is not None
        return UNSTORED if known and call.get("output_tokens") is not None else None
    unpriced = price.get("usd") is None and str(price.get("reason")).startswith(NO_PRICE)
    return UNPRICED if unpriced else None


def call_gap(call: ModelCall) -> str | None:
    """:func:`price_gap` of a call read back."""
    price = None if call.price is None else {"usd": call.price.usd, "reason": call.price.reason}
    return price_gap(
        {
            "failed": call.failed,
            "no_usage_reason": call.no_usage_reason,
            "input_tokens": call.input_tokens,
            "output_tokens": call.output_tokens,
            "price": price,
        }
    )


def usd_score(usd: Decimal) -> float | None:
    """An exact cost as the float a score holds; None when it is past the largest float
    (a score of inf would read as an evaluator's fault)."""
    value = float(usd)
    return value if math.isfinite(value) else None


def overflow_reason(usd: Decimal, model: str | None = None) -> str:
    """Why a cost :func:`usd_score` cannot hold is n/a, and what to check."""
    whose = f" of model {model!r}" if model is not None else ""
    return (
        f"a cost{whose} of {usd:.3E} USD overflows the largest number a score holds "
        f"(check the tokens the model reported and its price under 'pricing:')"
    )


def database_source() -> str:
    """``genai-prices 0.2.3``, and when its data was fetched if ``--update-prices`` did."""
    import genai_prices
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    source = f"genai-prices {genai_prices.__version__}"
    if snapshot.from_auto_update:
        source += f", data fetched {snapshot.timestamp:%Y-%m-%d %H:%M}"
    return source


def update_database(url: str | None = None, timeout_s: float = 30.0) -> str:
    """Fetch genai-prices' newest data with its own updater's fetch (the only network use)
    and price with it for the rest of this process. Returns the source now in use; raises
    OSError with the cause when the fetch failed (the bundled data stays in use)."""
    import httpx2
    from genai_prices import UpdatePrices, data_snapshot
    from genai_prices.update_prices import DEFAULT_UPDATE_URL

    timeout = httpx2.Timeout(timeout=timeout_s, connect=min(timeout_s, 10.0))
    updater = UpdatePrices(url=url or DEFAULT_UPDATE_URL, request_timeout=timeout)
    try:
        snapshot = updater.fetch()
    except Exception as exc:  # httpx2's errors, a payload that is not price data
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise OSError(f"{updater.url}: {type(exc).__name__}: {first}") from None
    data_snapshot.set_custom_snapshot(snapshot)
    _database_model.cache_clear()
    return database_source()


def use_bundled_database() -> None:
    """Back to the data bundled with genai-prices (after :func:`update_database`)."""
    from genai_prices import data_snapshot

    data_snapshot.set_custom_snapshot(None)
    _database_model.cache_clear()


def rates(entry: Any) -> dict[str, float]:
    """A spec entry's rates by key (``input``, ``cache_read``...), USD per 1M tokens: a
    :class:`~agenteval_cli.spec.model.Price` or the mapping a stored spec keeps."""
    items = entry.items() if isinstance(entry, Mapping) else entry.model_dump().items()
    return {str(key): float(value) for key, value in items if value is not None}


def total(prices: list[CallPrice]) -> Decimal | None:
    """The exact sum; unknown as soon as one part is."""
    if any(p.usd is None for p in prices):
        return None
    return sum((p.usd for p in prices if p.usd is not None), Decimal(0))


def sources(prices: list[CallPrice]) -> str:
    """Where the prices came from, each source once: ``spec`` / ``genai-prices 0.2.3``."""
    return " + ".join(dict.fromkeys(p.source for p in prices if p.source)) or "no model call"


def _spec_price(model: str, entry: Any, usage: dict[str, int]) -> CallPrice:
    given = rates(entry)
    plan = _plan(_spec_model_price(tuple(sorted(given.items()))))
    notes = _borrowed_rates(model, given, usage)
    return CallPrice(plan.price(usage), SPEC, notes=notes, rates=plan.rates)


def _database_price(call: ModelCall, usage: dict[str, int]) -> CallPrice:
    found = _database_model(call.model, call.provider)
    if found is None:
        return CallPrice(None, reason=_unpriced_reason(call.model, call.provider))
    provider_id, info = found
    plan = _plan(info.get_prices(datetime.now(tz=UTC)))
    source, matched = database_source(), f"{provider_id}/{info.id}"
    return CallPrice(plan.price(usage), source, matched=matched, rates=plan.rates)


@cache
def _spec_model_price(given: tuple[tuple[str, float], ...]) -> Any:
    """A spec entry as genai-prices' ``ModelPrice`` (its rate ``x`` is ``x_mtok``)."""
    from genai_prices.types import ModelPrice

    return ModelPrice(**{f"{key}_mtok": Decimal(repr(value)) for key, value in given})


@dataclass(frozen=True)
class _Plan:
    """How one ``ModelPrice`` prices a usage, worked out once: its priced units, most
    specific first, each with the priced units it holds. A call's price is then
    genai-prices' own sum (``ModelPrice.calc_price``: each unit's count less what its
    priced sub-units took, at its rate, tiers by the input tokens), without re-deriving
    the units for every call: that takes about half a millisecond a call."""

    units: tuple[tuple[str, Any, int, tuple[str, ...]], ...]  # key, price, per, held keys
    tiered: bool
    # the rates as a call's stored price keeps them, by genai-prices' names (input_mtok...)
    rates: Mapping[str, Any]

    def price(self, usage: Mapping[str, int]) -> Decimal:
        from genai_prices.types import calc_unit_price

        leaves: dict[str, int] = {}
        total = Decimal(0)
        input_tokens = usage.get("input_tokens", 0) if self.tiered else 0
        for key, price, per, held in self.units:
            count = 1 if key == "requests" else usage.get(key, 0) - sum(leaves[h] for h in held)
            if count < 0:
                raise ValueError(f"the parts of {key} add up to more than {usage.get(key, 0)}")
            leaves[key] = count
            total += calc_unit_price(price, count, input_tokens, per)
        return total


_PLANS: dict[int, tuple[Any, _Plan]] = {}  # id(ModelPrice) -> (the object, its plan)


def _plan(model_price: Any) -> _Plan:
    known = _PLANS.get(id(model_price))
    if known is not None and known[0] is model_price:
        return known[1]
    from genai_prices.data_units import unit_data
    from genai_prices.types import TieredPrices

    priced = [
        (key, price, int(raw["per"]), raw["dimensions"])
        for key, raw in unit_data.items()
        if (price := getattr(model_price, raw["price_key"], None)) is not None
    ]
    priced.sort(key=lambda unit: (-len(unit[3]), unit[0]))  # most specific first
    units = tuple(
        (
            key,
            price,
            per,
            tuple(
                other
                for other, _, _, inner in priced
                if other != key and dims.items() <= inner.items()
            ),
        )
        for key, price, per, dims in priced
    )
    shown = {unit_data[key]["price_key"]: _rate_json(price) for key, price, _, _ in units}
    plan = _Plan(units, any(isinstance(unit[1], TieredPrices) for unit in units), shown)
    _PLANS[id(model_price)] = (model_price, plan)
    return plan


def _rate_json(price: Any) -> Any:
    """A genai-prices rate as stored: a decimal string (exact), or a tiered rate's base and
    tiers (``{"base": "3", "tiers": [{"start": 200000, "price": "6"}]}``)."""
    tiers = getattr(price, "tiers", None)
    if tiers is None:
        return str(price)
    shown = [{"start": tier.start, "price": str(tier.price)} for tier in tiers]
    return {"base": str(price.base), "tiers": shown}


@cache
def _database_model(model: str, provider: str | None) -> tuple[str, Any] | None:
    """The database's provider id and model for a call: with the call's provider first,
    then by the model's name alone (a gateway's base URL names no provider: a ChatOpenAI
    pointed at one says ``openai`` for any model it serves)."""
    from genai_prices import data_snapshot

    if provider is not None and provider.lower() in LOCAL_PROVIDERS:
        return None
    snapshot = data_snapshot.get_snapshot()
    provider_id = None if provider is None else PROVIDER_IDS.get(provider.lower(), provider)
    for by_provider in ([provider_id] if provider_id else []) + [None]:
        try:
            found, info = snapshot.find_provider_model(model, None, by_provider, None)
        except LookupError:
            continue
        return found.id, info
    return None


def _unpriced_reason(model: str, provider: str | None) -> str:
    where = f"the spec's pricing: or in {database_source()}"
    if provider is not None and provider.lower() in LOCAL_PROVIDERS:
        return (
            f"{NO_PRICE} {model!r}: served locally by {provider}, which the price "
            f"database does not bill; add it under 'pricing:' (0 if it is free)"
        )
    return f"{NO_PRICE} {model!r} in {where}; add it under 'pricing:'"


def _usage(call: ModelCall) -> dict[str, int]:
    """The call's parts by genai-prices' usage names (unknown parts left out)."""
    from genai_prices.data_units import unit_data

    details = {k: v for k, v in call.token_details.items() if k in unit_data and v is not None}
    cache_write = call.cache_write_tokens
    if cache_write is None:  # only its parts reported: their sum is the whole
        parts = [details.get(k) for k in ("cache_write_5m_tokens", "cache_write_1h_tokens")]
        if any(p is not None for p in parts):
            cache_write = sum(p or 0 for p in parts)
    values: dict[str, int | None] = {
        **details,
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "cache_read_tokens": call.cache_read_tokens,
        "cache_write_tokens": cache_write,
        "output_reasoning_tokens": call.reasoning_tokens,
    }
    return {k: int(v) for k, v in values.items() if v is not None}


def _borrowed_rates(
    model: str, given: Mapping[str, float], usage: Mapping[str, int]
) -> tuple[str, ...]:
    """Parts the call reported that the spec entry gives no rate for, each priced at the
    rate of the nearest part that holds it."""
    if not any(v for k, v in usage.items() if k not in ("input_tokens", "output_tokens")):
        return ()  # no part beyond input and output: nothing priced at another's rate
    from genai_prices.data_units import unit_data

    priced = {key.removesuffix("_tokens"): unit_data[key]["dimensions"] for key in unit_data}
    notes = []
    for key, raw in unit_data.items():
        part = key.removesuffix("_tokens")
        # reasoning at the output rate is how providers bill it; the write rate is the
        # 5-minute one (genai-prices prices those writes at cache_write)
        if part in given or part in ("input", "output", "output_reasoning", "cache_write_5m"):
            continue
        if not key.endswith("_tokens") or not usage.get(key):
            continue
        dims = raw["dimensions"].items()
        holders = [p for p in given if p in priced and priced[p].items() < dims]
        if holders:
            holder = max(holders, key=lambda p: len(priced[p]))
            notes.append(f"{part} tokens of {model!r} priced at its {holder} rate")
    return tuple(notes)
