"""``agenteval plan``: how many examples (and repetitions) a comparison needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    StoreOption,
    app,
    stdout,
    user_errors,
)

if TYPE_CHECKING:
    from agenteval_cli.api import Plan


@app.command()
def plan(
    metric: Annotated[
        str, typer.Option("--metric", metavar="KEY", help="The metric to compare, by its key.")
    ],
    difference: Annotated[
        float,
        typer.Option(
            "--difference",
            metavar="D",
            help="The difference to detect, in the metric's unit (0.05 is 5 pp of a rate).",
        ),
    ],
    discordance: Annotated[
        float | None,
        typer.Option(
            "--discordance",
            metavar="Q",
            help="0/1 metrics: the share of examples where the two sides differ.",
        ),
    ] = None,
    sd: Annotated[
        float | None,
        typer.Option("--sd", metavar="S", help="Scores: the sd of the per-example differences."),
    ] = None,
    repetitions: Annotated[
        int | None,
        typer.Option(
            "--repetitions",
            "-k",
            metavar="K",
            help="Plan for K repetitions per side only (default: 1, 2, 3 and 5).",
        ),
    ] = None,
    pilot: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--pilot",
            metavar="EXP_A EXP_B",
            help="Estimate the spread from two stored experiments on the same examples.",
        ),
    ] = None,
    alpha: Annotated[
        float, typer.Option("--alpha", metavar="A", help="Two-sided level of the test.")
    ] = 0.05,
    power: Annotated[
        float, typer.Option("--power", metavar="P", help="Chance of detecting the difference.")
    ] = 0.8,
    store_path: StoreOption = DEFAULT_STORE,
    debug: DebugOption = False,
) -> None:
    """How many examples (and repetitions) a comparison needs to detect a difference.

    Per number of repetitions; with --pilot, from two stored experiments' discordance (0/1
    metrics) or their between- and within-example spread, with the smallest difference the
    pilot's own examples detect. Runs nothing.

    Example: agenteval plan --metric routing_accuracy --difference 0.1 --discordance 0.2"""
    from agenteval_cli.api import plan as make_plan

    with user_errors(debug):
        found = make_plan(
            metric,
            difference,
            discordance=discordance,
            sd=sd,
            repetitions=repetitions,
            pilot=pilot,
            store=store_path,
            alpha=alpha,
            power=power,
        )
    out = stdout()
    for line in plan_lines(found):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def plan_lines(found: Plan) -> list[str]:
    """The plan as one short block: what is detected, from which spread, examples per k."""
    from agenteval_cli.metrics.catalog import BUILT_IN

    catalog = found.catalog or BUILT_IN
    percent = found.binary or catalog.is_percent(found.metric)

    def amount(value: float) -> str:
        return f"{value * 100:.1f} pp" if percent else f"{value:.4g}"

    test = "McNemar's test" if found.binary else "a paired test"
    lines = [
        f"{found.metric}: to detect a difference of {amount(abs(found.difference))} "
        f"(two-sided {found.alpha:g}, power {found.power:g}, {test}, normal approximation)"
    ]
    source = "given"
    if found.pilot is not None and found.estimated:
        a, b = found.pilot
        k = f", {found.pilot_repetitions:g} repetition(s)" if not found.binary else ""
        source = f"from the pilot {a} vs {b}: {found.pilot_examples} examples{k}"
    if found.binary and found.discordance is not None:
        differing = (
            f", {found.pilot_differing} of {found.pilot_examples} differ"
            if found.pilot_differing is not None and found.estimated
            else ""
        )
        lines.append(f"  discordance {found.discordance:.1%} ({source}{differing})")
    elif found.sd is not None:
        split = ""
        if found.within_sd is not None and found.between_sd is not None:
            split = (
                f"; between examples {amount(found.between_sd)}, "
                f"within an example {amount(found.within_sd)} per repetition"
            )
        lines.append(f"  sd of per-example differences {amount(found.sd)} ({source}{split})")
    needed = ", ".join(f"k={k}: {n}" for k, n in found.examples.items())
    lines.append(f"  examples needed (k repetitions per side): {needed}")
    if found.pilot is not None:
        at = f"at the pilot's {found.pilot_examples} examples"
        if found.detectable is None:
            lines.append(f"  {at}: no difference is detectable")
        else:
            lines.append(f"  {at}: detectable difference {amount(found.detectable)}")
    return lines
