"""The statistical comparison of experiments on one dataset: what compare and the reports show.

Every side after the first is compared with the first on the examples both scored: mean per
side, the paired difference with its interval and p-value from one construction per kind of
metric (:mod:`agenteval_cli.metrics.stats`), the smallest difference a non-significant row
could have detected, and Benjamini–Hochberg q-values across every row tested. Around the
numbers: the examples where the sides disagree most, a routing confusion matrix per side
(the ``routing_confusion`` evaluator's, with its rules) and the distribution of each metric
declared with one. A side's means, spreads and pass^k are its summary's, the figures
the run table, ``--json`` and the gate show.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import INTERRUPTED
from agenteval_cli.data.conversations import opening_line
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog, merged
from agenteval_cli.metrics.info import NA
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.metrics.paired import paired_comparison
from agenteval_cli.metrics.registry import MetricInfo
from agenteval_cli.metrics.repetitions import Flaky, Repeated
from agenteval_cli.metrics.stats import (
    BOOTSTRAP_MIN,
    Method,
    PairedComparison,
    benjamini_hochberg,
)
from agenteval_cli.metrics.summary import conversation_note, unanswered_note
from agenteval_cli.report.agents import AgentUsage, aggregate
from agenteval_cli.results.calibration import Calibration, calibrated
from agenteval_cli.results.failures import ErrorReason, error_reasons, unit_of
from agenteval_cli.results.sources import ExperimentData, Run

if TYPE_CHECKING:
    from agenteval_cli.metrics.summary import Summary

NONE = "(none)"


def fmt_mean(catalog: Catalog, key: str, value: float | None) -> str:
    """A side's mean as compare and the reports show it; n/a when no result gave one."""
    return NA if value is None else catalog.fmt(key, value)


