"""The gate refuses a judge people have not found reliable: the spec's ``min_kappa:``.

A score key with ``min_kappa`` gates a build only when its kappa against people's labels
(:mod:`agenteval_cli.results.calibration`) reaches it in every experiment scoring it. A
key below it, or with no labelled row, makes a gated run exit 3, saying why, rather
than pass or fail the build on a judge nobody checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agenteval_cli.core.errors import ExitCode, UserError
from agenteval_cli.results.calibration import LABELS_FIELD, calibrate
from agenteval_cli.results.sources import ExperimentData


class UncalibratedJudge(UserError):
    """A gate asked of a judge below its ``min_kappa``: the run cannot be judged."""

    exit_code = ExitCode.RUN_ERRORS


def uncalibrated(sides: Iterable[ExperimentData], min_kappa: Mapping[str, float]) -> list[str]:
    """Why each key with a ``min_kappa`` cannot gate, one phrase per target and key."""
    reasons = []
    for side in sides:
        found = {c.key: c.agreement for c in calibrate(side.target, side.name, side.runs)}
        for key, least in min_kappa.items():
            if key not in side.score_keys():
                continue  # the experiment does not score it: nothing gated on it
            a = found.get(key)
            if a is None:
                reasons.append(
                    f"{side.target}: no row labels {key!r} (outputs.{LABELS_FIELD}), so its "
                    f"kappa against people is unknown (min_kappa {least:g})"
                )
            elif a.kappa is None or a.kappa < least:
                shown = "undefined" if a.kappa is None else f"{a.kappa:.2f}"
                reasons.append(
                    f"{side.target}: {key!r} agrees with people at kappa {shown} over "
                    f"{a.n} labelled result(s), below min_kappa {least:g}"
                )
    return reasons


def refuse_uncalibrated(sides: Iterable[ExperimentData], min_kappa: Mapping[str, float]) -> None:
    """Raise :class:`UncalibratedJudge` (exit 3) when a judge may not gate."""
    reasons = uncalibrated(sides, min_kappa)
    if reasons:
        raise UncalibratedJudge(
            "the gate refuses judges people have not confirmed: " + "; ".join(reasons),
            hint="label more rows under outputs.human, improve the judge, or lower min_kappa "
            "(agenteval judge calibrate SPEC shows its agreement)",
        )
