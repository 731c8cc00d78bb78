"""Files that each hold several targets' experiments (a two-target spec's ``run --json`` or
baseline), compared file against file: paired by target name, one comparison per target,
so a new supervisor is set beside the old supervisor and never beside the old swarm."""

from __future__ import annotations

from collections.abc import Sequence

from agenteval_cli.core.errors import UserError
from agenteval_cli.results.sources import ExperimentData


def by_target(
    groups: Sequence[Sequence[ExperimentData]], names: Sequence[str]
) -> list[list[ExperimentData]] | None:
    """Per target of the first argument, its experiment from each argument (``groups[i]``
    what ``names[i]`` named), in the order given; None unless every argument holds more
    than one experiment (the sides are compared as listed). A target one argument lacks, or
    one named twice in an argument, is a UserError."""
    if len(groups) < 2 or any(len(group) <= 1 for group in groups):
        return None
    targets = [side.target for side in groups[0]]
    for name, group in zip(names, groups, strict=True):
        found = [side.target for side in group]
        twice = sorted({t for t in found if found.count(t) > 1})
        if twice:
            raise UserError(
                f"{name} holds target {twice[0]!r} more than once: it cannot be paired by "
                "target name",
                hint="name the experiments themselves, one each",
            )
        missing = [t for t in targets if t not in found]
        extra = [t for t in found if t not in targets]
        if missing or extra:
            what = (
                f"no experiment of target {missing[0]!r}"
                if missing
                else (f"target {extra[0]!r}, which {names[0]} does not hold")
            )
            raise UserError(
                f"{name} holds {what}: the files' experiments are paired by target name "
                f"({', '.join(targets)} in {names[0]})",
                hint="compare files written by the same spec, or name the experiments",
            )
    return [
        [next(side for side in group if side.target == target) for group in groups]
        for target in targets
    ]
