"""``agenteval compare --json``: the comparison table as data, every figure the terminal
shows (and the q-values it only counts), unformatted."""

from __future__ import annotations

from typing import Any

from agenteval_cli.metrics.stats import PairedComparison
from agenteval_cli.report.comparison import Comparison, MetricRow
from agenteval_cli.report.paired_cells import counts


def _paired(row: MetricRow, paired: PairedComparison | None, q: float | None) -> dict[str, Any]:
    if paired is None:
        return {"n": 0}
    found: dict[str, Any] = {
        "n": paired.n,
        "kind": paired.kind,
        "method": paired.method,
        "diff": paired.diff,
        "ci": None if paired.ci_low is None else [paired.ci_low, paired.ci_high],
        "p_value": paired.p_value,
        "q_value": q,
        "verdict": None,
        "not_tested": paired.reason,
        "detectable": None if paired.significant else paired.detectable,
    }
    if paired.kind == "binary":
        better, worse, ties = counts(paired, row.info.higher_is_better)
        found.update(better=better, worse=worse, ties=ties)
    if paired.kind == "skewed":
        found.update(median_ratio=paired.ratio_median, concentrated=paired.concentrated)
    return found


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """Per metric, each side's mean and, per later side, the paired figures against the
    first: Δ, the 95% interval, p, q, the discordant counts of a 0/1 outcome, the difference
    a non-significant row could detect (null when significant), and why a row was not
    tested."""
    rows = []
    for row in comparison.rows:
        q_values = row.q_values or [None] * len(row.vs_first)
        against = []
        for index, (paired, q) in enumerate(zip(row.vs_first, q_values, strict=True), start=1):
            figures = _paired(row, paired, q)
            if paired is not None:
                figures["verdict"] = row.verdict(index)
            against.append({"target": comparison.names[index], **figures})
        rows.append(
            {
                "metric": row.key,
                "label": row.label,
                "higher_is_better": row.info.higher_is_better,
                "means": row.means,  # per side, in the order of "targets"
                "vs_first": against,
            }
        )
    return {
        "targets": comparison.names,
        "experiments": [side.name for side in comparison.sides],
        "paired_examples": comparison.common_examples,
        "tested": comparison.tested,
        "method": comparison.method,
        "rows": rows,
        "warnings": comparison.warnings,
    }
