"""``agenteval init``: the scaffold runs as it is written, and never overwrites a file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

runner = CliRunner()


def test_init_writes_a_spec_that_runs_as_is(tmp_path, monkeypatch, invoke):
    project = tmp_path / "evals"
    result = invoke("init", str(project))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in project.iterdir()) == [
        "agenteval.schema.json",
        "agenteval.yaml",
        "dataset.jsonl",
        "target.py",
    ]
    assert f"next: agenteval run {project / 'agenteval.yaml'}" in result.output
    rows = [json.loads(line) for line in (project / "dataset.jsonl").read_text().splitlines()]
    assert len(rows) == 3

    monkeypatch.chdir(tmp_path)  # run from elsewhere: the spec's paths are its own
    out = tmp_path / "r.json"
    run = invoke("run", str(project / "agenteval.yaml"), "--store", "s.db", "--json", str(out))
    assert run.exit_code == 0, run.output
    (experiment,) = json.loads(out.read_text())["experiments"]
    by_id = {r["example_id"]: r for r in experiment["results"]}
    # The example router sends refunds and invoices to billing, the rest to tech support,
    # which is what each row expects; each reply mentions its row's must_mention term.
    for row in rows:
        result_row = by_id[row["id"]]
        assert result_row["error"] is None
        assert result_row["trace"]["agent_path"] == row["outputs"]["expected_agents"]
        assert result_row["scores"]["routing_accuracy"] == 1.0
        assert result_row["scores"]["resolution_coverage"] == 1.0
        assert result_row["scores"]["handoff_chain_length"] == 0
    assert experiment["metrics"]["routing_accuracy"] == 1.0


def test_init_into_the_current_directory(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "agenteval.yaml").is_file()


def test_init_never_overwrites(tmp_path, invoke):
    (tmp_path / "dataset.jsonl").write_text("mine\n")
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path / 'dataset.jsonl'} already exists; nothing was written" in result.output
    assert (tmp_path / "dataset.jsonl").read_text() == "mine\n"
    assert not (tmp_path / "agenteval.yaml").exists()  # all or nothing
    assert "Traceback" not in result.output


def test_init_into_a_file_is_refused(tmp_path, invoke):
    target = tmp_path / "taken"
    target.write_text("")
    result = invoke("init", str(target))
    assert result.exit_code == 2
    assert f"{target} is not a directory" in result.output


def test_the_scaffold_ships_with_the_package():
    from agenteval_cli.cli.init import SCAFFOLD, TEMPLATES

    assert all((SCAFFOLD / f"{name}.tmpl").is_file() for name in TEMPLATES)
    assert Path(SCAFFOLD).is_relative_to(Path(__file__).resolve().parent.parent / "agenteval_cli")


def test_an_unpriced_model_is_named_only_when_token_cost_is_configured(tmp_path, invoke):
    project = tmp_path / "evals"
    assert invoke("init", str(project)).exit_code == 0
    spec = project / "agenteval.yaml"
    plain = invoke("run", str(spec), "--store", str(tmp_path / "a.db"))
    assert plain.exit_code == 0, plain.output
    assert "no price for model" not in plain.output  # no cost figure to be incomplete
    text = spec.read_text().replace("  # - token_cost ", "  - token_cost   ")
    assert "\n  - token_cost" in text
    spec.write_text(text)
    priced = invoke("run", str(spec), "--store", str(tmp_path / "b.db"))
    assert priced.exit_code == 0, priced.output
    assert "no price for model(s) FakeListChatModel" in priced.output
