"""What every command shares: the Typer app, consoles, the store option, error handling.

Heavy libraries (langchain, langgraph, langsmith) are imported inside commands so that
``agenteval --help`` starts fast.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, redirect_stdout, suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, TextIO

import typer
from typer.core import TyperGroup

from agenteval_cli.core import stops
from agenteval_cli.core.errors import ExitCode, UserError
from agenteval_cli.store import DEFAULT_STORE as DEFAULT_STORE  # re-exported: every option
from agenteval_cli.store import find_store

if TYPE_CHECKING:
    from rich.console import Console
    from typer._click import Command, Context, HelpFormatter  # what TyperGroup's methods take

    from agenteval_cli.store.db import ExperimentRecord, Store


class RootGroup(TyperGroup):
    """The ``agenteval`` group: two start-up savings that change no behaviour, plain
    placeholders in every command's help (:mod:`agenteval_cli.cli.placeholders`), and
    how every command ends when stopped or when its reader goes away
    (:func:`command_endings`), its help included."""

    def make_context(self, *args: Any, **kwargs: Any) -> Context:
        with command_endings():  # --help is printed while the context is made
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Context) -> Any:
        with command_endings():
            return super().invoke(ctx)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        # Typer's renderer imports Markdown and Pygments; see root_help.
        if self.rich_markup_mode is None:
            return super().format_help(ctx, formatter)
        from agenteval_cli.cli.root_help import print_help

        print_help(self, ctx)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            from agenteval_cli.cli.placeholders import plain_placeholders

            plain_placeholders(command, ctx)
        return command

    def get_help_option(self, ctx: Context) -> typer.core.TyperOption | None:
        # An absent flag defaults to None, which Typer coerces through a pydantic
        # TypeAdapter (importing pydantic) on every subcommand; False is passed through.
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            option.default = False
        return option


app = typer.Typer(
    cls=RootGroup,
    help="Evaluate multi-agent LangGraph systems side by side from one YAML spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from agenteval_cli import __version__

        print(f"agenteval {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate multi-agent LangGraph systems side by side from one YAML spec."""


def _locate_store(ctx: typer.Context, param: typer.CallbackParam, value: Path) -> Path:
    """``--store`` and ``AGENTEVAL_STORE`` as given; without either, :func:`find_store`."""
    source = ctx.get_parameter_source(param.name or "")
    if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
        return value
    found = find_store(Path.cwd())
    if found != DEFAULT_STORE:
        stderr().print(f"store: {found}", highlight=False, markup=False)
    return found


StoreOption = Annotated[
    Path,
    typer.Option(
        "--store",
        envvar="AGENTEVAL_STORE",
        callback=_locate_store,
        help="SQLite file holding experiments and results (default: the .agenteval/ of this "
        "folder or the nearest folder above that has one).",
        show_default=False,
    ),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]
EnvFileOption = Annotated[
    Path | None,
    typer.Option(
        "--env-file",
        metavar="PATH",
        help="Read variables from this .env file instead of the .env files from the spec's "
        "folder up to the project root (AGENTEVAL_NO_DOTENV=1 turns those off); variables "
        "already set win.",
        show_default=False,
    ),
]


def set_spec_env(spec_path: Path | None, env_file: str | Path | None) -> None:
    """Set the variables of the spec's .env files (or ``--env-file``'s) that the process
    lacks, for the rest of the command (:mod:`agenteval_cli.core.envfiles`)."""
    from agenteval_cli.core.envfiles import apply_env

    apply_env(spec_path.parent if spec_path is not None else None, env_file)


ByAgentOption = Annotated[
    bool,
    typer.Option(
        "--by-agent",
        help="Also print each target's model calls, tokens, cost and model time per agent.",
    ),
]
UpdatePricesOption = Annotated[
    bool,
    typer.Option(
        "--update-prices",
        help="Fetch the newest genai-prices data (the only network use of pricing; "
        "AGENTEVAL_PRICES_URL overrides where from) and price this command's models with "
        "it; without it, the prices bundled with genai-prices.",
    ),
]


