"""Help that shows what to type: placeholders, not Python types, and an example per command."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from agenteval_cli.cli import app

runner = CliRunner()


def _command_paths(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):  # a group: its commands too
            yield from _command_paths(command, (*prefix, name))


def _is_group(words) -> bool:
    command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    return hasattr(command, "commands")


@pytest.mark.parametrize(
    "words",
    list(_command_paths(typer.main.get_command(app))),
    ids=" ".join,
)
def test_help_shows_placeholders_not_python_types(words):
    result = runner.invoke(app, [*words, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = result.output
    for leak in ("<bool>", "<str>", "<path>", "<int", "<float", "<list", "{", "[["):
        assert leak not in text, (leak, text)
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert f" {' '.join(words)} " in usage
    if not _is_group(words):  # every command shows how it is used
        assert f"Example: agenteval {' '.join(words)}" in text


def test_flags_take_no_value_and_values_have_a_placeholder():
    text = runner.invoke(app, ["run", "--help"], terminal_width=200).output
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert usage.strip().endswith(" run [OPTIONS] SPEC [EXPERIMENT]")
    cache = next(line for line in text.splitlines() if "--cache " in line)
    assert cache.split("--cache", 1)[1].split()[:2] == ["--no-cache", "Reuse"]  # no value
    target = next(line for line in text.splitlines() if "--target" in line)
    assert target.split()[3] == "TEXT"