@dataclass
class MetricRow:
    key: str
    means: list[float | None]  # per side: per-example means over the examples all scored
    spreads: list[float | None]  # per side: sd of the per-repetition means
    vs_first: list[PairedComparison | None]  # per side after the first
    info: MetricInfo  # how the key reads, as the comparison's catalog declares it
    # per side after the first: Benjamini–Hochberg q across every comparison tested
    q_values: list[float | None] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.info.label

    # The second side against the first, the common case of two (``vs_first`` has them all).

    @property
    def metric(self) -> str:
        return self.key

    @property
    def delta(self) -> float | None:
        """Mean per-example difference, second side minus first."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else first.diff

    @property
    def ci(self) -> tuple[float | None, float | None] | None:
        """95% interval of :attr:`delta` (the construction of its metric's kind)."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else (first.ci_low, first.ci_high)

    @property
    def p_value(self) -> float | None:
        """The paired test of "no difference"; None when too few examples differ."""
        first = self.vs_first[0] if self.vs_first else None
        return None if first is None else first.p_value

    def verdict(self, index: int) -> str | None:
        """'better' or 'worse' when side ``index`` differs significantly from the first."""
        comparison = self.vs_first[index - 1]
        if comparison is None or not comparison.significant or not comparison.diff:
            return None
        up = comparison.diff > 0
        return "better" if up == self.info.higher_is_better else "worse"


@dataclass
class Disagreement:
    example_id: str
    question: str
    gap: float
    scores: list[dict[str, float]]  # per side: per-example mean of each outcome score
    paths: list[list[str]]  # per side: the first repetition's agent path


@dataclass
class Confusion:
    """Rows: each expected agent; columns: where the request went (the agent itself when
    it was reached, else the unexpected specialists invoked, else ``(none)``). The
    ``routing_confusion`` evaluator's matrix (``--json``'s), as a lookup."""

    expected: list[str]
    invoked: list[str]
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def get(self, expected: str, routed: str) -> int:
        return self.counts.get((expected, routed), 0)

    @classmethod
    def from_matrix(cls, matrix: dict) -> Confusion:
        counts = {
            (e, i): n
            for e, row in zip(matrix["expected"], matrix["counts"], strict=True)
            for i, n in zip(matrix["invoked"], row, strict=True)
            if n
        }
        return cls(list(matrix["expected"]), list(matrix["invoked"]), counts)


@dataclass
class SideErrors:
    """A side's errored calls on the compared examples, grouped as ``agenteval run`` lists
    them: the most common kinds first, each with its count and first message."""

    calls: int
    errored: int
    reasons: list[ErrorReason]
    interrupted: int = 0  # runs that stopped at interrupt(): no error, no answer
    conversations: int = 0  # runs that are conversations (a call per turn)

    @property
    def unit(self) -> str:
        return unit_of(self.calls, self.conversations)

    @property
    def waiting_unit(self) -> str:
        """What stopped at interrupt(), as the interrupt lines count it."""
        return unit_of(self.calls, self.conversations, "request(s)")


@dataclass
class Comparison:
    sides: list[ExperimentData]
    rows: list[MetricRow]
    disagreements: list[Disagreement]
    confusion: list[Confusion | None]
    histograms: list[tuple[str, list[Counter[int]]]]  # (metric, per side), when any has values
    common_examples: int
    # per side: pass@k and pass^k of each pass/fail key, and its flaky examples (repetitions)
    repeated: list[dict[str, Repeated]]
    flaky: list[Flaky | None]
    # What the figures leave out: per side, the examples it ran that another side did not,
    # and a line for each way the sides' data differ (say it beside the figures).
    left_out: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[SideErrors] = field(default_factory=list)  # per side
    # What the figures include when some run has no answer (it errored or was interrupted).
    note: str | None = None
    # How the sides' metrics read (the first side's declaration of a key they declare
    # differently, said in ``warnings``).
    catalog: Catalog = BUILT_IN
    method: Method = "t"  # or "bootstrap": how the rows that are not 0/1 were computed
    # Each side's judges against people's labels (outputs.human), over all its runs as
    # ``agenteval judge calibrate`` reads them; a side whose labels cannot be read is a line.
    calibration: list[Calibration] = field(default_factory=list)
    calibration_errors: list[str] = field(default_factory=list)

    @property
    def tested(self) -> int:
        """How many comparisons (rows × later sides) have a p-value: the family the
        q-values are over, and what an unadjusted p < 0.05 is one of."""
        return sum(1 for row in self.rows for c in row.vs_first if c and c.p_value is not None)

    @property
    def discoveries(self) -> int:
        """Comparisons whose Benjamini–Hochberg q is below 0.05."""
        return sum(1 for row in self.rows for q in row.q_values if q is not None and q < 0.05)

    @property
    def has_errors(self) -> bool:
        return any(e.errored for e in self.errors)

    @property
    def names(self) -> list[str]:
        return [s.target for s in self.sides]


def check_same_data(sides: list[ExperimentData], allow_different_data: bool) -> None:
    hashes = {s.dataset_hash for s in sides if s.dataset_hash}
    if len(hashes) > 1 and not allow_different_data:
        detail = ", ".join(f"{s.name}: {(s.dataset_hash or '?')[:12]}" for s in sides)
        raise UserError(
            f"the experiments ran on different dataset versions ({detail})",
            hint="re-run them on one dataset, or pass --allow-different-data to pair "
            "the examples they share",
        )


def outcome_keys(sides: list[ExperimentData], catalog: Catalog) -> list[str]:
    """Score keys that are outcomes (0–1 or true/false), not quantities such as tokens."""
    keys = set().union(*(s.score_keys() for s in sides))
    outcome = []
    for key in catalog.ordered(k for k in keys if not catalog.is_quantity(k)):
        values = [v for s in sides for r in s.runs if (v := r.scores.get(key)) is not None]
        if values and all(0 <= float(v) <= 1 for v in values):
            outcome.append(key)
    return outcome


def ran_family(side: ExperimentData, family: str) -> bool:
    """Whether an evaluator of ``family`` (the evaluator registry's) scored the side: one of
    its keys is among the side's configured keys or the scores its results hold."""
    from agenteval_cli.evaluators.registry import REGISTRY

    keys = set(side.metric_keys) | side.score_keys()
    return any(e.family == family and keys & set(e.keys) for e in REGISTRY.values())


def confusion_matrix(side: ExperimentData) -> Confusion | None:
    """The ``routing_confusion`` evaluator's matrix over the side's successful runs (with
    the ``ignore_agents`` its spec gave it); None without ``expected_agents`` or traces,
    or when no routing evaluator scored the side."""
    from agenteval_cli.evaluators.routing import confusion_ignore, routing_rows
    from agenteval_cli.evaluators.routing import confusion_matrix as matrix_of

    if not side.has_traces or not ran_family(side, "routing"):
        return None
    rows = (  # one at a time, every status; a conversation's turns
        row for r in side.runs for row in routing_rows(r.reference, r.trace, r.turns)
    )
    matrix = matrix_of(rows, ignore_agents=confusion_ignore(side.evaluators))
    return None if matrix is None else Confusion.from_matrix(matrix)


def histogram(side: ExperimentData, key: str) -> Counter[int]:
    """How many runs had each (whole) value of ``key`` (those without one left out)."""
    return Counter(int(v) for r in side.runs if (v := r.scores.get(key)) is not None)


def histograms(
    sides: list[ExperimentData], keys: list[str], catalog: Catalog
) -> list[tuple[str, list[Counter[int]]]]:
    """Per metric declared with a distribution, each side's histogram; left out when no side
    has a value."""
    found = []
    for key in keys:
        if not catalog.info(key).distribution:
            continue
        counts = [histogram(s, key) for s in sides]
        if any(counts):
            found.append((key, counts))
    return found


def _question(runs: list[Run]) -> str:
    inputs = runs[0].inputs
    opening = opening_line(inputs)
    if opening is not None:  # a conversation: its first message, and the turns after it
        return opening
    if "question" in inputs:
        return str(inputs["question"])
    return " ".join(str(v) for v in inputs.values())[:200]


def disagreements(sides: list[ExperimentData], keys: list[str], top: int) -> list[Disagreement]:
    """Examples ranked by the summed spread of their outcome scores across the sides."""
    if len(sides) < 2 or not keys:
        return []
    per_side = [{k: s.per_example(k) for k in keys} for s in sides]
    grouped = [s.by_example() for s in sides]
    common = [e for e in sides[0].example_ids() if all(e in g for g in grouped)]
    found = []
    for eid in common:
        scores = [{k: m[k][eid] for k in keys if eid in m[k]} for m in per_side]
        gap = 0.0
        for key in keys:
            values = [s[key] for s in scores if key in s]
            if len(values) == len(sides):
                gap += max(values) - min(values)
        if gap > 0:
            paths = [g[eid][0].agent_path for g in grouped]
            found.append(Disagreement(eid, _question(grouped[0][eid]), gap, scores, paths))
    found.sort(key=lambda d: (-d.gap, d.example_id))
    return found[:top]


def shared_examples(sides: list[ExperimentData]) -> set[str]:
    """The examples every side ran."""
    if not sides:
        return set()
    common = set(sides[0].example_ids())
    for side in sides[1:]:
        common &= set(side.example_ids())
    return common


def agent_usage(sides: list[ExperimentData]) -> list[AgentUsage | None]:
    """Each side's per-agent figures over its runs (every call made, errored and
    interrupted runs too) of the examples every side ran; None for a side without traces
    (a baseline file)."""
    common = shared_examples(sides)
    return [
        aggregate(
            (r.model_calls for r in side.runs if r.example_id in common),
            side.pricing,
        )
        if side.has_traces and side.has_model_calls
        else None
        for side in sides
    ]


def build(
    sides: list[ExperimentData],
    *,
    allow_different_data: bool = False,
    top: int = 10,
    seed: int | None = None,
    method: Method = "t",
) -> Comparison:
    """Compare every side with the first on the examples they share: every figure (means,
    spreads, tests, matrices, histograms, pass^k) is over those; ``sides`` keep all
    their runs, for the reports' per-example views."""
    if not sides:
        raise UserError("nothing to compare", hint="name at least one experiment or target")
    check_same_data(sides, allow_different_data)
    paired, warnings = on_shared_examples(sides)
    warnings += unmeasured_errors(paired)
    catalog, clashes = merged([(s.name, s.catalog) for s in paired])
    warnings += clashes
    keys = catalog.ordered(set().union(*(s.score_keys() for s in paired)))
    common = shared_examples(paired)
    if method == "bootstrap" and len(common) < BOOTSTRAP_MIN:
        raise UserError(
            f"the bootstrap needs {BOOTSTRAP_MIN} or more paired examples; these share "
            f"{len(common)}",
            hint="leave out --bootstrap: the t interval holds its level from a few examples",
        )
    extra: dict[str, Any] = {"method": method} | ({} if seed is None else {"seed": seed})
    summaries = [s.summary() for s in paired]
    rows = []
    narrowed: list[str] = []  # keys whose columns leave out examples a side scored
    for key in keys:
        per_example = [s.per_example(key) for s in paired]
        means = example_means(summaries, per_example, key)
        scored = [set(side) for side in per_example if side]
        if len(paired) > 1 and scored and set.union(*scored) != set.intersection(*scored):
            narrowed.append(catalog.info(key).narrow)
        vs_first = compared_with_first(per_example, catalog.info(key), extra)
        spreads = [summary.spread(key) for summary in summaries]
        rows.append(MetricRow(key, means, spreads, vs_first, catalog.info(key)))
    rows += run_rows(paired, summaries, extra, catalog)
    add_q_values(rows)
    warnings += concentration_warnings(rows, [s.target for s in paired])
    outcomes = outcome_keys(paired, catalog)
    calibration, calibration_errors = judges_against_people(sides)
    return Comparison(
        sides=sides,
        rows=rows,
        disagreements=disagreements(paired, outcomes, top),
        confusion=[confusion_matrix(s) for s in paired],
        histograms=histograms(paired, keys, catalog),
        common_examples=len(common),
        repeated=[summary.repeated() for summary in summaries],
        flaky=[summary.flaky() for summary in summaries],
        left_out=[len(s.example_ids()) - len(common) for s in sides],
        warnings=warnings,
        errors=[side_errors(s) for s in paired],
        note=_notes(
            unanswered_note(summaries),
            conversation_note(summaries, catalog, keys),
            ratio_note(rows, [s.target for s in paired]),
            narrowed_note(narrowed),
        ),
        catalog=catalog,
        method=method,
        calibration=calibration,
        calibration_errors=calibration_errors,
    )


def example_means(
    summaries: list[Summary], per_example: list[dict[str, float]], key: str
) -> list[float | None]:
    """Each side's column: the mean, over the examples every side scored, of each example's
    mean over its repetitions: the figures the paired Δ is the difference of, so a reader
    subtracting the columns gets the Δ (a side's repetitions that errored unevenly weigh
    its examples alike, as the test does). A side that scored none is n/a; with no example
    every scoring side shares, each shows its own examples' mean, and there is no Δ."""
    sides = [set(side) for side in per_example if side]  # a side that scored none: n/a
    shared = sorted(set.intersection(*sides)) if sides else []
    # nothing shared: no Δ, each side its own examples (its figure)
    return [
        None if not side else summary.mean(key, shared or None)
        for summary, side in zip(summaries, per_example, strict=True)
    ]


def judges_against_people(sides: list[ExperimentData]) -> tuple[list[Calibration], list[str]]:
    """Every side's calibrations, and a line per side whose labels could not be read."""
    found: list[Calibration] = []
    errors: list[str] = []
    for side in sides:
        items, error = calibrated(side.target, side.name, side.runs)
        found += items
        errors += [] if error is None else [f"{side.target}: {error}"]
    return found, errors


def compared_with_first(
    per_example: list[dict[str, float]], info: MetricInfo, extra: dict[str, Any]
) -> list[PairedComparison | None]:
    """Each later side against the first, by the construction of the metric's kind (decided
    once for the row, from its declaration and every side's values)."""
    kind = paired_kind(info, *(side.values() for side in per_example))
    return [paired_comparison(info, per_example[0], v, kind=kind, **extra) for v in per_example[1:]]


def add_q_values(rows: list[MetricRow]) -> None:
    """Benjamini–Hochberg q-values across every comparison of ``rows`` that was tested."""
    tested = [
        (row, index, c.p_value)
        for row in rows
        for index, c in enumerate(row.vs_first)
        if c is not None and c.p_value is not None
    ]
    q_values = benjamini_hochberg([p for _, _, p in tested])
    for row in rows:
        row.q_values = [None] * len(row.vs_first)
    for (row, index, _), q in zip(tested, q_values, strict=True):
        row.q_values[index] = q


def narrowed_note(labels: list[str]) -> str | None:
    """Where a side's column is not its run table's figure: a metric some side scored on
    examples another left unscored (every repetition without an answer) is over the
    examples all scored, as its Δ is."""
    if not labels:
        return None
    return (
        f"{', '.join(labels)}: each column is over the examples every side scored, as Δ is "
        "(the run table's figure is over each side's own)"
    )


def ratio_note(rows: list[MetricRow], names: list[str]) -> str | None:
    """A spend's robust companion to its mean difference: the median of the per-example
    ratios, which a few expensive examples cannot move."""
    found = [
        f"{row.label}: median per-example ratio {name} / {names[0]} ×{c.ratio_median:.2f}"
        for row in rows
        for name, c in zip(names[1:], row.vs_first, strict=True)
        if c is not None and c.ratio_median is not None
    ]
    return "; ".join(found) or None


def concentration_warnings(rows: list[MetricRow], names: list[str]) -> list[str]:
    """A line per skewed metric (a spend) whose difference a few examples carry."""
    found = []
    for row in rows:
        for name, c in zip(names[1:], row.vs_first, strict=True):
            if c is not None and c.concentrated:
                ratio = (
                    ""
                    if c.ratio_median is None
                    else f" (median per-example ratio ×{c.ratio_median:.2f})"
                )
                found.append(
                    f"{row.label}, {name}: a tenth of the examples carry over half of the "
                    f"difference; read the mean with care{ratio}"
                )
    return found


def _notes(*notes: str | None) -> str | None:
    """The comparison's notes in one line, or None when there is none."""
    return "; ".join(n for n in notes if n) or None


def side_errors(side: ExperimentData) -> SideErrors:
    errored = [r.error for r in side.runs if r.error is not None]
    interrupted = sum(1 for r in side.runs if r.status == INTERRUPTED)
    conversations = sum(1 for r in side.runs if r.turns is not None)
    return SideErrors(
        len(side.runs), len(errored), error_reasons(errored), interrupted, conversations
    )


def run_rows(
    sides: list[ExperimentData], summaries: list[Summary], extra: dict[str, Any], catalog: Catalog
) -> list[MetricRow]:
    """A row per run figure the registry has compare show (error rate, latency), when a
    side has a value: each side's figure (its summary's, the run table's; a side without
    timing has no latency: n/a; a baseline file's are those it was written with); the paired
    test where the figure is one per example."""
    figures = [summary.metrics() for summary in summaries]
    rows = []
    for key in catalog.run_metrics():
        declared = catalog.info(key)
        if not declared.compared:
            continue
        means = [f.get(key) for f in figures]
        vs_first: list[PairedComparison | None] = [None] * (len(sides) - 1)
        if declared.paired:
            found = [s.per_example_figure(declared.paired) for s in sides]
            per_example = [f or {} for f in found]  # a side that does not record it: unpaired
            vs_first = compared_with_first(per_example, declared, extra)
        if declared.quiet and not any(means):  # 0 (or unknown) on every side: no row
            continue
        if any(m is not None for m in means):
            rows.append(MetricRow(key, means, [None] * len(sides), vs_first, declared))
    return rows


def unmeasured_errors(sides: list[ExperimentData]) -> list[str]:
    """A line per side whose errored results were stored unscored, as agenteval did before
    it measured them from their traces: its trace figures leave those requests out, where a
    newer experiment's count them, so the sides' figures differ in what they are over."""
    warnings = []
    for side in sides:
        if not side.metric_keys:
            continue
        unscored = sum(1 for r in side.runs if r.error is not None and not r.scores)
        if unscored:
            warnings.append(
                f"{side.target}: {unscored:,} errored result(s) were stored without scores "
                "(by an agenteval that did not measure them): its trace figures (routing, "
                "handoffs, tokens, cost) leave them out"
            )
    return warnings


def on_shared_examples(sides: list[ExperimentData]) -> tuple[list[ExperimentData], list[str]]:
    """The sides cut to the examples every one ran, so each mean, matrix and count is over
    the same examples; and what that, or different dataset versions, mean for the reader."""
    warnings = []
    hashes = {s.dataset_hash for s in sides if s.dataset_hash}
    if len(hashes) > 1:
        warnings.append(
            "the sides ran different dataset versions: only the examples they share are paired"
        )
    common = shared_examples(sides)
    counts = [len(s.example_ids()) for s in sides]
    if len(sides) < 2 or all(n == len(common) for n in counts):
        return sides, warnings
    ran = ", ".join(f"{s.target} {n:,}" for s, n in zip(sides, counts, strict=True))
    warnings.append(
        f"the sides ran different examples ({ran}): every figure is over the "
        f"{len(common):,} examples all of them ran"
    )
    cut = [replace(s, runs=[r for r in s.runs if r.example_id in common]) for s in sides]
    return cut, warnings
