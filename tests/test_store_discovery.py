"""Which store a command uses: --store, AGENTEVAL_STORE, or the nearest .agenteval/ above."""

from __future__ import annotations

import json
from pathlib import Path

from agenteval_cli.cli.common import DEFAULT_STORE, find_store


def test_find_store_walks_up_to_the_nearest_agenteval_folder(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_store(deep) == DEFAULT_STORE  # none anywhere: one is made here
    (tmp_path / ".agenteval").mkdir()
    assert find_store(deep) == Path("../../../.agenteval/agenteval.db")
    (tmp_path / "a" / ".agenteval").mkdir()
    assert find_store(deep) == Path("../../.agenteval/agenteval.db")  # the nearest wins
    assert find_store(tmp_path) == DEFAULT_STORE  # the folder's own


def test_runs_and_reads_from_any_folder_share_one_store(tmp_path, monkeypatch, invoke):
    monkeypatch.delenv("AGENTEVAL_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert invoke("init", "evals").exit_code == 0
    ran = invoke("run", "evals/agenteval.yaml")
    assert ran.exit_code == 0, ran.output
    assert (tmp_path / ".agenteval" / "agenteval.db").is_file()

    monkeypatch.chdir(tmp_path / "evals")  # below the project's root
    listed = invoke("experiments", "--json")
    assert listed.exit_code == 0, listed.output
    assert listed.stderr.strip() == "store: ../.agenteval/agenteval.db"  # said which
    (row,) = json.loads(listed.stdout)["experiments"]
    assert row["target"] == "example" and row["results"] == 3

    again = invoke("run", "agenteval.yaml")  # a second run from here lands in the same store
    assert again.exit_code == 0, again.output
    assert not (tmp_path / "evals" / ".agenteval").exists()
    listed = invoke("experiments", "--json")
    assert len(json.loads(listed.stdout)["experiments"]) == 2


def test_store_option_and_variable_win_over_discovery(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".agenteval").mkdir()
    chosen = tmp_path / "elsewhere.db"
    missing = invoke("experiments", "--store", chosen)
    assert missing.exit_code == 2 and f"no experiment store at {chosen}" in missing.output
    by_env = invoke("experiments", env={"AGENTEVAL_STORE": str(chosen)})
    assert by_env.exit_code == 2 and f"no experiment store at {chosen}" in by_env.output
