"""Planning a comparison: how many examples (and repetitions) it needs to detect a difference.

The spread comes from the caller (``discordance`` for a 0/1 metric, ``sd`` otherwise) or
from a pilot: two stored experiments paired by example, as ``agenteval compare`` pairs
them. A pilot metric is planned as 0/1 (McNemar) when its catalog formats it as a percent,
every value either side scored is 0 or 1, and each side has one repetition per example;
otherwise as a score on the per-example means, split into between- and within-example
variance when the pilot has repetitions (:mod:`agenteval_cli.metrics.planning`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval_cli.core.errors import UserError
from agenteval_cli.metrics import planning
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.spec.fields import MAX_REPETITIONS
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from agenteval_cli.metrics.catalog import Catalog
    from agenteval_cli.results.sources import ExperimentData

DEFAULT_REPETITIONS = (1, 2, 3, 5)


@dataclass(frozen=True)
class Plan:
    """A plan's answer: examples needed per repetition count, and what it assumed."""

    metric: str
    difference: float
    binary: bool  # planned with McNemar's test (one repetition per side)
    alpha: float
    power: float
    examples: dict[int, int]  # repetitions per side -> examples needed
    discordance: float | None = None
    sd: float | None = None  # sd of the per-example differences (at the pilot's k)
    within_sd: float | None = None
    between_sd: float | None = None
    pilot: tuple[str, str] | None = None  # the two experiments' names
    estimated: bool = False  # the spread is the pilot's (not given beside it)
    pilot_examples: int | None = None
    pilot_repetitions: float | None = None
    pilot_differing: int | None = None  # 0/1: examples where the pilot's sides differ
    detectable: float | None = None  # smallest |d| at the pilot's n (and k); None: none
    catalog: Catalog | None = None
    notes: list[str] = field(default_factory=list)


def plan(
    metric: str,
    difference: float,
    *,
    discordance: float | None = None,
    sd: float | None = None,
    repetitions: int | None = None,
    pilot: tuple[str, str] | None = None,
    store: str | Path | None = None,
    alpha: float = planning.ALPHA,
    power: float = planning.POWER,
) -> Plan:
    """How many examples a paired comparison of ``metric`` needs to detect ``difference``
    (in the metric's unit: 0.05 is 5 pp of a rate) at two-sided ``alpha`` with ``power``,
    for ``repetitions`` per side (by default 1, 2, 3 and 5 where the spread allows)."""
    _check_arguments(difference, discordance, sd, repetitions, alpha, power)
    try:
        return _plan(metric, difference, discordance, sd, repetitions, pilot, store, alpha, power)
    except planning.TooManyExamples as exc:
        raise UserError(
            str(exc), hint="plan for a larger --difference, or a smaller spread"
        ) from None


def _check_arguments(
    difference: float,
    discordance: float | None,
    sd: float | None,
    repetitions: int | None,
    alpha: float,
    power: float,
) -> None:
    """Each argument within what the formulas compute: finite, positive where a spread or
    a level is, a level that leaves a finite normal quantile."""
    if not math.isfinite(difference) or difference == 0:
        raise UserError(
            f"--difference must be a finite number other than 0, not {difference:g}",
            hint="give the difference to detect, in the metric's unit",
        )
    if discordance is not None and sd is not None:
        raise UserError("give --discordance (a 0/1 metric) or --sd (a score), not both")
    if discordance is not None and not 0 < discordance <= 1:
        raise UserError(
            f"--discordance must lie in (0, 1], not {discordance:g}",
            hint="give the share of examples where the two sides differ",
        )
    if sd is not None and not 0 < sd < math.inf:
        raise UserError(
            f"--sd must be a finite number above 0, not {sd:g}",
            hint="give the sd of the per-example differences",
        )
    if not planning.MIN_ALPHA <= alpha < 1:
        raise UserError(
            f"--alpha must lie in [{planning.MIN_ALPHA:g}, 1), not {alpha:g}",
            hint="give the two-sided level of the test, such as 0.05",
        )
    if not alpha / 2 < power < 1:
        raise UserError(
            f"--power must lie between --alpha/2 ({alpha / 2:g}) and 1, not {power:g}",
            hint="give the chance of detecting the difference, such as 0.8",
        )
    if repetitions is not None and not 1 <= repetitions <= MAX_REPETITIONS:
        raise UserError(
            f"--repetitions must lie in [1, {MAX_REPETITIONS}], not {repetitions}",
            hint="a spec runs at most that many repetitions",
        )


def _plan(
    metric: str,
    difference: float,
    discordance: float | None,
    sd: float | None,
    repetitions: int | None,
    pilot: tuple[str, str] | None,
    store: str | Path | None,
    alpha: float,
    power: float,
) -> Plan:
    if pilot is not None:
        return _from_pilot(
            metric, difference, discordance, sd, repetitions, pilot, store, alpha, power
        )
    if discordance is not None:
        return _binary(metric, difference, discordance, repetitions, alpha, power)
    if sd is not None:
        k = repetitions or 1
        return _scores(
            metric,
            difference,
            planning.PilotSpread(0, k, sd, None, None),
            repetitions,
            alpha,
            power,
        )
    raise UserError(
        "nothing to plan from",
        hint="give --discordance (0/1 metrics), --sd (scores) or --pilot EXP_A EXP_B",
    )


