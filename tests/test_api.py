"""The Python API: ``import agenteval_cli as agenteval``, then run, compare, gate, report.

The expected values come from elsewhere: the ``--json`` file the command writes for the same
experiments, the per-example scores in it averaged here, and the store's rows counted with
sqlite3."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from serving import serve
from typer.testing import CliRunner

import agenteval_cli as agenteval
from agenteval_cli.cli import app
from agenteval_cli.core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "configs" / "routing.yaml"
LIMIT = 8


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo spec run once through the API, and the ``--json`` the command writes for
    those same experiments (a resume with nothing left to run)."""
    tmp = tmp_path_factory.mktemp("api")
    db = tmp / "db"
    report = agenteval.run(SPEC, store=db, limit=LIMIT)
    out = tmp / "r.json"
    exported = invoke("run", SPEC, "--retry-errors", "--store", db, "--json", out)
    assert exported.exit_code == 0, exported.output
    assert "0 call(s) left" in exported.output
    data = json.loads(out.read_text())
    return db, report, {e["id"]: e for e in data["experiments"]}


def test_the_run_reports_every_experiment_as_the_store_holds_it(demo):
    db, report, _ = demo
    assert report.status == "finished"
    assert [e.target for e in report.experiments] == ["supervisor", "swarm"]
    stored = rows(db, "SELECT id, name, target, status FROM experiments ORDER BY rowid")
    assert [(e.id, e.name, e.target) for e in report.experiments] == [r[:3] for r in stored]
    assert {r[3] for r in stored} == {"finished"}
    counts = dict(rows(db, "SELECT experiment_id, COUNT(*) FROM results GROUP BY 1"))
    assert (
        {e.id: e.results for e in report.experiments} == counts == dict.fromkeys(report.ids, LIMIT)
    )
    assert report.saved == 2 * LIMIT
    assert report.ok() and report.errors and all(e.errored == 0 for e in report.errors)


def test_metrics_are_what_the_json_export_writes_for_the_same_experiments(demo):
    _, report, exported = demo
    for experiment in report.experiments:
        assert experiment.metrics == exported[experiment.id]["metrics"]


def test_metrics_are_the_means_of_the_per_example_scores(demo):
    _, report, exported = demo
    for experiment in report.experiments:
        results = exported[experiment.id]["results"]
        for key in ("routing_accuracy", "resolution_coverage", "total_tokens", "cost_usd"):
            values = [float(r["scores"][key]) for r in results if r["error"] is None]
            assert experiment.metrics[key] == pytest.approx(math.fsum(values) / len(values))
        assert experiment.metrics["error_rate"] == 0.0


def test_compare_rows_carry_both_means_the_delta_its_interval_and_p(demo):
    _, report, exported = demo
    supervisor, swarm = report.experiments
    result = agenteval.compare(supervisor.name, swarm.name, store=demo[0])
    row = next(r for r in result.rows if r.metric == "total_tokens")

    def scores(experiment_id: str) -> dict[str, float]:
        results = exported[experiment_id]["results"]
        return {r["example_id"]: float(r["scores"]["total_tokens"]) for r in results}

    a, b = scores(supervisor.id), scores(swarm.id)
    assert row.means == pytest.approx([sum(a.values()) / len(a), sum(b.values()) / len(b)])
    assert row.delta == pytest.approx(sum(b[e] - a[e] for e in a) / len(a))
    low, high = row.ci
    assert low <= row.delta <= high
    assert 0.0 <= row.p_value <= 1.0
    # a run report compares the same way as the names of its experiments
    again = agenteval.compare(report)
    assert [r.means for r in again.rows] == [r.means for r in result.rows]


def test_gate_returns_the_failures_of_a_threshold_that_fails(demo):
    _, report, _ = demo
    failing = agenteval.gate(report, thresholds={"total_tokens": "<= 1"})
    assert not failing.passed and failing.checked
    assert [(f.target, f.key) for f in failing.failures] == [
        ("supervisor", "threshold"),
        ("swarm", "threshold"),
    ]
    assert all("threshold <= 1" in f.message for f in failing.failures)
    passing = agenteval.gate(report, thresholds={"error_rate": "<= 0"})
    assert passing.passed and passing.checked
    unchecked = agenteval.gate(report)  # the demo spec has neither thresholds nor baseline
    assert unchecked.passed and not unchecked.checked


def test_a_saved_baseline_gates_the_next_run(demo, tmp_path):
    _, report, _ = demo
    baseline = agenteval.save_baseline(tmp_path / "baseline.json", report)
    saved = json.loads(baseline.read_text())
    assert [e["target"] for e in saved["experiments"]] == ["supervisor", "swarm"]
    same = agenteval.gate(report, baseline=baseline)
    assert same.passed and same.checked
    with pytest.raises(UserError, match="baseline file not found"):  # named: must exist
        agenteval.gate(report, baseline=tmp_path / "none.json")
    spec = tmp_path / "spec.yaml"  # the spec's own baseline, not written yet: no gate
    spec.write_text(SPEC.read_text().replace("../datasets", str(ROOT / "datasets")))
    spec.write_text(spec.read_text() + "baseline: later.json\n")
    first = agenteval.gate(report, spec=spec)
    assert first.missing_baseline == str(tmp_path / "later.json")
    assert first.passed and not first.checked


