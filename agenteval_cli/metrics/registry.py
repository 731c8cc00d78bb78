"""The metric registry: what a metric key is, declared by whatever produces it.

Every built-in evaluator declares the keys it scores when it is registered (see
``agenteval_cli.evaluators.registry.register``); the run's own figures (error rate, latency)
are declared here. Users' evaluators declare theirs in the spec or on their
function, and those declarations go into the experiment's catalog
(:mod:`agenteval_cli.metrics.catalog`), not here. A key nobody declared is a plain number
where higher is better, shown under its name.

The reports and the gate read a metric's label, direction and format from a catalog, never
from its name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

Direction = Literal["higher", "lower"]
Format = Literal["percent", "count", "money", "duration", "number"]
Aggregation = Literal["mean", "sum"]
Kind = Literal["outcome", "quantity"]
Scope = Literal["result", "run"]
Level = Literal["request", "conversation"]
AcrossTurns = Literal["mean", "sum"]


class MetricFields(TypedDict, total=False):
    """What a spec may say of how a metric reads (an evaluator item's ``metrics: {key:
    {...}}``): the fields :func:`with_options` takes."""

    label: str
    lower_is_better: bool
    direction: Direction
    format: Format
    kind: Kind
    binary: bool
    pass_mark: str | float
    needs_answer: bool
    level: Level
    across_turns: AcrossTurns


MetricFields.__pydantic_config__ = {"extra": "forbid"}  # type: ignore[attr-defined]  # as with_options

DIRECTIONS = ("higher", "lower")
FORMATS = ("percent", "count", "money", "duration", "number")
AGGREGATIONS = ("mean", "sum")
KINDS = ("outcome", "quantity")
LEVELS = ("request", "conversation")
ACROSS_TURNS = ("mean", "sum")


@dataclass(frozen=True)
class MetricInfo:
    """One metric key and how to read it.

    ``kind``: an outcome (a 0–1 rate or true/false: compared per example, checked against a
    pass mark) or a quantity (tokens, cost, a count: never a failure).
    ``binary``: an outcome that is 0 or 1 for each result (true/false: an exact routing, a
    resolved conversation); with repetitions, pass@k, pass^k and the flaky examples are its.
    ``scope``: ``result`` for a score each result has, ``run`` for a figure of the whole run
    (error rate, latency, a total), which no single example is checked against.
    ``aggregation``: ``mean`` over the results, or ``sum`` of the keys in ``of``.
    ``level``: ``request`` for a score of one target call (of a single-turn row, or of each
    turn of a conversation, where the conversation's own is its turns' ``across_turns``:
    their ``sum`` for a count or a spend, their ``mean`` for a rate or an outcome), or
    ``conversation`` for a score only a conversation has as a whole (turns, resolved).
    """

    key: str
    label: str = ""
    direction: Direction = "higher"
    format: Format = "number"
    aggregation: Aggregation = "mean"
    kind: Kind = "outcome"
    scope: Scope = "result"
    short: str = ""  # a narrow label, for the compare table on a terminal
    abbrev: str = ""  # the shortest, beside a value in a cell of several (compare's examples)
    pass_mark: str | None = None  # an example's check when the spec sets no threshold
    binary: bool = False
    under: str | None = None  # the run table shows it on a dim line under that metric
    of: tuple[str, ...] = ()  # a sum: the per-result keys it totals
    shown: bool = True  # False: the run table shows it only through a total
    headline: bool = False  # shown beside each target of an example in the HTML report
    distribution: bool = False  # compare and the HTML report chart how its values spread
    # A run figure compare and the HTML report give a row of the comparison table: its mean
    # per side; and ``paired`` names what it is per example, so the sides are also tested
    # example by example ("errors": the share of an example's repetitions that errored).
    compared: bool = False
    paired: str | None = None
    # Whether a result needs a final answer to have this score. A result that raised or
    # stopped at interrupt() has none: such keys are null for it (with the reason), while
    # those read from the trace alone (agents, handoffs, tokens, cost) are still scored.
    # True unless declared otherwise, so a score nobody said reads only the trace is never
    # computed from a missing answer.
    needs_answer: bool = True
    quiet: bool = False  # a run figure the run table leaves out while it is 0 everywhere
    reported: bool = False  # the run table leaves it out while no result has a value
    # A sum that is unknown (None) as soon as one result's part is null: a total that left
    # out the requests it could not price would read as the whole spend.
    complete: bool = False
    level: Level = "request"
    across_turns: AcrossTurns = "mean"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("direction", self.direction, DIRECTIONS),
            ("format", self.format, FORMATS),
            ("aggregation", self.aggregation, AGGREGATIONS),
            ("kind", self.kind, KINDS),
            ("level", self.level, LEVELS),
            ("across_turns", self.across_turns, ACROSS_TURNS),
        ):
            if value not in allowed:
                raise ValueError(
                    f"metric {self.key!r}: {name} must be one of {', '.join(allowed)}, "
                    f"got {value!r}"
                )
        if not self.label:
            object.__setattr__(self, "label", self.key)

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def narrow(self) -> str:
        return self.short or self.label

    @property
    def tiny(self) -> str:
        return self.abbrev or self.narrow


def metric(
    key: str,
    label: str = "",
    *,
    lower: bool = False,
    fmt: Format = "number",
    quantity: bool = False,
    **more: Any,
) -> MetricInfo:
    """A metric declaration in one line: ``metric("ping_pong", "ping-pong rate", lower=True,
    fmt="percent")``; other :class:`MetricInfo` fields by keyword."""
    return MetricInfo(
        key,
        label,
        direction="lower" if lower else "higher",
        format=fmt,
        kind="quantity" if quantity else "outcome",
        **more,
    )


# The built-in metrics, declared as their evaluators are registered (at import): what an
# experiment's catalog falls back to (see :mod:`agenteval_cli.metrics.catalog`). Nothing
# declares here while a run is prepared or read: an experiment's own declarations travel
# with it.
METRICS: dict[str, MetricInfo] = {}
# What a threshold may name instead of a key: an evaluator's name for its headline key.
ALIASES: dict[str, str] = {}


def declare(*infos: MetricInfo) -> None:
    """Declare built-in ``infos``; a later declaration of a key replaces the earlier one."""
    for declared in infos:
        METRICS[declared.key] = declared


def with_options(base: MetricInfo, options: dict[str, Any]) -> MetricInfo:
    """``base`` with a user's ``label``, ``direction`` (or ``lower_is_better``), ``format``,
    ``kind``, ``binary``, ``pass_mark``, ``needs_answer``, ``level`` and ``across_turns`` on top;
    ValueError for an unknown field or a value that is none of the allowed ones."""
    unknown = set(options) - set(MetricFields.__annotations__)
    if unknown:
        raise ValueError(
            f"metric {base.key!r}: unknown field(s) {', '.join(sorted(unknown))}; "
            "give label, direction (higher or lower), format, kind, binary, needs_answer, "
            "level or across_turns"
        )
    for flag in ("needs_answer", "binary"):
        if options.get(flag) is not None and not isinstance(options[flag], bool):
            raise ValueError(
                f"metric {base.key!r}: {flag} must be true or false, got {options[flag]!r}"
            )
    changes: dict[str, Any] = {}
    if options.get("label") is not None:
        changes["label"] = str(options["label"])
    if options.get("lower_is_better") is not None:
        changes["direction"] = "lower" if options["lower_is_better"] else "higher"
    if options.get("direction") is not None:
        changes["direction"] = options["direction"]
    if options.get("format") is not None:
        changes["format"] = options["format"]
    if options.get("kind") is not None:
        changes["kind"] = options["kind"]
    if options.get("pass_mark") is not None:
        changes["pass_mark"] = str(options["pass_mark"])
    for flag in ("needs_answer", "binary"):
        if options.get(flag) is not None:
            changes[flag] = options[flag]
    for name in ("level", "across_turns"):
        if options.get(name) is not None:
            changes[name] = options[name]
    return replace(base, **changes) if changes else base


declare(
    metric(
        "error_rate",
        "error rate",
        lower=True,
        fmt="percent",
        scope="run",
        compared=True,
        paired="errors",
    ),
    metric(
        "interrupt_rate",
        "interrupt rate",
        lower=True,
        fmt="percent",
        scope="run",
        compared=True,
        paired="interrupts",
        quiet=True,
    ),
    metric(
        "latency_p50_s",
        "latency p50",
        lower=True,
        fmt="duration",
        quantity=True,
        scope="run",
        compared=True,
    ),
    metric(
        "latency_p95_s",
        "latency p95",
        lower=True,
        fmt="duration",
        quantity=True,
        scope="run",
        compared=True,
    ),
)