def fetch_prices(quiet: bool = False) -> None:
    """``--update-prices``: fetch genai-prices' newest data before anything is priced; a
    fetch that fails is one line and exit 4, before anything ran."""
    import os

    from rich.markup import escape

    from agenteval_cli.core.redact import console_text
    from agenteval_cli.metrics.prices import update_database

    url = os.environ.get("AGENTEVAL_PRICES_URL") or None
    try:
        source = update_database(url)
    except OSError as exc:
        stderr().print(
            f"[bold red]error:[/] --update-prices: could not fetch the price data "
            f"({escape(console_text(str(exc)))}); run without --update-prices to use the "
            "prices bundled with genai-prices",
            highlight=False,
        )
        raise typer.Exit(ExitCode.SERVICE_FAILED) from None
    if not quiet:
        stderr().print(f"prices: {escape(console_text(source))}", highlight=False)


# emoji=False: a name such as "agent:ok:" in a dataset or trace prints as written, not as
# an emoji (and Rich's emoji table is not loaded).
def stderr() -> Console:
    return _console_class()(stderr=True, soft_wrap=True, emoji=False)


def stdout() -> Console:
    """The console for tables and lines; stderr's while stdout carries JSON (``--json -``)."""
    return _console_class()(stderr=bool(_json_stream), emoji=False)


@functools.cache
def _console_class() -> type[Console]:
    """Rich's console, but a reader that closed the pipe raises BrokenPipeError (for
    :class:`OutputFailures` to say so, exit 4) instead of Rich's silent exit 1, which would
    read as "the gate failed"."""
    from rich.console import Console

    class PipeConsole(Console):
        @property  # type: ignore[override]
        def file(self) -> IO[str]:
            """Where Rich writes; a fresh stream on the same descriptor when a target closed
            the standard stream mid-run (the progress and warnings go on, not a traceback)."""
            found = Console.file.fget(self)  # type: ignore[attr-defined]
            if getattr(found, "closed", False):
                from agenteval_cli.core.pinned import reopened

                fresh = reopened(found)
                if fresh is not None:
                    self._file = fresh
                    return fresh
            return found

        @file.setter
        def file(self, new_file: IO[str]) -> None:
            self._file = new_file

        def on_broken_pipe(self) -> None:
            import errno

            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")

    return PipeConsole


# Where the JSON goes while stdout is reserved for it (empty: stdout is not reserved).
_json_stream: list[TextIO] = []


@contextmanager
def json_on_stdout(active: bool) -> Iterator[None]:
    """While ``active``, stdout carries one JSON document and nothing else: what would be
    printed there goes to stderr, our table and the gate's lines as much as what the targets
    print (in this process, its threads, Ray's relayed worker logs, and at the descriptor
    level, child processes and native code). :func:`json_stdout` is the way to the real one."""
    if not active or _json_stream:
        yield
        return
    import os
    import sys

    real = sys.stdout
    real.flush()
    saved = _reserve_descriptor(real)
    stream = real if saved is None else open(os.dup(saved), "w", encoding="utf-8")  # noqa: SIM115
    _json_stream.append(stream)
    printed = _stderr_copy()
    try:
        with redirect_stdout(printed):
            yield
    finally:
        _json_stream.pop()
        if printed is not sys.stderr and not printed.closed:
            printed.close()  # its own object: a target closing "stdout" left stderr open
        sys.stderr.flush()
        if saved is not None:
            with suppress(OSError):  # a reader gone: already said (OutputFailures)
                stream.close()
            os.dup2(saved, 1)
            os.close(saved)


def _stderr_copy() -> TextIO:
    """A stream of its own on stderr's descriptor, for what is printed to stdout while it
    carries JSON: a target that closes ``sys.stdout`` then closes this, not ``sys.stderr``
    (the progress bars' and the error lines' stream). ``sys.stderr`` itself when it has no
    descriptor (a test runner's capture)."""
    import sys

    try:
        descriptor = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        return sys.stderr
    sys.stderr.flush()
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    return open(descriptor, "w", encoding=encoding, closefd=False, buffering=1)


def _reserve_descriptor(stream: TextIO) -> int | None:
    """Point file descriptor 1 at stderr's and return a copy of where it pointed, when
    ``stream`` is the process's real stdout (not a test runner's capture); else None."""
    import os

    try:
        if stream.fileno() != 1:
            return None
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError
        return None
    saved = os.dup(1)
    os.dup2(2, 1)
    return saved


def json_stdout() -> TextIO:
    """Where a JSON document for stdout is written: the real stdout, even while
    :func:`json_on_stdout` sends everything else to stderr."""
    import sys

    return _json_stream[-1] if _json_stream else sys.stdout


