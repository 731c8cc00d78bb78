"""``compare BASE.json NOW.json`` for a spec with two targets: each file's experiments are
paired by target name, one comparison per target, never the new supervisor beside the old
swarm."""

from __future__ import annotations

import json
from pathlib import Path

import agenteval_cli as agenteval
from agenteval_cli.gating.baselines import baseline_data
from agenteval_cli.results.sources import ExperimentData, Run
from agenteval_cli.store.results import strict_json


def side(target: str, name: str, right: int, n: int = 12) -> ExperimentData:
    runs = [
        Run(example_id=f"ex-{i}", scores={"routing_accuracy": float(i < right)}) for i in range(n)
    ]
    return ExperimentData(name, target, runs)


def write(path: Path, *sides: ExperimentData) -> Path:
    path.write_text(strict_json(baseline_data(sides)), encoding="utf-8")
    return path


def files(tmp_path: Path) -> tuple[Path, Path]:
    base = write(
        tmp_path / "base.json", side("supervisor", "sup-1", 12), side("swarm", "swarm-1", 6)
    )
    now = write(  # in the other order: pairing is by name, not by place
        tmp_path / "now.json", side("swarm", "swarm-2", 12), side("supervisor", "sup-2", 3)
    )
    return base, now


def test_two_files_of_two_targets_pair_by_target_name(tmp_path):
    base, now = files(tmp_path)
    found = agenteval.compare_each(base, now)
    assert [[s.name for s in c.sides] for c in found] == [
        ["sup-1", "sup-2"],
        ["swarm-1", "swarm-2"],
    ]
    supervisor, swarm = (c.rows[0].vs_first[0] for c in found)
    assert supervisor is not None and (supervisor.worse, supervisor.better) == (9, 0)
    assert swarm is not None and (swarm.worse, swarm.better) == (0, 6)
    assert found[0].note is not None
    assert found[0].note.startswith(f"supervisor: paired by target name across {base}, {now}")


def test_the_command_prints_a_table_per_target_within_100_columns(tmp_path, invoke):
    base, now = files(tmp_path)
    result = invoke("compare", base, now, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "supervisor vs supervisor · 12 paired examples" in result.output
    assert "swarm vs swarm · 12 paired examples" in result.output
    assert "sup-2(" in result.squeezed and "swarm vs supervisor" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 100
    document = json.loads(invoke("compare", base, now, "--json").output)
    assert [c["experiments"] for c in document["by_target"]] == [
        ["sup-1", "sup-2"],
        ["swarm-1", "swarm-2"],
    ]


def test_a_file_missing_a_target_is_one_line(tmp_path, invoke):
    base, _ = files(tmp_path)
    other = write(tmp_path / "other.json", side("supervisor", "s", 3), side("solo", "x", 3))
    result = invoke("compare", base, other)
    assert result.exit_code == 2
    assert result.output.startswith(
        f"error: {other} holds no experiment of target 'swarm': the files' experiments are "
        "paired by target name"
    )
