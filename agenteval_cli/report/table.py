"""The Rich comparison table: one column per target, the best value of each row marked;
and the per-agent table (``--by-agent``) of run and compare.

Labels, directions and formats come from each experiment's catalog
(:mod:`agenteval_cli.metrics.catalog`), as ``compare`` and the HTML report read them, so a
metric reads the same everywhere; keys two experiments declare differently are said under
the table. A figure no result
gave (tokens a model did not report, a cost without a price) shows as ``n/a``, never 0.

Names from data (targets, metric keys, agents, the title) reach the terminal as plain
:class:`~rich.text.Text` (never read as Rich markup), without control characters or secrets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from agenteval_cli.core.redact import console_text
from agenteval_cli.metrics.catalog import Catalog, merged
from agenteval_cli.metrics.info import NA, format_value
from agenteval_cli.metrics.summary import Summary, conversation_note
from agenteval_cli.report.repetitions import LEGEND, flaky_row, pass_rows, reasons

if TYPE_CHECKING:
    from rich.console import Console

    from agenteval_cli.report.agents import AgentRow, AgentUsage


def comparison_table(
    columns: Sequence[tuple[str, Summary]],
    *,
    title: str | None = None,
    dataset_scores: Sequence[dict[str, float | bool | None]] = (),
) -> Table:
    """Targets side by side. A row's best value is bold green with a ★ when targets differ.

    The rows are the experiments' metrics in their order (their evaluators' keys, then the
    run's own figures); a metric declared ``under`` another is a dim line beneath it, and
    one not ``shown`` appears only through its total. ``dataset_scores`` (one mapping per
    column) are summary evaluators' scores, computed once over all of a target's results;
    they get rows of their own, marked "(dataset)".

    Results served from the response cache get a row of their own ("from the cache"); the
    latency rows are over the other results (a cached latency is an earlier call's), so a
    cached result never wins latency's ★. The table is at least as wide as its title, which
    stays on one line.

    With repetitions, each pass/fail metric gets dim pass^k and pass@k lines under it (k =
    1, 2 and the number of repetitions), and a row counts the flaky examples."""
    shown_title = _title(title)
    table = Table(
        title=shown_title,
        title_justify="left",
        header_style="bold",
        min_width=None if shown_title is None else shown_title.cell_len,
    )
    table.add_column("metric", style="cyan", no_wrap=True)
    for name, _ in columns:
        table.add_column(plain(name), justify="right")
    summaries = [summary for _, summary in columns]
    catalog, clashes = merged([(name, summary.catalog) for name, summary in columns])
    info, label = catalog.info, catalog.label
    metrics = [summary.metrics() for summary in summaries]
    keys = by_level(catalog, catalog.ordered(dict.fromkeys(k for m in metrics for k in m)))
    caption = Text("\n".join(clashes), style="yellow")
    note = conversation_note(summaries, catalog, keys)
    if note and any(info(k).level == "conversation" for k in keys):
        note += "; the metrics under the line are per conversation"
    repeated = [summary.repeated() for summary in summaries]
    repetition_lines: dict[str, list[tuple[str, list[str]]]] = {}
    for line in pass_rows(catalog, repeated):
        repetition_lines.setdefault(line.key or "", []).append((line.label, line.cells))
    flaky = flaky_row([summary.flaky() for summary in summaries])
    if flaky is not None:
        said = [LEGEND, *reasons(repeated)]
        note = "\n".join([note, *said] if note else said)
    if note:
        caption.append(("\n" if clashes else "") + note, style="dim")
    if clashes or note:
        table.caption = caption
        table.caption_justify = "left"
    sectioned = False
    details: dict[str, list[str]] = {}
    for key in keys:
        parent = info(key).under
        if parent is not None and parent in keys:
            details.setdefault(parent, []).append(key)
    totals = []
    for key in keys:
        declared = info(key)
        if not declared.shown or (declared.under is not None and declared.under in keys):
            continue
        if declared.aggregation == "sum":
            totals.append(key)
            continue
        if declared.quiet and not any(m.get(key) for m in metrics):
            continue  # a figure shown only when some target has it (interrupt rate)
        if declared.reported and all(m.get(key) is None for m in metrics):
            continue  # a figure no model reported (cache share)
        if declared.level == "conversation" and not sectioned:
            table.add_section()  # the conversations' own figures, apart from the requests'
            sectioned = True
        if all(m.get(key) is None for m in metrics):
            table.add_row(plain(label(key)), *(Text(NA) for _ in metrics))
        else:
            table.add_row(plain(label(key)), *_row(catalog, key, metrics, summaries))
        if key in details:
            name = " / ".join(info(k).tiny for k in details[key])
            lines = [_details(catalog, details[key], m) for m in metrics]
            table.add_row(f"  {name}", *lines, style="dim")
        for name, cells in repetition_lines.get(key, []):
            table.add_row(f"  {name}", *cells, style="dim")
    for key in sorted({k for scores in dataset_scores for k in scores}):
        values = [_number(scores.get(key)) for scores in dataset_scores]
        table.add_row(plain(f"{label(key)} (dataset)"), *_cells(catalog, key, values))
    for key in totals:
        counted = [s.counts.get(info(key).of[0]) if info(key).of else None for s in summaries]
        values = [m.get(key) for m in metrics]
        table.add_row(plain(label(key)), *_cells(catalog, key, values, counted))
    if flaky is not None:
        table.add_row(flaky.label, *flaky.cells)
    table.add_row("examples run", *(f"{s.count}" for s in summaries), style="dim")
    if any(s.cached for s in summaries):
        cached = (f"{s.cached} of {s.count}" for s in summaries)
        table.add_row("from the cache", *cached, style="dim")
    return table


def by_level(catalog: Catalog, keys: list[str]) -> list[str]:
    """``keys`` with the conversation metrics after the request ones, before the run's."""
    run = {k for k in keys if catalog.info(k).scope == "run"}
    level = {k for k in keys if catalog.info(k).level == "conversation" and k not in run}
    return (
        [k for k in keys if k not in run and k not in level]
        + [k for k in keys if k in level]
        + [k for k in keys if k in run]
    )


def plain(value: object, style: str = "") -> Text:
    """Data as a table cell: shown as written, never as markup, no control characters."""
    return Text(console_text(value), style=style)


def _title(title: str | None) -> Text | None:
    return None if title is None else plain(title)


def _row(
    catalog: Catalog, key: str, metrics: list[dict[str, float | None]], summaries: list[Summary]
) -> list[Text]:
    values = [m.get(key) for m in metrics]
    return _cells(catalog, key, values, [_sampled(catalog, s, key) for s in summaries])


def _number(value: float | bool | None) -> float | None:
    return None if value is None else float(value)


def _sampled(catalog: Catalog, summary: Summary, key: str) -> int | None:
    """How many results a figure was computed over, when fewer than all that could have it
    (a sampled evaluator, or one that failed on some examples): every result for a figure
    of the trace, the answered ones for a figure that needs the answer."""
    n = summary.counts.get(key, 0)
    could = summary.count
    if catalog.needs_answer(key):
        could -= summary.errors + summary.interrupts
    return n if 0 < n < could else None


def _details(catalog: Catalog, keys: list[str], metrics: dict[str, float | None]) -> str:
    """The dim line under a metric: its parts, ``1,000 / 500``; n/a when one is unknown."""
    values = [metrics.get(k) for k in keys]
    if any(v is None for v in values):
        return NA
    return " / ".join(catalog.fmt(k, v) for k, v in zip(keys, values, strict=True))


def _cells(
    catalog: Catalog,
    key: str,
    values: list[float | None],
    counts: Sequence[int | None] | None = None,
) -> list[Text]:
    """``counts[i]``, when given, is shown as ``(n=…)``: the examples the figure is over."""
    present = [v for v in values if v is not None]
    best = None
    if len(present) > 1 and len(set(present)) > 1:
        best = max(present) if catalog.higher_is_better(key) else min(present)
    cells = []
    for i, value in enumerate(values):
        n = counts[i] if counts else None
        suffix = f" (n={n})" if n and value is not None else ""
        if value is None:
            cells.append(Text(NA, style="dim"))
        elif value == best:
            cells.append(Text(f"★ {catalog.fmt(key, value)}{suffix}", style="bold green"))
        else:
            cells.append(Text(f"{catalog.fmt(key, value)}{suffix}"))
    return cells


def unpriced_models(summary: Summary) -> list[str]:
    """Models that made calls the run found a price for neither in the spec's pricing
    table nor in its price data: as the prices kept with the calls say, never the price
    data of the process showing them."""
    from agenteval_cli.metrics.prices import UNPRICED

    return sorted(summary.price_gaps.get(UNPRICED, ()))


def unstored_models(summary: Summary, pricing: Mapping[str, object]) -> list[str]:
    """Models of calls stored without their price (a store written before prices were
    kept with each call) that the run's spec does not price either: their cost is n/a."""
    from agenteval_cli.metrics.prices import UNSTORED

    return sorted(m for m in summary.price_gaps.get(UNSTORED, ()) if m not in pricing)


# Two-line headings: the first line of a target's first column is the target's name.
AGENT_COLUMNS = ("\nruns", "model\ncalls", "tokens\nin / out", "\ncost", "model\ntime")
# Shown after "tokens" when some model reported its cache or reasoning tokens.
PART_COLUMNS = ("cache\nread / write", "\nreasoning")


def agent_table(
    columns: Sequence[tuple[str, AgentUsage | None]], *, title: str | None = None
) -> Table:
    """Per agent path, targets side by side: the results each agent ran in, its model
    calls, tokens, cost and model time, summed. Teams hold their members, indented under
    them; the last row is every model call. ``None`` for a target: no traces to read."""
    from agenteval_cli.report.agents import SEPARATOR, merged_paths, shown_name

    table = Table(title=_title(title), title_justify="left", header_style="bold")
    table.add_column("agent", style="cyan", no_wrap=True)
    usages = [usage for _, usage in columns]
    parts = any(u is not None and _reports_parts(u.total) for u in usages)
    headings = _agent_headings(parts)
    for name, _ in columns:
        for index, heading in enumerate(headings):
            header = plain(name) + heading if index == 0 else Text(heading)
            table.add_column(header, justify="right", no_wrap=True)
    for path in merged_paths(usages):
        cells: list[Text] = []
        team = False
        for usage in usages:
            row = None if usage is None else usage.get(SEPARATOR.join(path))
            team = team or (row is not None and not row.leaf)
            cells += _agent_cells(row, missing=usage is not None, parts=parts)
        table.add_row(plain(shown_name(path), "bold" if team else ""), *cells)
    totals: list[Text] = []
    for usage in usages:
        totals += _agent_cells(None if usage is None else usage.total, missing=False, parts=parts)
    table.add_section()
    table.add_row(Text("all agents", style="bold"), *totals)
    return table


def _agent_headings(parts: bool) -> tuple[str, ...]:
    return AGENT_COLUMNS[:3] + PART_COLUMNS + AGENT_COLUMNS[3:] if parts else AGENT_COLUMNS


def _reports_parts(row: AgentRow) -> bool:
    """Whether some call of the row reported its cache reads, cache writes or reasoning."""
    return any(
        n is not None for n in (row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens)
    )


def _agent_cells(row: AgentRow | None, *, missing: bool, parts: bool = False) -> list[Text]:
    """One target's cells of a row: "–" where the agent did not run, n/a where unknown."""
    if row is None:
        return [Text("–" if missing else NA, style="dim") for _ in _agent_headings(parts)]
    values = [
        f"{row.results:,}",
        f"{row.model_calls:,}",
        _in_out(row.input_tokens, row.output_tokens),
        NA if row.cost_usd is None else format_value("money", row.cost_usd),
        format_value("duration", row.latency_s),
    ]
    if parts:
        values[3:3] = [
            _in_out(row.cache_read_tokens, row.cache_write_tokens),
            NA if row.reasoning_tokens is None else f"{row.reasoning_tokens:,}",
        ]
    return [Text(v, style="dim" if v == NA else "") for v in values]


def _in_out(input_tokens: int | None, output_tokens: int | None) -> str:
    if input_tokens is None and output_tokens is None:
        return NA
    return " / ".join(NA if n is None else f"{n:,}" for n in (input_tokens, output_tokens))


def print_agent_table(
    console: Console, columns: Sequence[tuple[str, AgentUsage | None]], *, title: str
) -> None:
    """The targets side by side when the console is wide enough, else one after another."""
    from agenteval_cli.report.agents import agent_notes

    table = agent_table(columns, title=title)
    wide = console.options.update_width(10**4)
    if len(columns) > 1 and console.measure(table, options=wide).maximum > console.width:
        for index, column in enumerate(columns):
            if index:
                console.print()
            console.print(agent_table([column], title=f"{title} · {column[0]}"))
    else:
        console.print(table)
    for note in agent_notes(columns):
        console.print(f"  {console_text(note)}", style="dim", highlight=False, markup=False)
