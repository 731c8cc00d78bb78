"""The gate's decision over every baseline check at once: Holm's step-down, read as
intervals.

Every check that could fail (:mod:`agenteval_cli.gating.margins`) is one family, across
targets and metrics. At each step the checks still standing are tested at the one-sided
level 2.5% / (how many still stand): those whose interval at that level lies wholly beyond
their allowed drop fail, and the next step tests the rest at the larger level that leaves.
It stops when a step fails none. This is Holm's step-down on the checks' p-values, so a run
that changed nothing fails at most 2.5% of the time however many checks there are; and
every check's interval is shown at the level it was decided at, so the interval printed is
the one the decision came from.

A check whose interval lies beyond its margin at 2.5% alone (the 95% interval compare
shows) but not at its step's level is *cleared* by the adjustment, and says so. A check on
no example that changed is *unchanged*; a check no result could fail is *untested*. Neither
is in the family: a test that cannot reject spends none of its level (Tarone 1990).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agenteval_cli.gating.margins import ALPHA, BaselineCheck, beyond_margin
from agenteval_cli.metrics.stats import PairedComparison, holm

Status = Literal["failed", "cleared", "passed", "unchanged", "untested"]


@dataclass(frozen=True)
class CheckOutcome:
    """What the gate decided about one check, and from which interval."""

    check: BaselineCheck
    status: Status
    level: float | None = None  # the one-sided level it was decided at
    comparison: PairedComparison | None = None  # the interval at that level
    p_value: float | None = None  # one-sided, against the margin
    adjusted: float | None = None  # Holm's adjusted p over the family
    family: int = 0  # how many checks the family holds

    @property
    def confidence(self) -> float | None:
        """The two-sided confidence of the interval shown."""
        return None if self.level is None else 1 - 2 * self.level


def decide(checks: Sequence[BaselineCheck]) -> list[CheckOutcome]:
    """Each check's outcome, in the order given."""
    family = [c for c in checks if c.untested is None and c.worse + c.better > 0]
    p_values = [c.p_value() for c in family]
    adjusted = dict(zip(map(id, family), holm(p_values), strict=True))
    p_of = dict(zip(map(id, family), p_values, strict=True))
    standing = list(family)
    decided: dict[int, tuple[Status, float, PairedComparison]] = {}
    while standing:
        level = ALPHA / len(standing)
        found = {id(c): c.at(level) for c in standing}
        failing = [c for c in standing if _beyond(c, found[id(c)])]
        if not failing:
            for check in standing:
                status: Status = "cleared" if check.beyond(ALPHA) else "passed"
                decided[id(check)] = (status, level, found[id(check)])
            break
        for check in failing:
            decided[id(check)] = ("failed", level, found[id(check)])
        standing = [c for c in standing if id(c) not in decided]
    outcomes = []
    for check in checks:
        if check.untested is not None:
            outcomes.append(CheckOutcome(check, "untested"))
        elif id(check) not in decided:
            outcomes.append(CheckOutcome(check, "unchanged"))
        else:
            status, level, comparison = decided[id(check)]
            outcomes.append(
                CheckOutcome(
                    check,
                    status,
                    level,
                    comparison,
                    p_of[id(check)],
                    adjusted[id(check)],
                    len(family),
                )
            )
    return outcomes


def _beyond(check: BaselineCheck, found: PairedComparison) -> bool:
    return beyond_margin(found, check.higher_is_better, check.margin)
