"""The command reference in docs/commands.md is the CLI's own ``--help``, and the README's
command list names every command ``agenteval --help`` lists."""

from __future__ import annotations

import re
from pathlib import Path

from cogapp import Cog

from agenteval_cli.cli.help_pages import command_paths, help_text

ROOT = Path(__file__).resolve().parent.parent


def test_the_command_reference_is_the_clis_help(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    status = Cog().main(["cog", "--check", "docs/commands.md"])
    assert status == 0, "docs/commands.md is behind the CLI: run `make docs`"


def test_the_reference_holds_every_command_and_every_option():
    text = (ROOT / "docs/commands.md").read_text(encoding="utf-8")
    paths = list(command_paths())
    assert ("run",) in paths and ("dataset", "add-failures") in paths
    for path in paths:
        assert f"### `{' '.join(('agenteval', *path))}`" in text
    # an option of the run command, read from the help itself, is in the page
    assert "--save-baseline" in help_text(("run",)) and "--save-baseline" in text


def test_the_readme_lists_every_top_level_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Commands", 1)[1].split("```", 2)[1]
    listed = set(re.findall(r"^agenteval ([a-z-]+)", block, re.M))
    commands = {path[0] for path in command_paths() if len(path) == 1}
    assert commands - listed == set()
