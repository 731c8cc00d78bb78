"""The report formats are one registry (``agenteval_cli.api.FORMATS``): each command that
writes reports offers one option per entry, and ``write_report`` writes any entry by its
name, so a new format is one entry and its renderer."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import agenteval_cli as agenteval
from agenteval_cli.api import formats
from agenteval_cli.cli import app, outputs
from agenteval_cli.core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "configs" / "routing.yaml"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return agenteval.run(SPEC, store=tmp_path_factory.mktemp("formats") / "db", limit=2)


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_three_formats_and_their_files():
    assert [(f.name, f.suffix, f.option) for f in agenteval.api.FORMATS] == [
        ("html", ".html", "--html"),
        ("markdown", ".md", "--markdown"),
        ("junit", ".xml", "--junit"),
    ]


def test_each_command_that_writes_reports_offers_every_format():
    for command in (("run",), ("import",)):
        shown = _help(*command)
        assert all(f" {f.option} " in shown for f in agenteval.api.FORMATS), command
    shown = _help("report")
    output = next(line for line in shown.splitlines() if " --output " in line)
    assert " -o " in output and "The HTML report to write." in output
    assert " --markdown " in shown and " --junit " in shown
    assert " --html " not in shown  # report's HTML is its -o


def test_a_format_added_as_one_entry_is_an_option_and_is_written(demo, tmp_path, monkeypatch):
    def names(path: Path, given: formats.ReportInput) -> None:
        path.write_text("\n".join(given.comparison.names) + f"\n{given.title}\n")

    added = formats.ReportFormat("names", ".txt", "--names", "The targets, one a line.", names)
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, added))
    monkeypatch.setattr(outputs, "FORMATS", formats.FORMATS)

    given: dict = {}
    probe = typer.Typer()

    @probe.command()
    @outputs.with_report_options()
    def write(reports: dict[str, Path | None] | None = None) -> None:
        given.update(reports or {})

    result = CliRunner().invoke(probe, ["--names", str(tmp_path / "n.txt"), "--help"])
    assert "--names" in result.output and "The targets, one a line." in result.output
    result = CliRunner().invoke(probe, ["--names", str(tmp_path / "n.txt")])
    assert result.exit_code == 0, result.output
    assert given == {
        "html": None,
        "markdown": None,
        "junit": None,
        "names": tmp_path / "n.txt",
    }

    path = tmp_path / "out.txt"
    written = agenteval.write_report(demo, reports={"names": path})
    assert written == [path]
    # the spec's targets in its order, and the title write_report gives them
    assert path.read_text() == "supervisor\nswarm\nsupervisor vs swarm\n"


def test_reports_by_name_are_written_in_the_registry_order(demo, tmp_path):
    junit, markdown = tmp_path / "r.xml", tmp_path / "r.md"
    written = agenteval.write_report(demo, reports={"junit": junit, "markdown": markdown})
    assert written == [markdown, junit]
    assert markdown.read_text().startswith("#") and "<testsuite" in junit.read_text()


def test_an_unknown_format_names_the_known_ones(demo, tmp_path):
    with pytest.raises(UserError) as caught:
        agenteval.write_report(demo, reports={"pdf": tmp_path / "r.pdf"})
    assert "no report format 'pdf'" in str(caught.value)
    assert "html, markdown, junit" in (caught.value.hint or "")
