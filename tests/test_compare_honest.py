"""compare pairs like with like: means, matrices and counts over the examples every side ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from report_fixtures import demo_run

__all__ = ["demo_run"]
ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "configs" / "routing.yaml"


@pytest.fixture(scope="module")
def limited(demo_run, tmp_path_factory, invoke):
    """The demo's store, then ``run --limit 5 --target swarm`` into it."""
    tmp = tmp_path_factory.mktemp("limited")
    shutil.copy(demo_run / "db", tmp / "db")
    ran = invoke("run", DEMO, "--limit", "5", "--target", "swarm", "--store", tmp / "db")
    assert ran.exit_code == 0, ran.output
    full = json.loads((demo_run / "results.json").read_text())
    return tmp, {e["target"]: e for e in full["experiments"]}


def _mean(results: list[dict], key: str, ids: set[str]) -> float:
    values = [r["scores"][key] for r in results if r["example_id"] in ids]
    return sum(float(v) for v in values) / len(values)


def test_means_are_over_the_shared_examples_and_say_so(limited, invoke):
    tmp, full = limited
    result = invoke("compare", "supervisor", "swarm", "--store", tmp / "db")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "supervisor vs swarm · 5 paired examples" in text
    assert (
        "warning: the sides ran different examples (supervisor 32, swarm 5): every figure "
        "is over the 5 examples all of them ran" in text
    )
    from agenteval_cli import api

    got = api.compare("supervisor", "swarm", store=tmp / "db")
    shared = set(got.sides[1].example_ids())  # the five the swarm ran
    assert len(shared) == 5 and got.left_out == [27, 0]
    supervisor_results = full["supervisor"]["results"]
    row = next(r for r in got.rows if r.key == "routing_accuracy")
    # the supervisor's mean by hand over the five examples the swarm ran, from its --json
    assert row.means[0] == pytest.approx(_mean(supervisor_results, "routing_accuracy", shared))
    assert [len(side.example_ids()) for side in got.sides] == [32, 5]  # kept whole, to list
    from dataclasses import replace

    from agenteval_cli.report.comparison import confusion_matrix
    from agenteval_cli.results import sources

    (whole,) = sources.load(["supervisor"], tmp / "db")
    cut = replace(whole, runs=[r for r in whole.runs if r.example_id in shared])
    assert got.confusion[0] == confusion_matrix(cut)  # the matrix of the five, not of 32
    assert got.confusion[0] != confusion_matrix(whole)


def test_one_name_or_one_experiment_twice_is_a_usage_error(limited, invoke):
    tmp, _ = limited
    one = invoke("compare", "swarm", "--store", tmp / "db")
    assert one.exit_code == 2
    assert "compare needs two or more experiments, got 1" in one.output
    twice = invoke("compare", "supervisor", "supervisor", "--store", tmp / "db")
    assert twice.exit_code == 2
    assert "is named twice" in twice.output


def test_the_html_and_markdown_say_what_the_figures_leave_out(limited, invoke):
    tmp, _ = limited
    html, md = tmp / "r.html", tmp / "r.md"
    result = invoke(
        "report", "supervisor", "swarm", "-o", html, "--markdown", md, "--store", tmp / "db"
    )
    assert result.exit_code == 0, result.output
    assert "the sides ran different examples (supervisor 32, swarm 5)" in html.read_text()
    assert "> **Warning:** the sides ran different examples" in md.read_text()
