"""The repetition rows every report shows: pass^k and pass@k of each pass/fail metric and the
flaky examples, per side, as text cells; and the line that says what they are. The run table
shows k = 1, 2 and the number of repetitions; compare, the HTML and the Markdown the last k
only (``--json`` has every k)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.info import NA, format_value
from agenteval_cli.metrics.repetitions import Flaky, Repeated, shown_ks

LEGEND = (
    "pass^k: the chance that k repetitions of an example all pass (a pass/fail metric at its "
    "best, 1, or 0 where lower is better), pass@k that one does, estimated from each "
    "example's repetitions; flaky: examples whose repetitions disagree, with a 95% interval"
)
SPREAD_LEGEND = "± is the run-to-run sd: the standard deviation of the per-repetition means"


@dataclass(frozen=True)
class RepetitionRow:
    """A row: its label, one cell per side, and the metric it belongs under (None for the
    flaky examples)."""

    label: str
    cells: list[str]
    key: str | None


def _share(value: float) -> str:
    return format_value("percent", value)


def pass_rows(
    catalog: Catalog, repeated: Sequence[Mapping[str, Repeated]], *, every_k: bool = True
) -> list[RepetitionRow]:
    """Per pass/fail key some side has: a pass^k row and a pass@k row, over the k a table
    shows (``every_k``: 1, 2 and n, pass@1 left out as pass^1's equal; otherwise n alone)."""
    most = max((r.repetitions for side in repeated for r in side.values()), default=0)
    hat_ks = shown_ks(most) if every_k else [most]
    at_ks = [k for k in hat_ks if k > 1] if every_k else hat_ks
    rows = []
    for key in catalog.ordered({k for side in repeated for k in side}):
        found = [side.get(key) for side in repeated]
        for name, figure, ks in (("pass^", "pass_hat", hat_ks), ("pass@", "pass_at", at_ks)):
            if ks:
                label = f"{name}{ks[0]}" if len(ks) == 1 else f"{name}k, k = {_joined(ks)}"
                rows.append(RepetitionRow(label, [_cell(f, ks, figure) for f in found], key))
    return rows


def _joined(ks: Sequence[int]) -> str:
    return " / ".join(str(k) for k in ks)


def _cell(found: Repeated | None, ks: Sequence[int], figure: str) -> str:
    """One side's figures at ``ks``: ``–`` for a k (or a key) it has not, n/a with a reason."""
    if found is None:
        return "–"
    if found.reason is not None:
        return NA
    values = [found.at_k(k) for k in ks]
    return " / ".join("–" if v is None else _share(getattr(v, figure)) for v in values)


def flaky_cell(flaky: Flaky | None) -> str:
    """``2/32 · 6.2% [1.7, 20.1]`` (the share's 95% Wilson interval, in percent); ``–``
    without repetitions."""
    if flaky is None or flaky.share is None or flaky.interval is None:
        return "–"
    low, high = flaky.interval
    share = _share(flaky.share)
    return f"{flaky.examples}/{flaky.repeated} · {share} [{low * 100:.1f}, {high * 100:.1f}]"


def flaky_row(flakies: Sequence[Flaky | None]) -> RepetitionRow | None:
    """The flaky examples of each side; None when no side was repeated."""
    if all(f is None for f in flakies):
        return None
    return RepetitionRow("flaky examples", [flaky_cell(f) for f in flakies], None)


def reasons(repeated: Sequence[Mapping[str, Repeated]]) -> list[str]:
    """Why a key has no pass^k (it was scored neither 0 nor 1), once per reason."""
    return list(dict.fromkeys(r.reason for side in repeated for r in side.values() if r.reason))


def side_rows(
    catalog: Catalog, repeated: Sequence[Mapping[str, Repeated]], flaky: Sequence[Flaky | None]
) -> list[RepetitionRow]:
    """The reports' rows (the HTML, the Markdown): each pass/fail metric's pass^n
    and pass@n, named after it, then the flaky examples; none without repetitions."""
    rows = [
        RepetitionRow(f"{catalog.info(r.key or '').narrow} {r.label}", r.cells, r.key)
        for r in pass_rows(catalog, repeated, every_k=False)
    ]
    found = flaky_row(flaky)
    return rows + ([found] if found is not None else [])


def legends(has_spread: bool, repeated: Sequence[Mapping[str, Repeated]]) -> list[str]:
    """What ± and the repetition rows are, for the lines under a table that shows them."""
    said = [SPREAD_LEGEND] if has_spread else []
    if any(repeated):
        said += [LEGEND, *reasons(repeated)]
    return said
