"""Per-agent attribution: model calls, tokens, cost and model time by agent path.

Every model call carries its agent's path, outer to inner (``["money_team", "account"]``).
A row is one path: leaf agents, and the teams above them as the sum of their members (a
team that also made calls of its own includes those). Over a target's results (every call
made: errored and interrupted requests too) a row counts the results in which it made a
model call, its calls, tokens, USD and model time. Tokens are unknown (``None``) as soon
as one call reported no usage: never counted as zero; so are cache reads, cache writes and
reasoning tokens once one call did not report them. A call's cost is the price its run
kept with it (:func:`agenteval_cli.metrics.prices.stored_price`), the one the
``token_cost`` evaluator summed, never the price data of the process showing it; unknown
tokens, an unpriced model or a call stored without a price leave the cost of that call,
and of every row holding it, unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.records import ModelCall, Trace
from agenteval_cli.metrics.prices import (
    NOT_STORED,
    UNPRICED,
    UNSTORED,
    CallPrice,
    call_gap,
    stored_price,
    total,
    usd_score,
)

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store

SEPARATOR = " > "  # a row's key, as Trace.by_agent() spells a path
TREE_MARK = " › "  # a path as the reports show it


@dataclass
class AgentRow:
    """One agent path's figures over the results aggregated; ``path == ()`` is the total."""

    path: tuple[str, ...]
    leaf: bool = False
    results: int = 0
    model_calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    latency_s: float = 0.0
    models: list[str] = field(default_factory=list)
    calls_without_usage: int = 0
    # parts of the input and output tokens, None once a call did not report them
    cache_read_tokens: int | None = 0
    cache_write_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    price_sources: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return SEPARATOR.join(self.path)

    @property
    def depth(self) -> int:
        return max(len(self.path) - 1, 0)

    @property
    def total_tokens(self) -> int | None:
        return _add(self.input_tokens, self.output_tokens)

    @property
    def latency_mean_s(self) -> float | None:
        """Model time per result in which the agent ran."""
        return self.latency_s / self.results if self.results else None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": list(self.path),
            "depth": self.depth,
            "leaf": self.leaf,
            "results": self.results,
            "model_calls": self.model_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "latency_mean_s": self.latency_mean_s,
            "models": list(self.models),
            "calls_without_usage": self.calls_without_usage,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "price_source": " + ".join(self.price_sources) or None,
        }

    def add_parts(self, call: ModelCall, source: str | None) -> None:
        """Count ``call``'s cache and reasoning tokens and where its price came from."""
        self.cache_read_tokens = _add(self.cache_read_tokens, call.cache_read_tokens)
        self.cache_write_tokens = _add(self.cache_write_tokens, call.cache_write_tokens)
        self.reasoning_tokens = _add(self.reasoning_tokens, call.reasoning_tokens)
        if source and source not in self.price_sources:
            self.price_sources.append(source)


@dataclass
class AgentUsage:
    """A target's rows in tree order (each team before its members), and the total."""

    results: int
    rows: list[AgentRow]
    total: AgentRow
    unpriced: list[str] = field(default_factory=list)  # models that made calls, no price
    # models of calls stored without a price (an older store): their cost unknown
    unstored: list[str] = field(default_factory=list)

    def get(self, key: str) -> AgentRow | None:
        return next((row for row in self.rows if row.key == key), None)

    def to_json(self) -> dict[str, dict[str, Any]]:
        """``{"team > agent": {...}}`` in tree order."""
        return {row.key: row.to_json() for row in self.rows}


