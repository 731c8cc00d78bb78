"""``agenteval rescore`` and ``agenteval import``: a spec's evaluators, pricing and gate over
experiments that already ran, calling no target (stored ones scored again, LangSmith ones
brought into the store)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval_cli.cli.common import (
    DEFAULT_STORE,
    ByAgentOption,
    DebugOption,
    EnvFileOption,
    StoreOption,
    UpdatePricesOption,
    app,
    fetch_prices,
    is_stdout,
    json_on_stdout,
    set_spec_env,
    user_errors,
)
from agenteval_cli.cli.outputs import (
    BaselineOption,
    RunOutputs,
    SaveBaselineOption,
    with_report_options,
)
from agenteval_cli.core.errors import ExitCode

SpecArgument = Annotated[Path, typer.Argument(metavar="SPEC", help="The experiment YAML file.")]
JsonOption = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="PATH",
        help="Also write every result as JSON here; '-' writes it to stdout.",
    ),
]


@app.command()
def rescore(
    spec_path: SpecArgument,
    experiments: Annotated[
        list[str],
        typer.Argument(
            metavar="EXPERIMENT...",
            help="Stored experiments (a name, id or unique prefix, or a target name for its "
            "latest experiment).",
        ),
    ],
    json_path: JsonOption = None,
    by_agent: ByAgentOption = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No table: a one-line verdict at the end.")
    ] = False,
    reprice: Annotated[
        bool,
        typer.Option(
            "--reprice",
            help="Price every model call again with SPEC's pricing:, else the price data "
            "in use, instead of keeping the price each call's run gave it.",
        ),
    ] = False,
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            metavar="FILE",
            help="Price every model call again with this YAML file's prices first (the "
            "shape of SPEC's pricing:, USD per 1M tokens), then SPEC's and the price "
            "data; implies --reprice.",
        ),
    ] = None,
    update_prices: UpdatePricesOption = False,
    store_path: StoreOption = DEFAULT_STORE,
    env_file: EnvFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Score stored experiments again with SPEC's evaluators, calling no target: one new
    experiment each, over the stored outputs and traces.

    Each model call keeps the price its run gave it (docs/cost.md); --reprice or
    --prices FILE price every call again, and the new experiment keeps the new prices.

    Exit codes: 0 success; 2 bad input; 3 an evaluator failed on every result.

    Example: agenteval rescore configs/routing.yaml supervisor swarm

    Example: agenteval rescore configs/routing.yaml swarm --prices prices.yaml"""
    from agenteval_cli import api
    from agenteval_cli.cli.run import check_quiet, rescore_stored
    from agenteval_cli.core.errors import UserError

    with json_on_stdout(is_stdout(json_path)), user_errors(debug):
        check_quiet(quiet, by_agent)
        if update_prices and not (reprice or prices):
            raise UserError(
                "--update-prices goes with --reprice: a rescore keeps each call's price",
                hint="add --reprice to price every call with the newest price data",
            )
        set_spec_env(spec_path, env_file)
        spec = api.load(spec_path)
        if update_prices:
            fetch_prices(False)
        rescore_stored(
            spec,
            experiments,
            store_path,
            json_path,
            by_agent,
            quiet=quiet,
            env_file=env_file,
            reprice=reprice,
            prices=prices,
        )


@app.command("import")
@with_report_options()
def import_experiments(
    spec_path: SpecArgument,
    experiments: Annotated[
        list[str] | None,
        typer.Argument(metavar="[EXPERIMENT...]", help="LangSmith experiments (a unique prefix)."),
    ] = None,
    otlp: Annotated[
        list[Path] | None,
        typer.Option(
            "--otlp",
            metavar="PATH",
            help="Recorded OpenTelemetry traces instead: an OTLP JSON file (a Collector's file "
            "exporter's); repeat for more files (docs/otel.md, Import).",
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            metavar="NAME",
            help="With --otlp: the spec's target that recorded the traces (needed when the "
            "spec has several).",
        ),
    ] = None,
    json_path: JsonOption = None,
    by_agent: ByAgentOption = False,
    reports: dict[str, Path | None] | None = None,
    baseline: BaselineOption = None,
    save_baseline: SaveBaselineOption = None,
    update_prices: UpdatePricesOption = False,
    store_path: StoreOption = DEFAULT_STORE,
    env_file: EnvFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Import LangSmith experiments or recorded OpenTelemetry traces, calling no target.

    They are stored, then reported and gated on with SPEC's evaluators' metrics, pricing
    and thresholds, as after a run.

    LangSmith: importing again refreshes an experiment; needs LANGSMITH_API_KEY.

    Traces (--otlp): each trace is one request of the target, matched to its dataset row
    by the agenteval.example_id attribute or by its input, and scored by SPEC's evaluators
    as a new experiment; a row no trace answers is an errored result.

    Exit codes: 0 success; 1 gate failed; 2 bad input; 3 too many rows errored or had no
    trace (max_error_rate); 4 LangSmith failed.

    Example: agenteval import configs/routing.yaml supervisor-v1-1a2b3c4d swarm-v1-5e6f7a8b

    Example: agenteval import configs/routing.yaml --otlp traces.jsonl --target swarm"""
    from agenteval_cli import api
    from agenteval_cli.cli.experiments import run_from_langsmith, run_from_traces
    from agenteval_cli.core.errors import UserError

    outputs = RunOutputs(reports or {}, baseline, save_baseline)
    with json_on_stdout(is_stdout(json_path)), user_errors(debug):
        if otlp and experiments:
            raise UserError(
                "give LangSmith experiments or --otlp files, not both",
                hint="import each in its own command",
            )
        if not otlp and not experiments:
            raise UserError(
                "nothing to import",
                hint="name LangSmith experiments, or OTLP JSON files with --otlp PATH",
            )
        if target is not None and not otlp:
            raise UserError("--target goes with --otlp", hint="leave it out for LangSmith")
        set_spec_env(spec_path, env_file)
        spec = api.load(spec_path)
        if update_prices:
            fetch_prices(False)
        if otlp:
            run_from_traces(
                spec,
                otlp,
                target,
                store_path,
                json_path,
                outputs,
                by_agent=by_agent,
                env_file=env_file,
            )
            return
        if not run_from_langsmith(
            spec,
            experiments or [],
            store_path,
            json_path,
            outputs,
            by_agent=by_agent,
            env_file=env_file,
        ):
            raise typer.Exit(ExitCode.GATE_FAILED)
