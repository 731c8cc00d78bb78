"""The Rich comparison table: one column per target, the best value of each row marked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from agenteval_cli.metrics import Summary


@dataclass(frozen=True)
class Row:
    label: str
    key: str
    fmt: Callable[[float], str]
    higher_is_better: bool


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _usd(value: float) -> str:
    return f"${value:.6f}" if value < 0.01 else f"${value:.4f}"


def _secs(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


ROWS = (
    Row("routing accuracy", "routing_accuracy", _pct, True),
    Row("resolution coverage", "resolution_coverage", _pct, True),
    Row("tokens / request", "total_tokens", _count, False),
    Row("  input / output", "io_tokens", _count, False),  # rendered specially
    Row("cost / request", "cost_usd", _usd, False),
    Row("handoff chain length", "handoff_chain_length", _num, False),
    Row("ping-pong rate", "ping_pong", _pct, False),
    Row("error rate", "error_rate", _pct, False),
    Row("latency p50", "latency_p50_s", _secs, False),
    Row("latency p95", "latency_p95_s", _secs, False),
)
SHOWN = {row.key for row in ROWS} | {"input_tokens", "output_tokens"}


def comparison_table(columns: Sequence[tuple[str, Summary]], *, title: str | None = None) -> Table:
    """Targets side by side. A row's best value is bold green with a ★ when targets differ."""
    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column("metric", style="cyan", no_wrap=True)
    for name, _ in columns:
        table.add_column(name, justify="right")
    metrics = [summary.metrics() for _, summary in columns]
    for row in ROWS:
        if row.key == "io_tokens":
            table.add_row(row.label, *(_io(m) for m in metrics), style="dim")
            continue
        if all(m.get(row.key) is None for m in metrics) and row.key in ("cost_usd",):
            table.add_row(row.label, *("n/a" for _ in metrics))
            continue
        counts = [_sampled(s, row.key) for _, s in columns]
        table.add_row(row.label, *_cells(row, [m.get(row.key) for m in metrics], counts))
    extra = sorted({k for m in metrics for k in m if k not in SHOWN and k not in JUDGE_KEYS})
    for key in extra:
        counts = [_sampled(s, key) for _, s in columns]
        table.add_row(
            key, *_cells(Row(key, key, _num, True), [m.get(key) for m in metrics], counts)
        )
    _judge_rows(table, [s for _, s in columns])
    table.add_row("examples run", *(f"{s.count}" for _, s in columns), style="dim")
    return table


# A judge's own spend, kept apart from the target's tokens and cost.
JUDGE_KEYS = frozenset(
    {"judge_input_tokens", "judge_output_tokens", "judge_cost_usd", "judge_cost_usd_total"}
)


def _judge_rows(table: Table, summaries: Sequence[Summary]) -> None:
    """Judge cost and tokens over the whole run, when any judge ran."""
    if not any(s.counts.get("judge_input_tokens") for s in summaries):
        return
    cost = [
        s.sums.get("judge_cost_usd") if s.counts.get("judge_cost_usd") else None for s in summaries
    ]
    tokens = [
        s.sums.get("judge_input_tokens", 0.0) + s.sums.get("judge_output_tokens", 0.0)
        if s.counts.get("judge_input_tokens")
        else None
        for s in summaries
    ]
    judged = [s.counts.get("judge_input_tokens") for s in summaries]
    table.add_row("judge cost (total)", *_cells(Row("", "", _usd, False), cost, judged))
    table.add_row("judge tokens (total)", *_cells(Row("", "", _count, False), tokens, judged))


def _sampled(summary: Summary, key: str) -> int | None:
    """How many results a figure was computed over, when fewer than all that succeeded
    (a sampled evaluator, or one that failed on some examples)."""
    n = summary.counts.get(key, 0)
    return n if 0 < n < summary.count - summary.errors else None


def _io(metrics: dict[str, float | None]) -> str:
    i, o = metrics.get("input_tokens"), metrics.get("output_tokens")
    if i is None or o is None:
        return "–"
    return f"{_count(i)} / {_count(o)}"


def _cells(
    row: Row, values: list[float | None], counts: Sequence[int | None] | None = None
) -> list[Text]:
    """``counts[i]``, when given, is shown as ``(n=…)``: the examples the figure is over."""
    present = [v for v in values if v is not None]
    best = None
    if len(present) > 1 and len(set(present)) > 1:
        best = max(present) if row.higher_is_better else min(present)
    cells = []
    for i, value in enumerate(values):
        n = counts[i] if counts else None
        suffix = f" (n={n})" if n and value is not None else ""
        if value is None:
            cells.append(Text("–", style="dim"))
        elif value == best:
            cells.append(Text(f"★ {row.fmt(value)}{suffix}", style="bold green"))
        else:
            cells.append(Text(f"{row.fmt(value)}{suffix}"))
    return cells


def unpriced_models(summary: Summary, pricing: dict[str, object]) -> list[str]:
    """Models that made calls but have no entry in the spec's pricing table."""
    return sorted(m for m in summary.models if m not in pricing)
