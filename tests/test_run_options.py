"""`agenteval run`'s output options: --cache/--no-cache over the spec, --json - on stdout,
-q/--quiet, a resumed run's progress and the response cache in the run table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from projects import project, rows

from agenteval_cli.report.json_report import write_json
from agenteval_cli.store.db import Store

TARGETS = """
calls = []

def answer(inputs):
    calls.append(inputs["question"])
    return {"final_response": inputs["question"] + " refund"}
"""


# the project of every test here: four rows, one target 'a'
OPTS: dict[str, Any] = {
    "code": TARGETS,
    "module": "targets.py",
    "targets": {"a": "answer"},
    "data": rows(4, question="q {i}", outputs={"must_mention": ["refund"]}),
    "prefix": "opts",
    "evaluators": "[resolution_coverage]",
}


def target_calls(spec: Path) -> list[str]:
    import sys

    path = str((spec.parent / "targets.py").resolve())
    module = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == path)
    return module.calls


def test_no_cache_calls_the_target_though_the_spec_caches(tmp_path, invoke):
    spec = project(tmp_path, **OPTS, extra="cache: true\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    calls = target_calls(spec)
    assert len(calls) == 4  # the first run fills the cache
    cached = invoke("run", spec, "--store", db)
    assert cached.exit_code == 0 and len(calls) == 4  # every answer from the cache
    fresh = invoke("run", spec, "--no-cache", "--store", db)
    assert fresh.exit_code == 0, fresh.output
    assert len(calls) == 8  # 4 examples called again
    with sqlite3.connect(db) as conn:
        flags = [c for (c,) in conn.execute("SELECT cached FROM results ORDER BY id")]
    assert flags == [0] * 4 + [1] * 4 + [0] * 4


def test_cache_turns_the_cache_on_and_a_value_after_it_says_it_takes_none(tmp_path, invoke):
    spec = project(tmp_path, **OPTS)
    db = tmp_path / "db"
    assert invoke("run", spec, "--cache", "--store", db).exit_code == 0
    calls = target_calls(spec)
    assert invoke("run", spec, "--cache", "--store", db).exit_code == 0
    assert len(calls) == 4  # the second run read all four from the cache
    wrong = invoke("run", spec, "--cache", "true", "--store", db)
    assert wrong.exit_code == 2
    assert "--cache and --no-cache take no value" in wrong.text


def test_cached_results_are_flagged_in_the_run_table(tmp_path, invoke):
    spec = project(tmp_path, **OPTS, extra="cache: true\n")
    db = tmp_path / "db"
    first = invoke("run", spec, "--store", db)
    assert "from the cache" not in first.text
    again = invoke("run", spec, "--store", db)
    assert again.exit_code == 0
    assert "from the cache │ 4 of 4" in again.text
    assert "latency is over the calls made" in again.text
    assert "latency p50 │ n/a" in again.text  # no call was made: no latency to show


def test_json_dash_writes_the_document_to_stdout_and_the_rest_to_stderr(tmp_path, invoke):
    spec = project(tmp_path, **OPTS)
    db = tmp_path / "db"
    result = invoke("run", spec, "--json", "-", "--store", db)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # nothing but the document
    assert "examples run" in result.stderr  # the table went to stderr
    assert not (tmp_path / "-").exists() and not Path("-").exists()
    with Store(db) as store:
        ids = [e.id for e in store.experiments()]
        write_json(tmp_path / "file.json", store, ids)
    # the stored experiments' document, with the run's warnings (its results are untraced)
    warnings = document.pop("warnings")
    assert document == json.loads((tmp_path / "file.json").read_text())
    assert [e["target"] for e in document["experiments"]] == ["a"]
    assert [w.split(":")[0] for w in warnings] == ["target 'a'"]
    assert all(f"warning: {w}" in " ".join(result.stderr.split()) for w in warnings)


def test_json_dash_with_a_gate_keeps_stdout_pure(tmp_path, invoke):
    spec = project(tmp_path, **OPTS, extra="thresholds:\n  resolution_coverage: '>= 0.5'\n")
    result = invoke("run", spec, "--json", "-", "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    assert "gate passed" in result.stderr


NOISY = """
import os
import subprocess
import sys


def answer(inputs):
    print("printed", inputs["question"])
    os.write(1, b"written to descriptor 1\\n")
    subprocess.run(["echo", "from a child process"], check=True)
    return {"final_response": inputs["question"] + " refund"}
