"""How one paired comparison reads in a cell, the same in compare, Markdown and HTML: the
p-value or why there is none, the discordant counts of a 0/1 outcome, the difference a
non-significant row could have detected, and the note under the table saying how each was
computed."""

from __future__ import annotations

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.stats import PairedComparison

TOO_FEW_CELL = "too few"


def p_cell(paired: PairedComparison) -> str:
    if paired.p_value is None:
        if paired.n == 0:
            return "–"
        return TOO_FEW_CELL
    return "<0.001" if paired.p_value < 0.001 else f"{paired.p_value:.3f}"


def q_cell(q: float | None) -> str:
    if q is None:
        return ""
    return "<0.001" if q < 0.001 else f"{q:.3f}"


def counts(paired: PairedComparison, higher_is_better: bool) -> tuple[int, int, int]:
    """(better, worse, ties): the examples where the later side did better than the first
    by the metric's direction, worse, and the same."""
    up, down = paired.better, paired.worse  # b > a, b < a
    return (up, down, paired.ties) if higher_is_better else (down, up, paired.ties)


def counts_cell(paired: PairedComparison, higher_is_better: bool) -> str:
    """``better / worse / ties`` of a 0/1 outcome; empty for other metrics."""
    if paired.kind != "binary":
        return ""
    return " / ".join(str(n) for n in counts(paired, higher_is_better))


def counts_words(paired: PairedComparison, higher_is_better: bool) -> str:
    """The counts in words: "better on 7, worse on 3, 22 ties"."""
    better, worse, ties = counts(paired, higher_is_better)
    return f"better on {better}, worse on {worse}, {ties} ties"


def detectable_cell(catalog: Catalog, key: str, paired: PairedComparison) -> str:
    """For a row that is not significant: the smallest difference (either way) its examples
    detect with 80% power; "–" when they cannot tell (no example differs)."""
    if paired.significant or paired.n == 0:
        return ""
    if paired.detectable is None:
        return "–"  # no example differs, or even every differing one going one way would not do
    return "±" + catalog.fmt_diff(key, paired.detectable).lstrip("+")


def method_note(
    tested: int, significant_q: int, *, lines: bool = False, bootstrap: bool = False
) -> str:
    """The sentence under the table: how the interval and the p were computed and what the
    marks, the counts and the detectable difference mean (``lines``: the counts and the
    detectable difference are the lines under it, not columns)."""
    counts = (
        ""
        if lines
        else " (better / worse / ties: the examples where the side did better than the "
        "first, worse, the same)"
    )
    detectable = (
        "below, per row not significant, the difference its examples detect with 80% power"
        if lines
        else "detectable: the difference the examples detect with 80% power (–: none), "
        "beside a row that is not significant"
    )
    means = (
        "a percentile bootstrap of per-example means (p: the share of resampled means across 0)"
        if bootstrap
        else "paired t on per-example means"
    )
    return (
        f"95% CI and p from one test: mid-p McNemar for 0/1 outcomes{counts}, {means} "
        "otherwise; ▲ better / ▼ worse: p < 0.05, unadjusted, one of "
        f"{tested} test(s) ({significant_q} with Benjamini–Hochberg q < 0.05); "
        "too few: so few examples differ that even all of them one way would not be "
        f"significant; {detectable}."
    )
