"""The evaluator reference in docs/ is the registry's own description, never stale."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import agenteval_cli.evaluators  # noqa: F401 (registers every family)
from agenteval_cli.cli import app
from agenteval_cli.evaluators import REGISTRY
from agenteval_cli.evaluators.reference import markdown, plain_text

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "evaluator-reference.md"


def test_the_reference_in_docs_matches_the_registry():
    assert REFERENCE.read_text(encoding="utf-8") == markdown(REGISTRY.values()), (
        "docs/evaluator-reference.md is stale: run "
        "'agenteval evaluators list --markdown > docs/evaluator-reference.md'"
    )


def test_the_reference_names_every_evaluator_and_its_choices():
    text = markdown(REGISTRY.values())
    for name, info in REGISTRY.items():
        assert f"### `{name}" in text
        for key in info.keys:
            assert key in text
    assert "- `mode`: one of strict, unordered, subset, superset (default strict)" in text


def test_show_prints_prose_not_markup():
    result = CliRunner().invoke(app, ["evaluators", "show", "trajectory_match"], terminal_width=200)
    assert result.exit_code == 0
    assert "``" not in result.output
    assert "mode: one of strict, unordered, subset, superset (default strict)" in result.output


def test_a_value_outside_an_options_choices_is_refused_with_a_suggestion(tmp_path):
    from agenteval_cli.core.errors import UserError
    from agenteval_cli.evaluators.registry import build_evaluator

    try:
        build_evaluator("trajectory_match", {"mode": "supserset"})
    except UserError as exc:
        text = str(exc)
    else:
        raise AssertionError("accepted")
    assert "mode must be one of strict, unordered, subset, superset, got 'supserset'" in text
    assert "did you mean 'superset'?" in text


def test_plain_text_turns_literals_into_code_and_joins_lines():
    doc = "Score key is the name (``trajectory_match``), so modes\ncan sit side by side.\n\nMore."
    assert plain_text(doc) == (
        "Score key is the name (`trajectory_match`), so modes can sit side by side.\n\nMore."
    )