def aggregate(
    calls_per_result: Iterable[Sequence[ModelCall]], pricing: Mapping[str, Any] | None = None
) -> AgentUsage:
    """The rows of one target over its results, each given as its model calls, each at
    the price its run kept with it (``pricing``: the run's spec's, for a call stored
    without one)."""
    pricing = pricing or {}
    rows: dict[str, AgentRow] = {}
    total = AgentRow(path=())
    costs: dict[str, list[CallPrice]] = {}
    results = 0
    unpriced: dict[str, None] = {}
    unstored: dict[str, None] = {}
    for calls in calls_per_result:
        results += 1
        calls = [c for c in calls if not c.failed]  # a call that raised answered nothing
        if calls:
            total.results += 1
        for key, usage in Trace(model_calls=calls).by_agent().items():
            row = rows.setdefault(key, AgentRow(path=tuple(usage["path"])))
            row.leaf = row.leaf or usage["leaf"]
            row.results += 1
            row.model_calls += usage["model_calls"]
            row.input_tokens = _add(row.input_tokens, usage["input_tokens"])
            row.output_tokens = _add(row.output_tokens, usage["output_tokens"])
            row.latency_s += usage["latency_s"]
            row.models.extend(m for m in usage["models"] if m not in row.models)
        for call in calls:
            cost = stored_price(call, pricing)
            unknown = call.input_tokens is None or call.output_tokens is None
            gap = call_gap(call)
            if gap == UNPRICED and not unknown:  # else its unknown tokens are the cause
                unpriced.setdefault(call.model, None)
            elif gap == UNSTORED and cost.usd is None:
                unstored.setdefault(call.model, None)
            for depth in range(1, len(call.path) + 1):
                key = SEPARATOR.join(call.path[:depth])
                costs.setdefault(key, []).append(cost)
                rows[key].calls_without_usage += unknown
                rows[key].add_parts(call, cost.source)
            costs.setdefault("", []).append(cost)
            total.add_parts(call, cost.source)
            total.model_calls += 1
            total.calls_without_usage += unknown
            total.input_tokens = _add(total.input_tokens, call.input_tokens)
            total.output_tokens = _add(total.output_tokens, call.output_tokens)
            total.latency_s += call.latency_s
            if call.model not in total.models:
                total.models.append(call.model)
    for key, row in rows.items():
        row.cost_usd = _usd(costs.get(key, []))
    total.cost_usd = _usd(costs.get("", []))
    order = tree_order(rows.values())
    return AgentUsage(results, order, total, list(unpriced), list(unstored))


def aggregate_results(results: Iterable[Any], pricing: Mapping[str, Any] | None) -> AgentUsage:
    """Over :class:`~agenteval_cli.core.records.Result` objects: every call made, those of
    results that errored or stopped at an interrupt included."""
    return aggregate((r.trace.model_calls for r in results), pricing)


def stored_usage(store: Store, experiment_id: str) -> AgentUsage:
    """A stored experiment's rows, at the prices its run kept with its calls."""
    record = store.experiment(experiment_id)
    results = (stored.result for stored in store.results(experiment_id))
    return aggregate_results(results, record.spec.get("pricing"))


def agent_notes(columns: Sequence[tuple[str, AgentUsage | None]]) -> list[str]:
    """What an n/a in a per-agent table means, per target."""
    notes = []
    for name, usage in columns:
        if usage is None:
            notes.append(f"{name}: no model calls recorded in this source: agents unknown")
            continue
        if usage.total.calls_without_usage:
            notes.append(
                f"{name}: {usage.total.calls_without_usage} model call(s) reported no token "
                "usage: their tokens and cost are n/a"
            )
        if usage.unpriced:
            notes.append(
                f"{name}: no price for model(s) {', '.join(usage.unpriced)}: their cost is n/a"
            )
        if usage.unstored:
            notes.append(f"{name}: cost n/a for model(s) {', '.join(usage.unstored)}: {NOT_STORED}")
    return notes


def tree_order(rows: Iterable[AgentRow]) -> list[AgentRow]:
    """Each team directly before its members, siblings in first-seen order."""
    rows = list(rows)
    seen: dict[tuple[str, ...], int] = {}
    for row in rows:
        for depth in range(1, len(row.path) + 1):
            seen.setdefault(row.path[:depth], len(seen))

    def position(row: AgentRow) -> tuple[int, ...]:
        return tuple(seen[row.path[:depth]] for depth in range(1, len(row.path) + 1))

    return sorted(rows, key=position)


def merged_paths(usages: Sequence[AgentUsage | None]) -> list[tuple[str, ...]]:
    """Every side's agent paths in one tree order (the first side's first)."""
    rows = {row.path: row for usage in usages if usage is not None for row in usage.rows}
    return [row.path for row in tree_order(rows.values())]


def shown_name(path: Sequence[str]) -> str:
    """A path's last agent, indented two spaces per level of depth: the tree, flattened."""
    return "  " * max(len(path) - 1, 0) + (path[-1] if path else "")


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def _usd(prices: list[CallPrice]) -> float | None:
    """The exact sum of the calls' prices, as a float; None once one is unknown, or past
    the largest float."""
    usd = total(prices)
    return None if usd is None else usd_score(usd)