def is_stdout(path: Path | None) -> bool:
    """Whether an output option names stdout (``-``)."""
    return path is not None and str(path) == "-"


@contextmanager
def user_errors(debug: bool = False) -> Iterator[None]:
    """Bad input becomes one line on stderr and exit code 2, never a traceback."""
    try:
        yield
    except UserError as exc:
        if debug:
            raise
        from rich.markup import escape

        from agenteval_cli.core.redact import console_text

        text = escape(console_text(str(exc)))  # a name in the message is data, not markup
        stderr().print(f"[bold red]error:[/] {text}", markup=True, highlight=False)
        raise typer.Exit(exc.exit_code) from None


def open_store(path: Path, *, write: bool = False) -> AbstractContextManager[Store]:
    """:func:`agenteval_cli.store.lookup.open_store`, imported when a command opens a store."""
    from agenteval_cli.store import lookup

    return lookup.open_store(path, write=write)


def resolve_experiment(store: Store, name: str) -> ExperimentRecord:
    """:func:`agenteval_cli.store.lookup.resolve_experiment` (one rule for every command)."""
    from agenteval_cli.store import lookup

    return lookup.resolve_experiment(store, name)


def print_comparison(
    store: Store,
    experiment_ids: list[str],
    *,
    pricing: dict,
    title: str | None,
    warnings: Sequence[str] = (),
) -> None:
    """The comparison table of stored experiments, with their names and pricing gaps;
    ``warnings`` are said under it (what its figures are read with)."""
    from rich.markup import escape

    from agenteval_cli.core.redact import console_text
    from agenteval_cli.metrics.summary import unanswered_note, usage_note
    from agenteval_cli.report.table import comparison_table, unpriced_models
    from agenteval_cli.results.figures import from_store
    from agenteval_cli.store.summaries import summary_scores

    out = stdout()
    experiments = [store.experiment(i) for i in experiment_ids]
    columns = [(e.target, from_store(store, e)) for e in experiments]
    dataset_scores = [
        {score.key: score.score for score in summary_scores(store, e.id)} for e in experiments
    ]
    out.print(comparison_table(columns, title=title, dataset_scores=dataset_scores))
    if any(summary.cached for _, summary in columns):
        out.print(
            "  [dim]from the cache: results reused (cache: true); "
            "latency is over the calls made[/]",
            highlight=False,
        )
    note = unanswered_note([summary for _, summary in columns])
    if note:
        out.print(f"  [dim]{note}[/]", highlight=False, soft_wrap=True)
    for warning in warnings:
        line = f"  [bold yellow]warning:[/] {escape(console_text(warning))}"
        out.print(line, highlight=False, soft_wrap=True)
    print_calibration(store, experiments)
    for exp, (_, summary) in zip(experiments, columns, strict=True):
        target, name = escape(console_text(exp.target)), escape(console_text(exp.name))
        out.print(f"  {target}: [bold]{name}[/] ({exp.status})", highlight=False)
        no_usage = usage_note(summary)
        if no_usage:
            out.print(
                f"  [yellow]{target}[/]: {escape(console_text(no_usage))}",
                highlight=False,
                soft_wrap=True,
            )
        missing = unpriced_models(summary, pricing or {}) if _prices_tokens(exp) else []
        if missing:
            models = escape(console_text(", ".join(missing)))
            out.print(
                f"  [yellow]no price for model(s) {models}[/] in the spec or the price "
                "database: the cost of their requests is n/a; add them under 'pricing:' "
                "in the spec",
                highlight=False,
            )
    out.print(f"  store: {store.path}", highlight=False)
    print_failure_starts(store, experiment_ids)


def print_failure_starts(store: Store, experiment_ids: list[str]) -> None:
    """Under the run's table, per target with a failed request: where failures start, the
    agent and kind of each failed request's first wrong step, counted."""
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.report.blame import blame_table, heading, stored_counts

    out = stdout()
    shown = [(target, found) for target, found in stored_counts(store, experiment_ids) if found]
    for index, (target, found) in enumerate(shown):
        if not index:  # each table ends with a blank line
            out.print()
        out.print(console_text(heading(target)), highlight=False, markup=False)
        out.print(blame_table(found))