"""


def test_json_dash_sends_what_the_targets_print_to_stderr(tmp_path, invoke):
    spec = project(tmp_path, **OPTS, extra="concurrency: 1\n")
    (tmp_path / "targets.py").write_text(
        "def answer(inputs):\n    print('said', inputs)\n    return {'final_response': 'refund'}\n"
    )
    result = invoke("run", spec, "--json", "-", "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["experiments"][0]["results"]) == 4
    assert result.stderr.count("said {'question': 'q ") == 4


def test_json_dash_keeps_the_real_stdout_pure_of_descriptor_and_child_output(tmp_path):
    """In a process of its own: what a target writes to descriptor 1 itself, or a
    process it starts, goes to stderr too."""
    import subprocess
    import sys

    spec = project(tmp_path, **OPTS, extra="concurrency: 1\n")  # one call at a time: whole lines
    (tmp_path / "targets.py").write_text(NOISY)
    done = subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", "run", str(spec), "--json", "-",
         "--store", str(tmp_path / "db"), "-q"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["experiments"][0]["results"]) == 4
    assert "opts: passed · 1 target(s), 4 results, 0 errored" in done.stderr  # -q's verdict
    for line in ("printed q ", "written to descriptor 1", "from a child process"):
        assert done.stderr.count(line) == 4, done.stderr


def test_quiet_prints_no_table_and_one_verdict_line(tmp_path, invoke):
    spec = project(tmp_path, **OPTS)
    result = invoke("run", spec, "-q", "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    assert "examples run" not in result.output and "metric" not in result.output
    assert "concurrency" not in result.output  # no start line
    assert result.stdout.splitlines() == ["opts: passed · 1 target(s), 4 results, 0 errored"]


def test_quiet_keeps_errors_and_files_written(tmp_path, invoke):
    spec = project(tmp_path, **OPTS, extra="thresholds:\n  resolution_coverage: '>= 1.5'\n")
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--quiet", "--json", out, "--store", tmp_path / "db")
    assert result.exit_code == 1
    assert "gate failed" in result.text and f"wrote {out}" in result.text
    assert "examples run" not in result.output
    assert result.stdout.splitlines()[-1] == "opts: gate failed · 1 target(s), 4 results, 0 errored"


def test_quiet_and_by_agent_are_a_usage_error(tmp_path, invoke):
    result = invoke(
        "run", project(tmp_path, **OPTS), "-q", "--by-agent", "--store", tmp_path / "db"
    )
    assert result.exit_code == 2 and "-q/--quiet prints no tables" in result.text


def test_a_resumed_runs_progress_counts_the_whole_run(tmp_path, invoke):
    """4 examples, 2 results deleted: the resumed run has 2 calls left, its progress reads
    4/4 as the uninterrupted run's, not 2/2."""
    spec = project(tmp_path, **OPTS)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE id % 2")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    resumed = invoke("run", spec, "--resume", "--store", db)
    assert resumed.exit_code == 0, resumed.output
    assert "2 call(s) left" in resumed.text
    assert "a 4/4 (0 errors) · finished" in resumed.text
    assert "2/2" not in resumed.text


def test_a_resumed_runs_start_gives_the_whole_and_what_is_done(tmp_path, invoke):
    from agenteval_cli import api

    spec = project(tmp_path, **OPTS)
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM results WHERE example_id = 'e0'")
        conn.execute("UPDATE experiments SET status = 'running', ended_at = NULL")
    starts: list[api.RunStart] = []
    report = api.run(spec, store=db, resume=True, on_start=starts.append)
    assert report.status == "finished"
    [start] = starts
    assert start.resumed
    assert start.totals == {"a": 4} and start.done == {"a": 3} and start.left == {"a": 1}


def test_flaky_examples_read_the_same_in_run_and_compare(tmp_path, invoke):
    """Two repetitions with the same answer each time: 0 of 4 examples flaky, and Wilson's
    upper bound for 0 of 4 is z² / (4 + z²) = 3.841 / 7.841 = 49.0%."""
    said = "def said_refund(outputs):\n    return 'refund' in outputs['final_response']\n"
    checks = "{name: said_refund, type: custom, target: checks.py:said_refund, binary: true}"
    options = {**OPTS, "evaluators": f"[resolution_coverage, {checks}]"}
    spec = project(tmp_path, **options, files={"checks.py": said}, extra="repetitions: 2\n")
    db = tmp_path / "db"
    for _ in range(2):
        run = invoke("run", spec, "--store", db)
        assert run.exit_code == 0, run.output
        assert "flaky examples │ 0/4 · 0.0% [0.0, 49.0]" in run.text, run.text
    with Store(db) as store:
        names = [e.name for e in store.experiments()]
    compared = invoke("compare", *names, "--store", db, env={"COLUMNS": "200"})
    assert compared.exit_code == 0, compared.output
    row = next(line for line in compared.output.splitlines() if "flaky examples" in line)
    assert row.count("0/4 · 0.0% [0.0, 49.0]") == 2


def test_compare_and_the_reports_leave_cached_latency_out_too(tmp_path, invoke):
    from agenteval_cli import api

    spec = project(tmp_path, **OPTS, extra="cache: true\n")
    db = tmp_path / "db"
    assert invoke("run", spec, "--store", db).exit_code == 0
    assert invoke("run", spec, "--store", db).exit_code == 0
    with Store(db) as store:
        sides = api.load_experiments([e.id for e in store.experiments()], store=store)
    fresh, cached = sorted(sides, key=lambda side: side.summary().cached)
    assert fresh.summary().cached == 0 and fresh.summary().metrics()["latency_p50_s"] is not None
    assert cached.summary().cached == 4 and cached.summary().metrics()["latency_p50_s"] is None
