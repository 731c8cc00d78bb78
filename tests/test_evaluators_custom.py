"""Custom evaluators by import path, row and summary, and sampling."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Trace
from agenteval_cli.evaluators.loading import bind_evaluators
from agenteval_cli.evaluators.scoring import choose_sample, score
from agenteval_cli.spec.model import load_spec

EVALS = """
import asyncio


def number(outputs):
    return len(outputs["final_response"]) / 100


def flag(inputs, reference_outputs):
    return inputs["question"].endswith("?") == reference_outputs["is_question"]


async def many(trace, example):
    await asyncio.sleep(0)
    return [
        {"key": "path_len", "score": len(trace.agent_path), "comment": example.id},
        {"key": "first_agent_is_triage", "score": trace.agent_path[:1] == ["triage"]},
    ]


def langsmith_style(run, example):
    return {"score": run.outputs["final_response"] == example.outputs["answer"], "comment": "cmp"}


def broken(outputs):
    raise RuntimeError("boom")


def needs_other(foo):
    return 1


def pass_rate(runs, examples):
    hits = sum(r.outputs["final_response"] == e.outputs["answer"] for r, e in zip(runs, examples))
    return {"key": "pass_rate", "score": hits / len(runs), "comment": f"{hits}/{len(runs)}"}
"""


@pytest.fixture
def spec_dir(tmp_path):
    (tmp_path / "my_evals.py").write_text(textwrap.dedent(EVALS))
    (tmp_path / "data.jsonl").write_text('{"inputs": {"question": "Why?"}}\n')
    return tmp_path


def spec_with(spec_dir: Path, evaluators: str):
    path = spec_dir / "spec.yaml"
    path.write_text(
        "dataset: data.jsonl\ntargets: {t: my_evals.py:number}\nevaluators:\n" + evaluators
    )
    return load_spec(path)


def run_row(spec, outputs, reference, trace=None, example_id="ex1"):
    bound = bind_evaluators(spec)
    example = Example(example_id, {"question": "Why?"}, reference)
    got = asyncio.run(score(bound, example, outputs, trace or Trace(agent_path=["triage", "x"])))
    return {s.key: s for s in got}


def test_every_signature_and_return_shape(spec_dir):
    spec = spec_with(
        spec_dir,
        "  - {name: length, type: custom, target: my_evals.py:number}\n"
        "  - {name: is_q, type: custom, target: my_evals.py:flag}\n"
        "  - {name: many, type: custom, target: my_evals.py:many}\n"
        "  - {name: same, type: custom, target: my_evals.py:langsmith_style}\n",
    )
    got = run_row(spec, {"final_response": "x" * 42}, {"is_question": True, "answer": "x" * 42})
    assert got["length"].score == 0.42
    assert got["is_q"].score is True
    assert got["path_len"].score == 2.0
    assert got["path_len"].comment == "ex1"
    assert got["first_agent_is_triage"].score is True
    assert (got["same"].score, got["same"].comment) == (True, "cmp")


def test_a_raising_evaluator_is_a_null_score_and_the_rest_run(spec_dir):
    spec = spec_with(
        spec_dir,
        "  - {name: bad, type: custom, target: my_evals.py:broken}\n"
        "  - {name: length, type: custom, target: my_evals.py:number}\n",
    )
    got = run_row(spec, {"final_response": "abc"}, {})
    assert got["bad"].score is None
    assert got["bad"].comment == "evaluator 'bad' failed: RuntimeError: boom"
    assert got["length"].score == 0.03


def test_on_a_result_without_an_answer_only_the_evaluators_declared_to_read_the_trace_run(
    spec_dir,
):
    """A user's evaluator is taken to need the answer: on an errored or interrupted result it
    is not called, its key null saying why; ``needs_answer: false`` (on the item, per key or
    with @declares) has it score the trace of every result."""
    spec = spec_with(
        spec_dir,
        "  - {name: length, type: custom, target: my_evals.py:number}\n"
        "  - {name: many, type: custom, target: my_evals.py:many,\n"
        "     metrics: {path_len: {needs_answer: false}}}\n"
        "  - {name: is_q, type: custom, target: my_evals.py:flag, needs_answer: false}\n"
        "  - {name: bad, type: custom, target: my_evals.py:broken}\n",
    )
    bound = bind_evaluators(spec)
    example = Example("ex1", {"question": "Why?"}, {"is_question": True})
    errored = Trace(agent_path=["triage", "x"], error="GraphRecursionError: limit")
    got = {s.key: s for s in asyncio.run(score(bound, example, {}, errored))}
    reason = (
        "no answer: the target raised (GraphRecursionError: limit); the metric needs a final answer"
    )
    assert (got["length"].score, got["length"].comment) == (None, reason)  # never called
    assert (got["bad"].score, got["bad"].comment) == (None, reason)  # never called
    assert got["path_len"].score == 2.0  # read from the trace
    assert (got["first_agent_is_triage"].score, got["first_agent_is_triage"].comment) == (
        None,
        reason,
    )  # the same function's key that was not declared
    assert got["is_q"].score is True
    stopped = asyncio.run(
        score(bound, example, {"final_response": "x"}, Trace(agent_path=["a"]), interrupt="{}")
    )
    assert {s.key: s.score for s in stopped}["path_len"] == 1.0
    assert {s.key: s.comment for s in stopped}["length"].startswith(
        "no answer: the graph stopped at interrupt() waiting for input ({})"
    )


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("{name: x, type: custom, target: my_evals.py:nope}", "spec.yaml:5"),
        ("{name: x, type: custom, target: missing_mod:fn}", "cannot import 'missing_mod'"),
        ("{name: x, type: custom, target: my_evals.py:needs_other}", "takes foo"),
        ("{name: x, type: custom}", "needs the option(s) target"),
        ("{name: x, type: cusstom, target: a.py:b}", "did you mean 'custom'"),
        ("{name: routing_accuracy, sample: 1.5}", "sample must be a share"),
    ],
)
def test_bad_custom_items_are_one_line_errors_with_the_line(spec_dir, item, message):
    spec = spec_with(spec_dir, f"  - routing_accuracy\n  - {item}\n")
    with pytest.raises(UserError) as err:
        bind_evaluators(spec)
    text = str(err.value)
    assert message in text
    assert text.startswith(str(spec_dir / "spec.yaml") + ":5: ")
    assert "\n" not in text


def test_choose_sample_is_seeded_stable_and_sized():
    ids = [f"ex{i}" for i in range(40)]
    first = choose_sample(ids, 0.25, seed=0, name="judge")
    assert len(first) == 10
    assert first == choose_sample(list(reversed(ids)), 0.25, seed=0, name="judge")
    assert first != choose_sample(ids, 0.25, seed=1, name="judge")
    # adding examples keeps most of the old choice
    grown = choose_sample([*ids, *(f"new{i}" for i in range(4))], 0.25, seed=0, name="judge")
    assert len(first & grown) >= 8
    assert len(choose_sample(["only"], 0.01, seed=0, name="j")) == 1


def test_summary_evaluator_runs_once_per_target_and_reaches_the_json(tmp_path):
    from typer.testing import CliRunner

    from agenteval_cli.cli import app

    (tmp_path / "my_evals.py").write_text(textwrap.dedent(EVALS))
    (tmp_path / "target.py").write_text(
        "def answer(inputs):\n    return {'final_response': inputs['question'].upper()}\n"
    )
    rows = [
        {
            "id": "a",
            "inputs": {"question": "hi"},
            "outputs": {"answer": "HI", "expected_agents": ["x"]},
        },
        {
            "id": "b",
            "inputs": {"question": "yo"},
            "outputs": {"answer": "no", "expected_agents": ["x"]},
        },
    ]
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "dataset: data.jsonl\ntargets: {upper: target.py:answer}\nevaluators:\n"
        "  - {name: pass_rate, type: custom, target: my_evals.py:pass_rate, summary: true}\n"
        "  - routing_confusion\n"
    )
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        ["run", str(tmp_path / "spec.yaml"), "--store", str(tmp_path / "db"), "--json", str(out)],
    )
    assert result.exit_code == 0, result.output
    [experiment] = json.loads(out.read_text())["experiments"]
    assert experiment["dataset_results"]["pass_rate"] == {"score": 0.5, "comment": "1/2"}
    # a plain function runs no LangChain: its agents are unknown, not "(none)"
    confusion = experiment["dataset_results"]["routing_confusion"]
    assert confusion["score"] is None
    assert confusion["comment"].startswith("agents unknown on every result whose row expects")
    assert experiment["routing_confusion"] is None
    assert all("pass_rate" not in r["scores"] for r in experiment["results"])
