"""A judge's agreement with people, as every report words it: ``agenteval judge
calibrate``, the run table's block, the Markdown and HTML reports render the one
computation (:mod:`agenteval_cli.results.calibration`) with these phrases."""

from __future__ import annotations

from agenteval_cli.metrics.agreement import Agreement
from agenteval_cli.results.calibration import LABELS_FIELD, Calibration

TITLE = f"Judges against people (outputs.{LABELS_FIELD})"
CORNER = "people\\judge"


def kind(a: Agreement) -> str:
    return "weighted kappa" if a.weighted else "kappa"


def kappa_figure(a: Agreement) -> str:
    """``0.62 [-0.01, 1.00]``, or why there is none."""
    if a.kappa is None:
        return "undefined (both sides gave one value only)"
    return f"{a.kappa:.2f} [{a.kappa_low:.2f}, {a.kappa_high:.2f}]"


def headline(item: Calibration) -> str:
    """``routing_quality: n=32, agreement 81%, weighted kappa 0.71 [0.55, 0.87]``."""
    a = item.agreement
    unscored = f", {item.unscored} labelled result(s) unscored" if item.unscored else ""
    return (
        f"{item.key}: n={a.n}, agreement {a.agreement:.0%}, {kind(a)} {kappa_figure(a)}{unscored}"
    )


def value(category: float) -> str:
    """A label as people wrote it: ``1``, ``0.5``."""
    return str(int(category)) if category.is_integer() else f"{category:g}"


def calibration_lines(found: list[Calibration]) -> list[str]:
    """``agenteval judge calibrate``'s report, one block per target and key: a headline,
    then the confusion, people's values in rows and the judge's in columns."""
    lines: list[str] = []
    for item in found:
        lines.append(f"{item.target} ({item.experiment}) {headline(item)}")
        labels = [value(c) for c in item.agreement.categories]
        width = max(len(x) for x in labels) + 3
        lines.append("  " + CORNER + "".join(x.rjust(width) for x in labels))
        for label, row in zip(labels, item.agreement.confusion, strict=True):
            cells = "".join(str(c).rjust(width) for c in row)
            lines.append("  " + label.ljust(len(CORNER)) + cells)
    return lines


HEADINGS = ("n", "agreement", "kappa [95% CI]", "weighting", "unscored")


def figures(item: Calibration) -> tuple[str, ...]:
    """A calibration's cells under :data:`HEADINGS`, for the Markdown and HTML tables."""
    a = item.agreement
    weighting = "quadratic" if a.weighted else "none (two values)"
    return (f"{a.n:,}", f"{a.agreement:.0%}", kappa_figure(a), weighting, f"{item.unscored:,}")
