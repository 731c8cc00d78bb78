"""The Markdown summary: a PR comment or a CI job summary (``$GITHUB_STEP_SUMMARY``).

GitHub renders it, so model text is escaped for Markdown tables and HTML alike.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.core.redact import redact, strip_control
from agenteval_cli.report.calibration import HEADINGS, TITLE, figures
from agenteval_cli.report.comparison import Comparison, fmt_mean
from agenteval_cli.report.paired_cells import counts_cell, detectable_cell, method_note, p_cell
from agenteval_cli.report.repetitions import legends, side_rows
from agenteval_cli.results.failures import SHOWN_REASONS

if TYPE_CHECKING:
    from agenteval_cli.gating.family import CheckOutcome
    from agenteval_cli.gating.verdict import GateFailure


# What starts inline markup in running text: code, emphasis, strikethrough, links and
# images (their '[...]'), and table cells ('|'). '<' and '&' are escaped as HTML, and '://'
# is written with an entity so no bare URL becomes a link.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~\[\]|])")


def _cell(text: str) -> str:
    """Safe as text in a Markdown table cell or list item: no HTML, no markup, no links,
    no newlines; control characters removed, known secrets redacted."""
    text = html.escape(strip_control(redact(str(text))))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("://", ":&#47;/")


def _code(text: str, *, in_table: bool = False) -> str:
    """``text`` as a code span that nothing in it can close: the fence is one backtick more
    than the longest run inside, padded with a space when the text starts or ends with a
    backtick or a space (CommonMark strips one space from each side).

    Nothing inside a code span is rendered, not even entities, so only a table's '|' (which
    GitHub splits cells on even there) is escaped, as '\\|'."""
    text = strip_control(redact(str(text)))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def render_markdown(
    comparison: Comparison,
    *,
    gate_failures: Sequence[GateFailure] | None = None,
    title: str = "agenteval report",
    gate_checks: Sequence[CheckOutcome] = (),
    allow_untested: bool = False,
) -> str:
    names = comparison.names
    lines = [f"## {_cell(title)}", ""]
    if gate_failures is not None:
        lines += _gate_lines(gate_failures, gate_checks, allow_untested)
    binary = any(c is not None and c.kind == "binary" for r in comparison.rows for c in r.vs_first)
    header = ["metric", *names]
    for name in names[1:]:
        header += [f"Δ {name} − {names[0]}", "95% CI", "p"]
        header += ["better / worse / ties"] if binary else []
        header += ["detectable"]
    lines.append("| " + " | ".join(_cell(h) for h in header) + " |")
    lines.append("|" + "|".join([":--", *["--:"] * (len(header) - 1)]) + "|")
    catalog = comparison.catalog
    for row in comparison.rows:
        cells = [_cell(row.label)]  # the one cell from data: a metric key can be anything
        for mean, spread in zip(row.means, row.spreads, strict=True):
            text = fmt_mean(catalog, row.key, mean)
            cells.append(text + (f" ± {catalog.fmt(row.key, spread)}" if spread else ""))
        for index, paired in enumerate(row.vs_first, start=1):
            if paired is None:
                cells += ["–"] + [""] * (3 + binary)
                continue
            verdict = row.verdict(index)
            diff = catalog.fmt_diff(row.key, paired.diff)
            if verdict:
                diff = f"**{diff}** {'▲' if verdict == 'better' else '▼'}"
            interval = (
                "–"
                if paired.ci_low is None
                else f"[{catalog.fmt_diff(row.key, paired.ci_low)}, "
                f"{catalog.fmt_diff(row.key, paired.ci_high)}]"
            )
            cells += [diff, interval, p_cell(paired)]
            cells += [counts_cell(paired, row.info.higher_is_better)] if binary else []
            cells += [detectable_cell(catalog, row.key, paired)]
        # The figures are formatted here (numbers, units, '**' for significance), not data.
        lines.append("| " + " | ".join(cells[:1] + [html.escape(c) for c in cells[1:]]) + " |")
    for extra in side_rows(catalog, comparison.repeated, comparison.flaky):
        shown = [html.escape(c) for c in extra.cells] + [""] * (4 + binary) * (len(names) - 1)
        lines.append("| " + " | ".join([_cell(extra.label), *shown]) + " |")
    spread = any(s is not None for r in comparison.rows for s in r.spreads)
    said = legends(spread, comparison.repeated)
    lines += [""] + [f"_{_cell(line)}_" for line in said] if said else []
    lines += [""] + [f"> **Warning:** {_cell(w)}" for w in comparison.warnings]
    for name, found in zip(names, comparison.errors, strict=True):
        if found.errored:
            kinds = "; ".join(f"{r.count} × {_code(r.text)}" for r in found.reasons[:SHOWN_REASONS])
            more = len(found.reasons) - SHOWN_REASONS
            lines.append(
                f"- **Errors** {_code(name)}: {found.errored} of {found.calls} "
                f"{found.unit} failed: "
                + kinds
                + (f"; and {more} other kind(s)" if more > 0 else "")
            )
        if found.interrupted:
            lines.append(
                f"- **Interrupted** {_code(name)}: {found.interrupted} of {found.calls} "
                f"{found.waiting_unit} stopped at `interrupt()`, waiting for input"
            )
    if comparison.note:
        lines.append(f"- {_cell(comparison.note)}")
    lines += [
        "",
        f"{comparison.common_examples} paired examples. "
        + method_note(
            comparison.tested,
            comparison.discoveries,
            bootstrap=comparison.method == "bootstrap",
        ),
        "",
    ]
    lines += _calibration(comparison)
    lines += _blame(comparison)
    if comparison.disagreements:
        lines += ["<details><summary>Examples where the targets disagree most</summary>", ""]
        lines.append("| example | question | " + " | ".join(_cell(n) for n in names) + " |")
        lines.append("|" + "|".join([":--"] * (len(names) + 2)) + "|")
        for item in comparison.disagreements:
            sides = [
                _cell(" ".join(f"{k}={v:.2f}" for k, v in scores.items()) + " · " + " → ".join(p))
                for scores, p in zip(item.scores, item.paths, strict=True)
            ]
            example = _code(item.example_id, in_table=True)
            lines.append(f"| {example} | {_cell(item.question)} | " + " | ".join(sides) + " |")
        lines += ["", "</details>", ""]
    for side in comparison.sides:
        lines.append(f"- {_code(side.target)}: {_cell(side.name)}")
    return "\n".join(lines) + "\n"


def _blame(comparison: Comparison) -> list[str]:
    """Where each side's failures start (agent × kind), then each blamed example's line."""
    from agenteval_cli.report.blame import TITLE as BLAME
    from agenteval_cli.report.blame import counts, line, rows

    lines: list[str] = []
    for side in comparison.sides:
        found = counts(run.blame for run in side.runs)
        if not found:
            continue
        header, body = rows(found)
        lines += [f"**{_cell(BLAME[:1].upper() + BLAME[1:])}** {_code(side.target)}", ""]
        lines.append("| " + " | ".join(_cell(h) for h in header) + " |")
        lines.append("|" + "|".join([":--", *["--:"] * (len(header) - 1)]) + "|")
        lines += ["| " + " | ".join(_cell(str(v)) for v in row) + " |" for row in body]
        lines += ["", "<details><summary>Each failed request's first wrong step</summary>", ""]
        for run in side.runs:
            said = line(run.blame)
            if said is not None:
                lines.append(f"- {_code(run.example_id)} #{run.repetition}: {_cell(said)}")
        lines += ["", "</details>", ""]
    return lines


def _calibration(comparison: Comparison) -> list[str]:
    """The judges' agreement with people's labels, when some row carries them."""
    if not comparison.calibration and not comparison.calibration_errors:
        return []
    lines = [f"#### {_cell(TITLE)}", ""]
    if comparison.calibration:
        header = ["target", "judge", *HEADINGS]
        lines.append("| " + " | ".join(_cell(h) for h in header) + " |")
        lines.append("|" + "|".join([":--", ":--", "--:", "--:", "--:", ":--", "--:"]) + "|")
        for item in comparison.calibration:
            cells = [_code(item.target, in_table=True), _cell(item.key)]
            cells += [html.escape(c) for c in figures(item)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"> **Warning:** {_cell(e)}" for e in comparison.calibration_errors]
    return lines + ([""] if comparison.calibration_errors else [])


def _gate_lines(
    failures: Sequence[GateFailure], checks: Sequence[CheckOutcome], allow_untested: bool
) -> list[str]:
    """The gate's verdict, then each baseline check Holm cleared or that is untested and
    allowed: what passed without being a pass of its own."""
    from agenteval_cli.gating.wording import gate_summary, outcome_line

    if failures:
        lines = [f"**Gate failed** ({len(failures)} problem(s)):"]
        lines += [f"- {_code(f.target)}: {_cell(f.message)}" for f in failures]
    else:
        lines = [f"**Gate passed**: {_cell(gate_summary(checks, allow_untested=allow_untested))}."]
    lines += [
        f"- {_code(o.check.target)}: {_cell(outcome_line(o))}"
        for o in checks
        if o.status == "cleared" or (o.status == "untested" and allow_untested)
    ]
    return [*lines, ""]


def write_markdown(
    path: Path,
    comparison: Comparison,
    *,
    gate_failures: Sequence[GateFailure] | None = None,
    title: str = "agenteval report",
    gate_checks: Sequence[CheckOutcome] = (),
    allow_untested: bool = False,
) -> None:
    text = render_markdown(
        comparison,
        gate_failures=gate_failures,
        title=title,
        gate_checks=gate_checks,
        allow_untested=allow_untested,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