def _binary(
    metric: str,
    difference: float,
    discordance: float,
    repetitions: int | None,
    alpha: float,
    power: float,
) -> Plan:
    try:
        planning.check_discordance(difference, discordance)
    except ValueError as exc:
        raise UserError(str(exc), hint="a 0/1 difference can be at most the discordance") from None
    if repetitions not in (None, 1):
        raise UserError(
            "a McNemar plan is for one repetition per side",
            hint="plan repetitions with --sd, or a pilot run with repetitions",
        )
    needed = planning.mcnemar_examples(difference, discordance, alpha=alpha, power=power)
    return Plan(metric, difference, True, alpha, power, {1: needed}, discordance=discordance)


def _scores(
    metric: str,
    difference: float,
    spread: planning.PilotSpread,
    repetitions: int | None,
    alpha: float,
    power: float,
) -> Plan:
    if not spread.sd > 0:
        raise UserError(
            f"the sd of the per-example differences must be above 0, not {spread.sd:g}",
            hint="give --sd above 0 (or a pilot whose sides differ on some examples)",
        )
    asked = (repetitions,) if repetitions else DEFAULT_REPETITIONS
    examples: dict[int, int] = {}
    for k in asked:
        sd_k = spread.sd_at(k)
        if sd_k is not None and sd_k > 0:
            examples[k] = planning.paired_examples(difference, sd_k, alpha=alpha, power=power)
    if not examples:
        raise UserError(
            f"the spread for {repetitions} repetition(s) per side is unknown",
            hint="a pilot with repetitions tells how much they help; or give --sd for that k",
        )
    return Plan(
        metric,
        difference,
        False,
        alpha,
        power,
        examples,
        sd=spread.sd,
        within_sd=spread.within_sd,
        between_sd=spread.between_sd,
    )


def _from_pilot(
    metric: str,
    difference: float,
    discordance: float | None,
    sd: float | None,
    repetitions: int | None,
    names: tuple[str, str],
    store: str | Path | None,
    alpha: float,
    power: float,
) -> Plan:
    from agenteval_cli.results.sources import load

    where = find_store(Path.cwd()) if store is None else Path(store)
    sides = load(list(names), where)
    if len(sides) != 2:
        raise UserError(f"--pilot needs two experiments, found {len(sides)} in {', '.join(names)}")
    side_a, side_b = sides
    for side in sides:
        if metric not in side.score_keys():
            known = ", ".join(sorted(side_a.score_keys() & side_b.score_keys())) or "none"
            raise UserError(
                f"unknown metric {metric!r}: experiment {side.name} has no score for it",
                hint=f"metrics both pilot experiments scored: {known}",
            )
    values_a, values_b = _repetitions(side_a, metric), _repetitions(side_b, metric)
    shared = set(values_a) & set(values_b)
    if len(shared) < 2:
        raise UserError(
            f"the pilot experiments share {len(shared)} example(s) scored for {metric}, not 2+",
            hint="give two experiments run on the same dataset",
        )
    named = (side_a.name, side_b.name)
    binary = _is_binary(side_a, side_b, metric, values_a, values_b)
    if binary and sd is not None:
        raise UserError(
            f"{metric} is 0/1 with one repetition in the pilot: give --discordance, not --sd"
        )
    if not binary and discordance is not None:
        raise UserError(
            f"{metric} is not a 0/1 outcome with one repetition in the pilot: "
            "give --sd, not --discordance"
        )
    if binary:
        firsts_a = {e: v[0] for e, v in values_a.items()}
        firsts_b = {e: v[0] for e, v in values_b.items()}
        differing, n = planning.pilot_discordance(firsts_a, firsts_b)
        estimated = discordance is None
        if discordance is None:
            if differing == 0:
                raise UserError(
                    f"the pilot's sides agree on all {n} examples for {metric}, "
                    "so it cannot estimate the discordance",
                    hint="give --discordance",
                )
            discordance = differing / n
        found = _binary(metric, difference, discordance, repetitions, alpha, power)
        return replace(
            found,
            pilot=named,
            estimated=estimated,
            catalog=side_a.catalog,
            pilot_examples=n,
            pilot_repetitions=1.0,
            pilot_differing=differing,
            detectable=planning.mcnemar_detectable(n, discordance, alpha=alpha, power=power),
        )
    measured = planning.pilot_spread(values_a, values_b)
    spread = measured
    if sd is not None:
        spread = planning.PilotSpread(measured.examples, repetitions or 1, sd, None, None)
    found = _scores(metric, difference, spread, repetitions, alpha, power)
    return replace(
        found,
        pilot=named,
        estimated=sd is None,
        catalog=side_a.catalog,
        pilot_examples=measured.examples,
        pilot_repetitions=measured.repetitions,
        detectable=planning.paired_detectable(spread.examples, spread.sd, alpha=alpha, power=power),
    )


def _repetitions(side: ExperimentData, metric: str) -> dict[str, list[float]]:
    """Per example, the values of its repetitions that scored ``metric``."""
    values: dict[str, list[float]] = {}
    for run in side.runs:
        score = run.scores.get(metric)
        if score is not None:
            values.setdefault(run.example_id, []).append(float(score))
    return values


def _is_binary(
    side_a: ExperimentData,
    side_b: ExperimentData,
    metric: str,
    values_a: dict[str, list[float]],
    values_b: dict[str, list[float]],
) -> bool:
    """0/1 as compare reads it (:func:`paired_kind`), with one repetition per example and
    side: the pilot's discordance is then what the comparison's test counts."""
    single = all(len(vs) == 1 for side in (values_a, values_b) for vs in side.values())
    firsts = [[vs[0] for vs in side.values()] for side in (values_a, values_b)]
    info = side_a.catalog.info(metric)
    return single and paired_kind(info, *firsts) == "binary"
