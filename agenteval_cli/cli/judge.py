"""``agenteval judge ...``: how far a spec's judges can be trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    DebugOption,
    EnvFileOption,
    StoreOption,
    app,
    set_spec_env,
    stderr,
    stdout,
    user_errors,
)

judge_app = typer.Typer(help="Check judges against people's labels.", no_args_is_help=True)
app.add_typer(judge_app, name="judge")


@judge_app.command("calibrate")
def judge_calibrate(
    spec_path: Annotated[
        Path, typer.Argument(metavar="SPEC", help="The spec whose judges to check.")
    ],
    experiment: Annotated[
        list[str] | None,
        typer.Option(
            "--experiment",
            "-e",
            metavar="NAME",
            help="Check this stored experiment instead of the spec's latest run (repeatable).",
        ),
    ] = None,
    store_path: StoreOption = DEFAULT_STORE,
    env_file: EnvFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Agreement of each judge with the people who labelled rows (outputs.human): per
    target and score key, n, raw agreement, Cohen's kappa with its 95% interval and the
    confusion counts. Runs nothing: reads the stored results.

    Example: agenteval judge calibrate configs/routing.yaml"""
    from agenteval_cli.api import calibrate_judges
    from agenteval_cli.report.calibration import calibration_lines

    with user_errors(debug):
        set_spec_env(spec_path, env_file)
        found, notes = calibrate_judges(
            spec_path, experiments=experiment or (), store=store_path, env_file=env_file
        )
    out = stdout()
    for line in calibration_lines(found):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    for note in notes:
        stderr().print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
