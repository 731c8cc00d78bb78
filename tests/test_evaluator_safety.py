"""Evaluators cannot harm the run: they are bounded in time, kept off the event loop, see
their own copy of what the target returned, own their KeyboardInterrupt, and a NaN or
infinite score is null with a reason. Through the CLI, as a user meets them."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import projects
import pytest
from projects import project

from agenteval_cli.core.records import Example, Trace
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.evaluators.scoring import (
    EVALUATOR_TIMEOUT_S,
    BoundEvaluator,
    EvaluatorPool,
    score,
)
from agenteval_cli.spec.model import Spec

ROOT = Path(__file__).resolve().parent.parent

TARGET = """
def answer(inputs):
    return {"final_response": "about " + inputs["question"], "tags": ["a", "b"]}
"""

EVALUATORS = '''
import asyncio
import threading
import time

BARRIER = threading.Barrier(2, timeout=10)


async def awaits_forever(outputs):
    await asyncio.Event().wait()


def sleeps_forever(outputs):
    time.sleep(3600)


def fine(outputs):
    return {"key": "fine", "score": 1.0}


def meets_the_other_result(outputs):
    """Passes only when the two results' calls run at once, each in a thread of its own."""
    BARRIER.wait()
    return {"key": "meets_the_other_result", "score": threading.current_thread() is not
            threading.main_thread()}


def vandal(outputs, trace, run, reference_outputs):
    outputs["final_response"] = "VANDALISED"
    outputs["tags"].append("c")
    outputs["added"] = True
    reference_outputs["expected_agents"] = ["nobody"]
    trace.agent_path.append("intruder")
    run.outputs["also"] = 1
    return 1.0


def sees_the_answer(outputs, trace, reference_outputs):
    intact = (
        outputs == {"final_response": "about " + outputs["final_response"][6:],
                    "tags": ["a", "b"]}
        and outputs["final_response"].startswith("about ")
        and "intruder" not in trace.agent_path
        and reference_outputs.get("expected_agents") != ["nobody"]
    )
    return {"key": "sees_the_answer", "score": intact}


def interrupts_sync(outputs):
    raise KeyboardInterrupt("evaluator gave up")


async def interrupts_async(outputs):
    raise KeyboardInterrupt


def nan(outputs):
    return float("nan")


def inf(outputs):
    return {"key": "inf", "score": float("inf"), "comment": "too good"}


def summary_sleeps_forever(outputs):
    time.sleep(3600)


def minus_inf(outputs):
    return {"key": "minus_inf", "score": float("-inf")}