def test_write_report_writes_each_file_asked_for(demo, tmp_path):
    _, report, _ = demo
    html, markdown, junit = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.xml"
    written = agenteval.write_report(report, html=html, markdown=markdown, junit=junit)
    assert written == [html, markdown, junit]
    assert "<html" in html.read_text() and "swarm" in html.read_text()
    assert "supervisor" in markdown.read_text()
    cases = ET.parse(junit).getroot().iter("testcase")
    assert len(list(cases)) >= 2 * LIMIT


def test_rescore_gives_new_experiments_with_the_same_metrics(demo):
    db, report, _ = demo
    rescored = agenteval.rescore(SPEC, [e.name for e in report.experiments], store=db)
    assert rescored.status == "finished"
    assert {e.id for e in rescored.experiments}.isdisjoint(report.ids)
    for old, new in zip(report.experiments, rescored.experiments, strict=True):
        assert new.target == old.target and new.metrics == old.metrics


def test_arun_runs_inside_a_running_loop_and_leaves_its_signals_alone(tmp_path):
    db = tmp_path / "db"
    seen: list[tuple[str, str, object]] = []

    async def main():
        loop = asyncio.get_running_loop()
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        handler = signal.getsignal(signal.SIGINT)
        executor = getattr(loop, "_default_executor", None)
        background = asyncio.ensure_future(ticker())

        def on_result(target, result):
            seen.append((target, result.example_id, signal.getsignal(signal.SIGINT)))

        report = await agenteval.arun(SPEC, store=db, limit=3, on_result=on_result)
        background.cancel()
        assert asyncio.get_running_loop() is loop and not loop.is_closed()
        assert getattr(loop, "_default_executor", None) is executor  # the loop's own, back
        return report, ticks, handler

    report, ticks, handler = asyncio.run(main())
    assert report.status == "finished" and report.saved == 6
    assert ticks > 1  # the loop kept serving other tasks during the run
    assert len(seen) == 6 and {h for *_, h in seen} == {handler}
    assert sorted((t, e) for t, e, _ in seen) == sorted(
        rows(
            db,
            "SELECT e.target, r.example_id FROM results r JOIN experiments e"
            " ON e.id = r.experiment_id",
        )
    )


def test_arun_scores_dataset_level_evaluators_in_the_running_loop(tmp_path):
    spec = tmp_path / "spec.yaml"
    text = SPEC.read_text().replace("../datasets", str(ROOT / "datasets"))
    spec.write_text(text.replace("evaluators: [", "evaluators: [routing_confusion, "))

    async def main():
        return await agenteval.arun(spec, store=tmp_path / "db", limit=3)

    report = asyncio.run(main())
    assert report.status == "finished"
    scored = rows(tmp_path / "db", "SELECT experiment_id, key FROM summary_scores")
    assert sorted(scored) == sorted((i, "routing_confusion") for i in report.ids)


def test_run_inside_a_running_loop_points_to_arun(tmp_path):
    async def main():
        with pytest.raises(RuntimeError, match=r"await agenteval\.arun"):
            agenteval.run(SPEC, store=tmp_path / "db", limit=1)

    asyncio.run(main())
    assert not (tmp_path / "db").exists()  # refused before anything was stored


def test_an_on_result_raising_keyboard_interrupt_stops_the_run_and_resume_finishes(tmp_path):
    db = tmp_path / "db"
    calls = []

    def stop_after_three(target, result):
        calls.append(target)
        if len(calls) == 3:
            raise KeyboardInterrupt

    stopped = agenteval.run(SPEC, store=db, limit=LIMIT, on_result=stop_after_three)
    assert stopped.status == "interrupted"
    assert not stopped.ok()
    assert rows(db, "SELECT DISTINCT status FROM experiments") == [("interrupted",)]
    ((saved,),) = rows(db, "SELECT COUNT(*) FROM results")
    assert stopped.saved == saved and 3 <= saved < 2 * LIMIT

    resumed = agenteval.run(SPEC, store=db, resume=True)
    assert resumed.status == "finished"
    assert resumed.ids == stopped.ids
    assert rows(db, "SELECT DISTINCT status FROM experiments") == [("finished",)]
    assert rows(
        db, "SELECT COUNT(*), COUNT(DISTINCT experiment_id || example_id) FROM results"
    ) == [(2 * LIMIT, 2 * LIMIT)]


def test_cancelling_arun_keeps_what_finished_and_leaves_nothing_running(tmp_path):
    db = tmp_path / "db"

    async def main():
        task: asyncio.Task | None = None
        stored = []

        def on_result(target, result):
            stored.append(target)
            if len(stored) == 2:
                assert task is not None
                task.cancel()

        task = asyncio.ensure_future(
            agenteval.arun(SPEC, store=db, limit=LIMIT, on_result=on_result)
        )
        with pytest.raises(asyncio.CancelledError):
            await task
        after = len(stored)
        await asyncio.sleep(0.3)  # nothing of the run goes on storing results
        return after, len(stored)

    after, later = asyncio.run(main())
    assert after == later
    assert rows(db, "SELECT DISTINCT status FROM experiments") == [("interrupted",)]
    assert rows(db, "SELECT COUNT(*) FROM results") == [(after,)]