def print_calibration(store: Store, experiments: list[ExperimentRecord]) -> None:
    """Under the table, when rows carry people's labels: each judge's agreement with them
    (n, agreement, kappa and its interval), as ``agenteval judge calibrate`` heads it."""
    from agenteval_cli.core.redact import console_text
    from agenteval_cli.report.calibration import TITLE, headline
    from agenteval_cli.results.calibration import stored_calibration

    lines = []
    for experiment in experiments:
        found, error = stored_calibration(store, experiment)
        lines += [f"{experiment.target} {headline(item)}" for item in found]
        lines += [] if error is None else [f"{experiment.target}: {error}"]
    if not lines:
        return
    out = stdout()
    out.print(f"  {TITLE[:1].lower()}{TITLE[1:]}:", highlight=False, markup=False)
    for line in lines:
        out.print(f"    {console_text(line)}", highlight=False, markup=False, soft_wrap=True)


def _prices_tokens(experiment: ExperimentRecord) -> bool:
    """Whether the experiment's spec configured ``token_cost``: only then does a model
    without a price leave a figure incomplete."""
    for entry in experiment.spec.get("evaluators") or []:
        if entry == "token_cost" or (
            isinstance(entry, dict) and "token_cost" in (entry.get("name"), entry.get("type"))
        ):
            return True
    return False


class OutputFailures:
    """After a run, an output that cannot be written (a folder made read-only or removed
    mid-run, a full disk, a reader that closed the pipe) is one line and exit 4, never a
    traceback or exit 1 (which means the gate failed, and only that); a run whose errors
    already fail it keeps exit 3. The results are in the store by then: the line says so."""

    def __init__(self, debug: bool = False) -> None:
        self.debug = debug
        self.run_clean = True
        self.saved: str = ""  # "6 results are saved in STORE", once the run is over

    def __enter__(self) -> OutputFailures:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb) -> None:
        if not isinstance(exc, OSError) or self.debug:
            return
        from rich.markup import escape

        from agenteval_cli.core.redact import console_text

        if isinstance(exc, BrokenPipeError):
            silence_stdout()
            problem = READER_GONE
        else:
            problem = f"cannot write the run's output: {exc}"
        text = problem + (f"; {self.saved}" if self.saved else "")
        with suppress(OSError):  # stderr gone too: the exit code is all that says it
            stderr().print(f"[bold red]error:[/] {escape(console_text(text))}", highlight=False)
        code = ExitCode.SERVICE_FAILED if self.run_clean else ExitCode.RUN_ERRORS
        raise typer.Exit(code) from None


READER_GONE = "the reader of stdout closed the pipe before the output was written"


@contextmanager
def command_endings() -> Iterator[None]:
    """Where every command ends, whichever it is: a KeyboardInterrupt (Ctrl-C, or SIGTERM
    or SIGHUP, :mod:`agenteval_cli.cli.stop_signals`) is one line saying what stays and
    exit 130; a reader of stdout gone (``agenteval ... | head``: EPIPE) is one line and
    exit 4, never Click's silent exit 1, which means the gate failed. What is still
    buffered for stdout is written here, so that a reader gone shows here too, not in the
    interpreter's last flush. A command that already chose a failing code keeps it."""
    import errno
    import sys

    from agenteval_cli.cli.stop_signals import INTERRUPTED, interrupted_line, set_stop_note

    exit_code: int = ExitCode.SERVICE_FAILED
    stops.forget()
    try:
        try:
            yield
        except typer.Exit as exc:  # Typer's (its own Click's), as ctx.exit() raises too
            if exc.exit_code:
                exit_code = exc.exit_code
            sys.stdout.flush()
            raise
        sys.stdout.flush()
    except KeyboardInterrupt as exc:
        with suppress(OSError):
            stderr().print(interrupted_line(exc), highlight=False, markup=False)
        set_stop_note(None)  # said: the next command stopped in this process says its own
        raise typer.Exit(INTERRUPTED) from None
    except (OSError, SystemExit) as exc:
        # a Rich console's own way (Typer's help too): SystemExit(1) on a BrokenPipeError
        gone = exc if isinstance(exc, OSError) else exc.__context__
        if not isinstance(gone, OSError) or gone.errno != errno.EPIPE:
            raise
        silence_stdout()
        with suppress(OSError):  # stderr gone too: the exit code is all that says it
            stderr().print(f"[bold red]error:[/] {READER_GONE}", highlight=False)
        raise typer.Exit(exit_code) from None


def silence_stdout() -> None:
    """Point descriptor 1 at /dev/null, so the interpreter's last flush of a stdout whose
    reader is gone does not print 'Exception ignored ... BrokenPipeError' on the way out."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