'''


def write_run(tmp_path: Path, evaluators: list[str], extra: str = "", rows: int = 2) -> Path:
    """A target on ``rows`` rows (row i's reference: ``{"x": i}``), scored by ``evaluators``."""
    entries = "".join(
        f"\n  - {{name: {n}, type: custom, target: evals.py:{n}}}" for n in evaluators
    )
    data = [{**row, "outputs": {"x": i}} for i, row in enumerate(projects.rows(rows))]
    return project(
        tmp_path,
        TARGET,
        files={"evals.py": EVALUATORS},
        data=data,
        evaluators=entries,
        concurrency=2,
        extra=extra,
    )


def run_json(invoke, tmp_path: Path, spec: Path, exit_code: int, *more: object) -> dict[str, Any]:
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out, *more)
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output
    data = json.loads(out.read_text())
    data["output"] = result.text
    return data


def results_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (experiment,) = data["experiments"]
    return {r["example_id"]: r for r in experiment["results"]}


# -- 2. bounded --------------------------------------------------------------------------


def test_the_spec_has_an_evaluator_time_limit_with_a_default(tmp_path):
    spec = write_run(tmp_path, ["fine"])
    assert Spec.model_fields["evaluator_timeout_s"].default == EVALUATOR_TIMEOUT_S == 120.0
    from agenteval_cli.execution.experiment import run_settings
    from agenteval_cli.spec.model import load_spec

    assert run_settings(load_spec(spec)).evaluator_timeout_s == EVALUATOR_TIMEOUT_S
    spec.write_text(spec.read_text() + "evaluator_timeout_s: 2.5\n")
    assert run_settings(load_spec(spec)).evaluator_timeout_s == 2.5


def test_evaluators_that_never_end_are_timed_out_and_the_process_exits(tmp_path):
    spec = write_run(
        tmp_path, ["awaits_forever", "sleeps_forever", "fine"], "evaluator_timeout_s: 1\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "agenteval_cli.cli", "run", str(spec)),
            *("--store", str(tmp_path / "db"), "--json", str(tmp_path / "r.json")),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 30  # a thread stuck in time.sleep(3600) is abandoned
    assert done.returncode == 3, done.stderr  # evaluators that failed on every result
    assert "Traceback" not in done.stderr
    assert "awaits_forever, sleeps_forever failed on every result" in " ".join(done.stderr.split())
    results = results_of(json.loads((tmp_path / "r.json").read_text()))
    assert set(results) == {"e0", "e1"}
    for result in results.values():
        assert result["scores"] == {"awaits_forever": None, "sleeps_forever": None, "fine": 1.0}
        for name in ("awaits_forever", "sleeps_forever"):
            assert result["comments"][name] == (
                f"evaluator {name!r} failed: EvaluatorTimeout: no result within 1 s "
                "(evaluator_timeout_s); the call was abandoned"
            )


def test_rescoring_is_bounded_by_the_same_time_limit(tmp_path, invoke):
    spec = write_run(tmp_path, ["fine"], "evaluator_timeout_s: 0.5\n")
    assert invoke("run", spec, "--store", tmp_path / "db").exit_code == 0
    spec.write_text(
        spec.read_text().replace(
            "evaluators:",
            "evaluators:\n  - {name: sleeps_forever, type: custom, "
            "target: evals.py:sleeps_forever}",
        )
    )
    started = time.monotonic()
    rescored = invoke("run", spec, "--rescore", "t", "--store", tmp_path / "db")
    assert time.monotonic() - started < 20
    assert rescored.exit_code == 3, rescored.output
    assert "sleeps_forever failed on every result" in rescored.text
    assert "EvaluatorTimeout: no result within 0.5 s" in rescored.text


def test_a_summary_evaluator_that_never_ends_is_timed_out_too(tmp_path, invoke):
    spec = write_run(tmp_path, ["fine"], "evaluator_timeout_s: 0.5\n")
    spec.write_text(
        spec.read_text().replace(
            "evaluators:",
            "evaluators:\n  - {name: summary_sleeps_forever, type: custom, summary: true, "
            "target: evals.py:summary_sleeps_forever}",
        )
    )
    started = time.monotonic()
    data = run_json(invoke, tmp_path, spec, 3)  # it failed: the run fails as for any evaluator
    assert time.monotonic() - started < 20
    (experiment,) = data["experiments"]
    assert len(experiment["results"]) == 2
    assert "EvaluatorTimeout: no result within 0.5 s" in json.dumps(experiment["dataset_results"])


def test_sync_evaluators_run_off_the_event_loop_side_by_side(tmp_path, invoke):
    spec = write_run(tmp_path, ["meets_the_other_result"])
    results = results_of(run_json(invoke, tmp_path, spec, 0))
    assert {k: r["scores"] for k, r in results.items()} == {
        "e0": {"meets_the_other_result": True},
        "e1": {"meets_the_other_result": True},
    }


OUTPUTS = {"final_response": "SSO fixed.", "resolution_notes": ["tech: SSO"]}


class SilentServer:
    """Accepts connections and never answers: a judge server that hangs."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_a_judge_whose_server_never_answers_is_timed_out(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server = SilentServer()
    try:
        fn = build_evaluator(
            "llm_judge",
            {
                "prompt": "routing_quality",
                "model": "openai:gpt-4o-mini",
                "base_url": server.base_url,
            },
        )
        evaluator = BoundEvaluator("llm_judge", fn)
        example = Example("a", {"question": "q"}, {"expected_agents": ["billing"]})
        started = time.monotonic()
        scores = asyncio.run(
            score([evaluator], example, OUTPUTS, Trace(), EvaluatorPool(2, timeout_s=1))
        )
        assert time.monotonic() - started < 10
    finally:
        server.close()
    (found,) = [s for s in scores if s.key == "llm_judge"]
    assert found.score is None
    assert "EvaluatorTimeout: no result within 1 s" in (found.comment or "")


def test_the_judge_client_has_a_request_timeout_unless_one_is_given(monkeypatch):
    from agenteval_cli.evaluators.judge_model import JUDGE_REQUEST_TIMEOUT_S, make_chat_model

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    assert make_chat_model("openai:gpt-4o-mini").request_timeout == JUDGE_REQUEST_TIMEOUT_S
    assert make_chat_model("openai:gpt-4o-mini", {"timeout": 5}).request_timeout == 5


# -- 3. isolated -------------------------------------------------------------------------


def test_an_evaluator_that_changes_its_arguments_changes_nothing_else(tmp_path, invoke):
    spec = write_run(tmp_path, ["vandal", "sees_the_answer"], "cache: true\n")
    for run in (1, 2):  # the second run is served from the cache
        data = run_json(invoke, tmp_path, spec, 0)
        for example_id, result in results_of(data).items():
            assert result["cached"] is (run == 2)
            question = "q" + example_id[1:]
            assert result["outputs"] == {"final_response": f"about {question}", "tags": ["a", "b"]}
            assert result["scores"] == {"vandal": 1.0, "sees_the_answer": True}


def test_agenteval_s_own_evaluators_get_the_arguments_uncopied():
    seen: list[Any] = []

    def mine(outputs):
        seen.append(outputs)
        return 1.0

    mine.__module__ = "agenteval_cli.evaluators.routing"  # as a built-in's
    outputs = {"final_response": "x"}
    asyncio.run(score([BoundEvaluator("mine", mine)], Example("a", {}, {}), outputs, Trace()))
    assert seen == [outputs] and seen[0] is outputs


# -- 4. an evaluator's KeyboardInterrupt ---------------------------------------------------


def test_an_evaluators_keyboard_interrupt_is_its_own_failure(tmp_path, invoke):
    spec = write_run(tmp_path, ["interrupts_sync", "interrupts_async", "fine"])
    data = run_json(invoke, tmp_path, spec, 3)
    results = results_of(data)
    assert set(results) == {"e0", "e1"}  # every result saved
    for result in results.values():
        assert result["scores"] == {"interrupts_sync": None, "interrupts_async": None, "fine": 1.0}
        assert result["comments"]["interrupts_sync"] == (
            "evaluator 'interrupts_sync' failed: KeyboardInterrupt: evaluator gave up"
        )
        assert result["comments"]["interrupts_async"].startswith(
            "evaluator 'interrupts_async' failed: KeyboardInterrupt"
        )
    assert "interrupts_async, interrupts_sync failed on every result" in data["output"]


# -- 5. NaN and infinity ------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        float("nan"),
        float("inf"),
        {"key": "k", "score": float("nan")},
        {"key": "k", "score": float("-inf"), "comment": "said"},
        {"results": [{"key": "k", "score": float("inf")}]},
    ],
)
def test_a_non_finite_score_is_null_with_a_reason(raw):
    (found,) = normalize(raw, "k")
    assert found.key == "k" and found.score is None
    assert found.comment is not None
    assert found.comment.startswith("evaluator 'k' failed: it returned ")
    assert "not a finite number; return a finite number, a bool or null" in found.comment


def test_non_finite_scores_through_the_cli(tmp_path, invoke):
    spec = write_run(tmp_path, ["nan", "inf", "minus_inf", "fine"])
    data = run_json(invoke, tmp_path, spec, 3)
    results = results_of(data)
    for result in results.values():
        assert result["scores"] == {"nan": None, "inf": None, "minus_inf": None, "fine": 1.0}
        assert result["comments"]["nan"] == (
            "evaluator 'nan' failed: it returned nan, not a finite number; "
            "return a finite number, a bool or null"
        )
        assert result["comments"]["inf"] == (
            "evaluator 'inf' failed: it returned inf, not a finite number; "
            "return a finite number, a bool or null (its comment: too good)"
        )
        assert "it returned -inf" in result["comments"]["minus_inf"]
    assert "inf, minus_inf, nan failed on every result" in data["output"]
