"""Each experiment keeps how its metrics read, and is read by its own declarations.

Two specs declare the same custom key ``steps`` differently: one as "steps taken", fewer
is better, a count; the other as "steps done", more is better, a percentage. Both run in one
process into one store. Whatever is read first, each experiment's table, gate and report
follow its own declaration, and compare of the two says the clash instead of silently
following the one read last.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from agenteval_cli.metrics.registry import METRICS
from agenteval_cli.results.figures import experiment_catalog
from agenteval_cli.results.sources import from_store, load
from agenteval_cli.store.db import Store

EVALS = "def steps(outputs):\n    return {'key': 'steps', 'score': outputs['steps']}\n"
# fewer steps for target a (1 per example), more for b (3)
TARGETS = (
    "def a(inputs):\n    return {'final_response': 'ok', 'steps': 1}\n\n"
    "def b(inputs):\n    return {'final_response': 'ok', 'steps': 3}\n"
)
DECLARED = {
    "fewer": "{name: steps, type: custom, target: evals.py:steps, direction: lower,"
    " format: count, label: steps taken}",
    "more": "{name: steps, type: custom, target: evals.py:steps, direction: higher,"
    " format: number, label: steps done}",
}


def write_project(tmp_path, declared: str, prefix: str, *, threshold: float = 2) -> str:
    rows = [{"id": f"q{i}", "inputs": {"question": f"question {i}"}} for i in range(8)]
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "evals.py").write_text(EVALS)
    (tmp_path / "targets.py").write_text(TARGETS)
    spec = tmp_path / f"{prefix}.yaml"
    spec.write_text(
        "dataset: data.jsonl\n"
        f"experiment_prefix: {prefix}\n"
        "targets: {a: targets.py:a, b: targets.py:b}\n"
        f"evaluators:\n  - {DECLARED[declared]}\n"
        f"thresholds: {{steps: {threshold}}}\n"
    )
    return str(spec)


@pytest.fixture
def project(tmp_path, invoke):
    """Both specs run into one store, in this process: ``fewer`` first, then ``more``."""
    store = tmp_path / "runs.db"
    runs = {}
    for declared in ("fewer", "more"):
        spec = write_project(tmp_path, declared, declared)
        exported = tmp_path / f"{declared}.json"
        runs[declared] = invoke(
            "run", spec, "--store", store, "--json", exported, env={"COLUMNS": "200"}
        )
    return store, runs


def row(output: str, label: str) -> str:
    """The table line of the metric ``label`` (run tables draw "│", compare does not)."""
    return next(line for line in output.splitlines() if line.lstrip("│ ").startswith(f"{label} "))


def test_each_run_reads_its_own_declaration(project):
    _, runs = project
    # fewer is better: a's 1 step wins the star; a bare threshold 2 is a ceiling, b fails it
    fewer = runs["fewer"]
    assert "★ 1.0" in row(fewer.output, "steps taken")
    assert fewer.exit_code == 1
    assert "steps taken = 3.0, threshold <= 2" in fewer.text
    # more is better: b's 3 wins; the same bare 2 is a floor, a fails it
    more = runs["more"]
    assert "★ 3" in row(more.output, "steps done")
    assert more.exit_code == 1
    assert "steps done = 1, threshold >= 2" in more.text
    # the run declared nothing process-wide
    assert "steps" not in METRICS


def test_the_store_keeps_each_experiment_s_catalog_and_reading_one_does_not_change_another(
    project,
):
    store_path, _ = project
    with Store(store_path, readonly=True) as store:
        records = {(r.prefix, r.target): r for r in store.experiments()}
        fewer, more = records["fewer", "a"], records["more", "a"]
        # read in both orders: each keeps its own direction, label and format
        for first, second in ((fewer, more), (more, fewer)):
            from_store(store, first)
            from_store(store, second)
            assert experiment_catalog(fewer).info("steps").direction == "lower"
            assert experiment_catalog(more).info("steps").direction == "higher"
        assert experiment_catalog(fewer).label("steps") == "steps taken"
        assert experiment_catalog(more).fmt("steps", 3.0) == "3"
        assert experiment_catalog(fewer).fmt("steps", 3.0) == "3.0"
        assert experiment_catalog(fewer).keys == ("steps",)


def test_compare_of_two_declarations_says_the_clash_and_follows_the_first(project, invoke):
    store_path, _ = project
    with Store(store_path, readonly=True) as store:
        names = {(r.prefix, r.target): r.name for r in store.experiments()}
    # the "fewer" experiment of b (3 steps) against the "more" one of a (1 step)
    result = invoke(
        "compare", names["fewer", "b"], names["more", "a"], "--store", store_path,
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        f"metric 'steps' is declared differently by {names['fewer', 'b']!r} and "
        f"{names['more', 'a']!r}" in result.text
    )
    assert "direction lower / higher" in result.text
    # the table reads it as the first declares it: 3 → 1 is fewer steps, better
    line = row(result.output, "steps taken")
    assert "−2.0" in line and "▲" in line
    # in the other order, more steps is better: 1 → 3 is better too, read as "steps done"
    result = invoke(
        "compare", names["more", "a"], names["fewer", "b"], "--store", store_path,
        env={"COLUMNS": "200"},
    )  # fmt: skip
    line = row(result.output, "steps done")
    assert "+2" in line and "▲" in line


def test_the_gate_of_stored_experiments_reads_each_one_s_direction(project):
    """One gate over both experiments of target a (1 step in each): the bare threshold 2
    is a ceiling for the "fewer" one (passed) and a floor for the "more" one (failed)."""
    from agenteval_cli import api

    store_path, _ = project
    with Store(store_path, readonly=True) as store:
        names = {(r.prefix, r.target): r.name for r in store.experiments()}
    verdict = api.gate(
        [names["more", "a"], names["fewer", "a"]],
        thresholds={"steps": 2},
        store=store_path,
    )
    assert [f.message for f in verdict.failures] == ["steps done = 1, threshold >= 2 (off by −1)"]


def test_junit_checks_each_example_by_its_experiment_s_direction(project, invoke, tmp_path):
    store_path, _ = project
    with Store(store_path, readonly=True) as store:
        names = {(r.prefix, r.target): r.name for r in store.experiments()}
    junit = tmp_path / "checks.xml"
    result = invoke(
        "report", names["fewer", "a"], names["more", "a"], "--store", store_path,
        "-o", tmp_path / "r.html", "--junit", junit,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = junit.read_text()
    # 8 examples each: a's 1 step passes "<= 2" in the one and fails ">= 2" in the other
    assert text.count("<testcase ") == 16
    assert text.count("<failure ") == 8
    assert "steps = 1, expected &gt;= 2" in text


def test_an_experiment_stored_before_catalogs_reads_its_spec(project):
    store_path, _ = project
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE experiments SET metrics_json = NULL")
    with Store(store_path, readonly=True) as store:
        for record in store.experiments():
            assert record.catalog is None
            declared = experiment_catalog(record).info("steps")
            assert declared.direction == ("lower" if record.prefix == "fewer" else "higher")
            assert experiment_catalog(record).keys == ("steps",)


def test_a_json_export_keeps_the_catalog(project):
    store_path, _ = project
    for declared, direction, label in (
        ("fewer", "lower", "steps taken"),
        ("more", "higher", "steps done"),
    ):
        a, b = load([str(store_path.parent / f"{declared}.json")], store_path)
        for side in (a, b):
            assert side.catalog.info("steps").direction == direction
            assert side.catalog.label("steps") == label
            assert side.metric_keys == ("steps",)


def test_a_stored_declaration_this_version_cannot_read_is_one_line(project, invoke):
    store_path, _ = project
    with sqlite3.connect(store_path) as db:
        kept = json.loads(db.execute("SELECT metrics_json FROM experiments").fetchone()[0])
        kept["metrics"][0]["direction"] = "sideways"
        db.execute("UPDATE experiments SET metrics_json = ?", (json.dumps(kept),))
    out = invoke("experiments", "--store", store_path)
    assert out.exit_code != 0
    (line,) = [each for each in out.output.splitlines() if each.strip()]
    assert "keeps metric declarations this version cannot read" in line
    assert "direction must be one of higher, lower, got 'sideways'" in line
    assert "Traceback" not in out.output
