"""``agenteval compare`` on the terminal: the statistics table, then where the difference
comes from (disagreeing examples, confusion matrices, the distributions of the metrics
declared with one). Labels, directions and formats are the experiments' catalogs'."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agenteval_cli.core.redact import console_text
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.report.comparison import Comparison, Confusion, agent_usage, fmt_mean
from agenteval_cli.report.paired_cells import counts_words, detectable_cell, method_note, p_cell
from agenteval_cli.report.repetitions import RepetitionRow, flaky_row, legends, pass_rows
from agenteval_cli.report.table import plain, print_agent_table
from agenteval_cli.results.failures import SHOWN_REASONS
from agenteval_cli.results.sources import ExperimentData

_MARK = {"better": " ▲", "worse": " ▼"}


def _interval(catalog: Catalog, key: str, low: float | None, high: float | None) -> str:
    """``[low, high]``; rates in percentage points without repeating the unit; "–" when
    there is no interval (no spread to estimate one)."""
    if low is None or high is None:
        return "–"
    low_text, high_text = catalog.fmt_diff(key, low), catalog.fmt_diff(key, high)
    form = catalog.info(key).format
    if form == "percent":
        low_text, high_text = low_text.removesuffix(" pp"), high_text.removesuffix(" pp")
    if form == "money":
        low_text, high_text = low_text.replace("$", ""), high_text.replace("$", "")
    return f"[{low_text}, {high_text}]"


def stats_table(comparison: Comparison) -> Table:
    """Means per side; per later side, Δ against the first with its 95% CI and p-value."""
    names, catalog = comparison.names, comparison.catalog
    table = Table(
        title=plain(f"{' vs '.join(names)} · {comparison.common_examples} paired examples"),
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
    )
    # the only column that gives way on a narrow terminal, each label cut short with an
    # ellipsis rather than folded: a label's rest on a line of its own read as a row of
    # its own ("ping-pong (conv.)" as "ping-pong", a pass^k line as the next row's label)
    table.add_column("metric", style="cyan", min_width=12)
    for name in names:
        table.add_column(plain(name), justify="right", no_wrap=True)
    for name in names[1:]:
        delta = plain("Δ" if len(names) == 2 else f"Δ {name}")
        table.add_column(delta, justify="right", no_wrap=True)
        table.add_column("95% CI", justify="right", no_wrap=True)
        table.add_column("p", justify="right", no_wrap=True)
    width = 3
    blank = [""] * width * (len(names) - 1)
    # each pass/fail metric's pass^N and pass@N on dim lines under it, labelled short: a
    # "<metric> pass^N" label was the longest, folded onto a line of its own that read as a
    # label of the next row's figures
    under: dict[str, list[RepetitionRow]] = {}
    for line in pass_rows(catalog, comparison.repeated, every_k=False):
        under.setdefault(line.key or "", []).append(line)
    for row in comparison.rows:
        cells: list[Text | str] = []
        for mean, spread in zip(row.means, row.spreads, strict=True):
            text = fmt_mean(catalog, row.key, mean)
            if spread is not None:
                text += f" ± {catalog.fmt(row.key, spread)}"
            cells.append(text)
        for index, paired in enumerate(row.vs_first, start=1):
            if paired is None:
                cells += ["–"] + [""] * (width - 1)
                continue
            verdict = row.verdict(index)
            style = {"better": "bold green", "worse": "bold red"}.get(verdict or "", "")
            cells.append(Text(catalog.fmt_diff(row.key, paired.diff), style=style))
            cells.append(_interval(catalog, row.key, paired.ci_low, paired.ci_high))
            cells.append(Text(p_cell(paired) + _MARK.get(verdict or "", "  "), style=style))
        table.add_row(_label(row.info.narrow), *cells)
        for line in under.pop(row.key, []):
            table.add_row(_label(f"  {line.label}"), *line.cells, *blank, style="dim")
    for lines in under.values():  # a pass/fail metric without a row of its own
        for line in lines:
            label = f"{catalog.info(line.key or '').narrow} {line.label}"
            table.add_row(_label(label), *line.cells, *blank, style="dim")
    found = flaky_row(comparison.flaky)
    if found is not None:
        table.add_row(_label(found.label), *found.cells, *blank)
    said = legends(
        any(s is not None for r in comparison.rows for s in r.spreads), comparison.repeated
    )
    if said:
        table.caption = Text("\n".join(said), style="dim")
        table.caption_justify = "left"
    return table


def _label(text: str) -> Text:
    """A row's label on one line, cut short with an ellipsis when its column is narrow."""
    label = plain(text)
    label.no_wrap, label.overflow = True, "ellipsis"
    return label


