"""A dataset-level (summary) evaluator that fails counts as any evaluator that fails: one
line naming it and the cause, exit 3, every result kept; in a run and in a merge of shards,
each call within ``evaluator_timeout_s``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from projects import project

TARGET = """
def answer(inputs):
    return {"final_response": "about " + inputs["question"]}
"""

EVALUATORS = """
import time


def fine(outputs):
    return 1.0


def broken_summary(outputs):
    return {"key": "broken_summary", "score": 1 / (len(outputs) - len(outputs))}


def summary_sleeps(outputs):
    time.sleep(3600)


def good_summary(outputs):
    return {"key": "good_summary", "score": len(outputs) / 4}
"""


def write_spec(tmp_path: Path, summaries: list[str], extra: str = "") -> Path:
    """A target on two rows, the evaluator 'fine' and the summary evaluators ``summaries``."""
    entries = "\n  - {name: fine, type: custom, target: evals.py:fine}" + "".join(
        f"\n  - {{name: {n}, type: custom, summary: true, target: evals.py:{n}}}" for n in summaries
    )
    return project(
        tmp_path, TARGET, files={"evals.py": EVALUATORS}, data=2, evaluators=entries, extra=extra
    )


def test_a_summary_evaluator_that_raises_fails_the_run_with_one_line(tmp_path, invoke):
    spec = write_spec(tmp_path, ["broken_summary", "good_summary"])
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    assert result.output.count("broken_summary (dataset-level)") == 1
    assert (
        "evaluator failed: t: broken_summary (dataset-level): summary evaluator "
        "'broken_summary' failed: ZeroDivisionError: division by zero" in result.text
    )
    assert "run failed: evaluator(s) broken_summary failed" in result.text
    (experiment,) = json.loads(out.read_text())["experiments"]
    assert [r["scores"] for r in experiment["results"]] == [{"fine": 1.0}, {"fine": 1.0}]
    assert experiment["dataset_results"]["good_summary"]["score"] == 0.5
    assert experiment["dataset_results"]["broken_summary"]["score"] is None


def test_the_api_report_counts_a_failed_summary_evaluator(tmp_path):
    import agenteval_cli as agenteval

    report = agenteval.run(write_spec(tmp_path, ["broken_summary"]), store=tmp_path / "db")
    assert report.status == "finished"
    assert report.broken_evaluators() == ["broken_summary"]
    assert not report.ok()


def test_summary_evaluators_that_work_leave_the_run_green(tmp_path, invoke):
    result = invoke("run", write_spec(tmp_path, ["good_summary"]), "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    assert "evaluator failed" not in result.output


def test_a_merge_runs_summary_evaluators_within_the_time_limit_and_counts_them(tmp_path, invoke):
    spec = write_spec(tmp_path, ["summary_sleeps", "good_summary"], "evaluator_timeout_s: 0.5\n")
    shards = [tmp_path / f"shard{i}.db" for i in (1, 2)]
    for i, shard in enumerate(shards, 1):
        ran = invoke("run", spec, "--shard", f"{i}/2", "--store", shard)
        assert ran.exit_code == 3, ran.output  # each shard's summary timed out too
    out = tmp_path / "merged.json"
    started = time.monotonic()
    merged = invoke("merge", *shards, "--store", tmp_path / "merged.db", "--json", out)
    assert time.monotonic() - started < 20  # not the 3600 s the evaluator sleeps
    assert merged.exit_code == 3, merged.output
    assert "Traceback" not in merged.output
    assert (
        "evaluator failed: t: summary_sleeps (dataset-level): summary evaluator "
        "'summary_sleeps' failed: EvaluatorTimeout: no result within 0.5 s" in merged.text
    )
    (experiment,) = json.loads(out.read_text())["experiments"]
    assert len(experiment["results"]) == 2  # both shards' results, kept
    assert experiment["dataset_results"]["good_summary"]["score"] == 0.5
