"""What ``agenteval --help`` imports and shows: heavy libraries stay out of start-up, and the
light top-level help lists every registered command (bench/ measures the time itself)."""

from __future__ import annotations

import subprocess
import sys

from typer.main import get_command
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.cli.root_help import _first_paragraph

HEAVY = (
    "langchain",
    "langchain_core",
    "langgraph",
    "langsmith",
    "openevals",
    "pydantic",
    "genai_prices",  # loaded by the first model call priced
)
RENDERING = ("markdown_it", "pygments", "typer.rich_utils")


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return set(out.split())


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or m.split(".")[0] in names)


def test_importing_the_cli_loads_no_heavy_library():
    assert _loaded(_imported_after("import agenteval_cli.cli"), HEAVY) == []


def test_top_level_help_loads_neither_heavy_libraries_nor_typers_renderer():
    code = (
        "from agenteval_cli.cli import app\ntry:\n    app(['--help'])\nexcept SystemExit:\n    pass"
    )
    modules = _imported_after(code)
    assert _loaded(modules, HEAVY) == []
    assert [m for m in RENDERING if m in modules] == []


def test_subcommand_help_does_not_import_pydantic():
    code = (
        "from agenteval_cli.cli import app\n"
        "try:\n    app(['run', '--help'])\nexcept SystemExit:\n    pass"
    )
    assert _loaded(_imported_after(code), ("pydantic", "genai_prices")) == []


def test_top_level_help_lists_every_command_with_its_help():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "[OPTIONS] COMMAND [ARGS]..." in result.output
    assert "Evaluate multi-agent LangGraph systems" in result.output
    assert "--help" in result.output and "-h" in result.output
    group = get_command(app)
    names = group.list_commands(None)
    assert {"run", "compare", "experiments", "dataset", "evaluators"} <= set(names)
    for name in names:
        command = group.commands[name]
        line = next(line for line in result.output.splitlines() if line.startswith(f"│ {name} "))
        assert _first_paragraph(command.short_help or command.help or "") in line


def test_bare_command_and_subcommand_help_still_work():
    bare = CliRunner().invoke(app, [])
    assert bare.exit_code == 2 and "Commands" in bare.output
    run_help = CliRunner().invoke(app, ["run", "--help"])
    assert run_help.exit_code == 0 and "SPEC" in run_help.output and "--limit" in run_help.output
    group_help = CliRunner().invoke(app, ["dataset", "--help"])
    assert group_help.exit_code == 0 and "validate" in group_help.output


def test_version_flag_prints_the_package_version():
    from typer.testing import CliRunner

    from agenteval_cli import __version__
    from agenteval_cli.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"agenteval {__version__}\n"


def test_console_output_prints_emoji_codes_as_written():
    """A name such as ``desk:smile:`` in a dataset or trace is printed, not turned into an
    emoji (Rich would otherwise replace it)."""
    from agenteval_cli.cli.common import stderr, stdout

    for console in (stdout(), stderr()):
        with console.capture() as captured:
            console.print("agent desk:smile: answered")
        assert captured.get() == "agent desk:smile: answered\n"