def row_details(comparison: Comparison) -> list[str]:
    """Under the table, a line per comparison with more to say than its cells: a 0/1
    outcome's discordant counts, and for one that is not significant the difference its
    examples could have detected (a line, not two more columns, so the table still fits an
    80-column terminal)."""
    lines = []
    catalog = comparison.catalog
    several = len(comparison.names) > 2
    for row in comparison.rows:
        for name, paired in zip(comparison.names[1:], row.vs_first, strict=True):
            if paired is None or paired.n == 0:
                continue
            parts = []
            if paired.kind == "binary":
                parts.append(counts_words(paired, row.info.higher_is_better))
            if paired.reason:
                parts.append(paired.reason)
            if not paired.significant:
                mde = detectable_cell(catalog, row.key, paired)
                if mde != "–":
                    parts.append(f"{paired.n} examples detect {mde} with 80% power")
                elif paired.differing:
                    parts.append(f"{paired.n} examples detect no difference at this discordance")
            if parts:
                label = f"{row.info.narrow} ({name})" if several else row.info.narrow
                lines.append(f"{label}: " + "; ".join(parts))
    return lines


def _score(catalog: Catalog, key: str, value: float) -> str:
    return f"{catalog.info(key).tiny} {value:.2f}"


def _path(path: list[str]) -> str:
    return " → ".join(path) if path else "(no agent)"


def disagreement_table(comparison: Comparison) -> Table | None:
    if not comparison.disagreements:
        return None
    table = Table(
        title="examples where the targets disagree most",
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_lines=False,
    )
    table.add_column("example", style="cyan", overflow="fold", max_width=28)
    table.add_column("question", overflow="fold", max_width=40)
    for name in comparison.names:
        table.add_column(plain(name), overflow="fold")
    traced = [side.has_traces for side in comparison.sides]
    for item in comparison.disagreements:
        cells = []
        for scores, path, has_path in zip(item.scores, item.paths, traced, strict=True):
            scored = (_score(comparison.catalog, k, v) for k, v in scores.items())
            shown = console_text(" · ".join(scored))
            cells.append(Text(f"{shown}\n{console_text(_path(path))}" if has_path else shown))
        table.add_row(plain(item.example_id), plain(item.question), *cells)
    return table


def confusion_table(name: str, confusion: Confusion) -> Table:
    title = plain(f"routing of {name}: expected agent (rows) → agent reached (columns)")
    table = Table(
        title=title,
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        min_width=len(title) + 1,  # the title on one line, however few the columns
    )
    table.add_column("expected", style="cyan")
    for label in confusion.invoked:
        table.add_column(plain(label), justify="right")
    for row in confusion.expected:
        counts = [confusion.get(row, col) for col in confusion.invoked]
        if not any(counts):
            continue
        cells = [
            Text(str(n), style="green" if row == col else "red") if n else Text("·", style="dim")
            for n, col in zip(counts, confusion.invoked, strict=True)
        ]
        table.add_row(plain(row), *cells)
    return table


def histogram(comparison: Comparison) -> RenderableType | None:
    if not comparison.histograms:
        return None
    lines: list[Text] = []
    for key, per_side in comparison.histograms:
        lines += _histogram_lines(comparison.names, comparison.catalog.label(key), per_side)
    return Group(*lines)


def _histogram_lines(names: list[str], label: str, per_side: list) -> list[Text]:
    lines = [Text(f"{label} (examples per value)", style="bold")]
    top = max((max(h.values()) for h in per_side if h), default=1)
    width = 30
    for name, counts in zip(names, per_side, strict=True):
        lines.append(Text(f"  {console_text(name)}", style="cyan"))
        for length in range(0, max(counts, default=0) + 1):
            n = counts.get(length, 0)
            bar = "█" * max(1 if n else 0, round(n / top * width))
            lines.append(Text(f"    {length:>2} │{bar} {n}"))
    return lines