def test_the_library_prints_nothing(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default store, .agenteval/agenteval.db, lands here
    starts, notes = [], []
    report = agenteval.run(SPEC, limit=2, on_start=starts.append, on_note=notes.append)
    agenteval.compare(report)
    agenteval.gate(report, thresholds={"total_tokens": "<= 1"})
    agenteval.write_report(report, markdown=tmp_path / "r.md")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert (tmp_path / ".agenteval" / "agenteval.db").is_file()
    assert report.store == Path(".agenteval/agenteval.db")
    (start,) = starts
    assert start.totals == {"supervisor": 2, "swarm": 2} and not start.resumed
    assert notes == [] and report.warnings == []


def test_warnings_come_back_in_the_report(tmp_path):
    """Plain functions that run no LangChain are untraced: the warning the command prints
    is in the report instead."""
    (tmp_path / "targets.py").write_text(
        "async def echo(inputs):\n    return {'final_response': inputs['question']}\n"
    )
    (tmp_path / "data.jsonl").write_text(
        json.dumps({"id": "e1", "inputs": {"question": "refund"}, "outputs": {}}) + "\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text("dataset: data.jsonl\ntargets:\n  echo: targets.py:echo\n")
    report = agenteval.run(spec, store=tmp_path / "db")
    (warning,) = report.warnings
    assert warning.startswith("target 'echo': 1 result(s) untraced")
    cli = invoke("run", spec, "--store", tmp_path / "db2")
    assert cli.exit_code == 0
    assert "warning: target 'echo': 1 result(s) untraced" in " ".join(cli.output.split())


def test_the_package_imports_the_api_only_when_used():
    probe = (
        "import sys, agenteval_cli\n"
        "print('agenteval_cli.api' in sys.modules)\n"
        "print(agenteval_cli.run is __import__('agenteval_cli.api').api.run)\n"
        "print(agenteval_cli.__version__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    from importlib.metadata import version

    assert out == ["False", "True", version("agenteval-cli")]
    assert set(agenteval.__all__) <= set(dir(agenteval))
    with pytest.raises(AttributeError):
        _ = agenteval.no_such_name


def test_the_example_in_docs_api_md_runs(tmp_path):
    """The first code block of docs/api.md, run as written in a folder holding the demo."""
    text = (ROOT / "docs" / "api.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    for folder in ("configs", "datasets"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "finished"
    for name in ("report.html", "report.md", "junit.xml", "baseline.json"):
        assert (tmp_path / name).is_file()
    assert (tmp_path / ".agenteval" / "agenteval.db").is_file()


def test_upload_sends_a_run_kept_for_it_and_prints_nothing(tmp_path, monkeypatch, capfd):
    from langsmith_stub import serving

    with serving(monkeypatch) as server:
        report = agenteval.run(SPEC, store=tmp_path / "db", limit=2, upload=True)
        uploads = agenteval.upload(report)
        assert uploads.ok and uploads.compare_url is not None
        for one, experiment in zip(uploads.uploads, report.experiments, strict=True):
            assert one.name == experiment.name and one.sent is not None
            assert one.sent.runs == 2
            roots = [r for r in server.runs_of(one.name) if not r.get("parent_run_id")]
            assert len(roots) == 2
        again = agenteval.upload([e.name for e in report.experiments], store=tmp_path / "db")
        assert [u.sent.already_sent for u in again.uploads if u.sent] == [2, 2]
    assert capfd.readouterr() == ("", "")


KEPT_CLIENT = """
import httpx

client = httpx.AsyncClient()  # kept between calls, as LangChain's chat models keep theirs


async def target(inputs):
    answer = await client.get(inputs["url"])
    return {"final_response": answer.text}
"""


def test_a_second_run_in_one_process_can_use_a_client_the_first_left_open(tmp_path):
    """A client kept between calls holds keep-alive connections bound to the event loop it
    first ran on: runs in one process share that loop, so the second run's calls work too."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the connection outlives the first run
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            body = b"pong"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    serve(server)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        (tmp_path / "kept.py").write_text(KEPT_CLIENT)
        (tmp_path / "rows.jsonl").write_text(
            "".join(json.dumps({"inputs": {"url": url, "n": i}}) + "\n" for i in range(3))
        )
        (tmp_path / "spec.yaml").write_text(
            "dataset: rows.jsonl\ntargets: {kept: kept.py:target}\nevaluators: []\n"
        )
        script = (
            "import agenteval_cli as agenteval\n"
            "for _ in range(2):\n"
            "    report = agenteval.run('spec.yaml', store='db')\n"
            "    print([e.errored for e in report.errors])\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
            cwd=tmp_path,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[0]", "[0]"], proc.stdout + proc.stderr