_UNFINISHED = {"uploading": "upload unfinished", "failed": "upload failed"}


def print_langsmith_urls(console: Console, sides: list[ExperimentData]) -> None:
    """Each side's LangSmith experiment, and one comparison view when they share a dataset."""
    from agenteval_cli.langsmith.upload import compare_url

    views: dict[str, list[str]] = {}
    for side in sides:
        if not side.url:
            continue
        note = _UNFINISHED.get(side.url_status or "")
        if note:
            note += f": retry with agenteval upload {side.name}"
        console.print(
            console_text(
                f"  langsmith: {side.target}: {side.url}" + (f"  ({note})" if note else "")
            ),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        dataset_url, _, selected = side.url.partition("/compare?selectedSessions=")
        if selected:
            views.setdefault(dataset_url, []).extend(selected.split("%2C"))
    for dataset_url, sessions in views.items():
        if len(sessions) > 1:
            url = compare_url(dataset_url, list(dict.fromkeys(sessions)))
            console.print(
                console_text(f"  langsmith: compare: {url}"),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )


def print_agents(console: Console, comparison: Comparison) -> None:
    """``compare --by-agent``: the sides' agents side by side, over the shared examples."""

    columns = list(zip(comparison.names, agent_usage(comparison.sides), strict=True))
    title = f"per agent · totals over the {comparison.common_examples} examples every side ran"
    print_agent_table(console, columns, title=title)


def print_errors(console: Console, comparison: Comparison) -> None:
    """Per side with errored calls: how many, and the most common kinds with their counts
    and first message (as ``agenteval run`` lists them); with interrupted ones, how many."""
    for name, found in zip(comparison.names, comparison.errors, strict=True):
        if found.interrupted:
            console.print(
                console_text(
                    f"  stopped at interrupt(): {name}: {found.interrupted} of {found.calls} "
                    f"{found.waiting_unit} waiting for input"
                ),
                style="yellow",
                highlight=False,
                markup=False,
            )
        if not found.errored:
            continue
        console.print(
            console_text(f"  errors: {name}: {found.errored} of {found.calls} {found.unit} failed"),
            style="yellow",
            highlight=False,
            markup=False,
        )
        for reason in found.reasons[:SHOWN_REASONS]:
            console.print(
                f"    {reason.count} × {console_text(reason.text)}", highlight=False, markup=False
            )
        hidden = found.reasons[SHOWN_REASONS:]
        if hidden:
            count = sum(r.count for r in hidden)
            console.print(f"    and {count} more of {len(hidden)} other kind(s)", highlight=False)


def print_comparison(console: Console, comparison: Comparison, *, by_agent: bool = False) -> None:
    console.print(stats_table(comparison))
    print_errors(console, comparison)
    for warning in comparison.warnings:  # before the figures are read as like for like
        console.print(
            "  [bold yellow]warning:[/] " + escape(console_text(warning)), highlight=False
        )
    if comparison.note:
        console.print(f"  {comparison.note}", style="dim", highlight=False, markup=False)
    console.print(
        console_text(f"  Δ = {' / '.join(comparison.names[1:]) or '–'} minus {comparison.names[0]}")
        + ", mean of the per-example differences; "
        + method_note(
            comparison.tested,
            comparison.discoveries,
            lines=True,
            bootstrap=comparison.method == "bootstrap",
        ),
        style="dim",
        highlight=False,
        markup=False,
    )
    for line in row_details(comparison):
        console.print("  " + console_text(line), style="dim", highlight=False, markup=False)
    for side in comparison.sides:
        target, name, source = (
            escape(console_text(v)) for v in (side.target, side.name, side.source)
        )
        console.print(f"  {target}: [bold]{name}[/] ({source})", highlight=False)
    print_langsmith_urls(console, comparison.sides)
    if by_agent:
        console.print()
        print_agents(console, comparison)
    table = disagreement_table(comparison)
    if table is not None:
        console.print()
        console.print(table)
    for side, confusion in zip(comparison.sides, comparison.confusion, strict=True):
        if confusion is not None:
            console.print()
            console.print(confusion_table(side.target, confusion))
    chart = histogram(comparison)
    if chart is not None:
        console.print()
        console.print(chart)
