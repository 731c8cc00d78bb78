"""Hostile probes, as a user would try them, that must end cleanly: the right exit code, one
line where a line is due, nothing computed lost, no secret shown, valid machine-readable
outputs, no stale answer and no hang. Grouped as the failures they guard against: judges and
evaluators; data and references; a run's last second; the cache; signals and services."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import projects
import pytest
from openai_server import openai_server
from projects import answer_after, project
from serving import serve

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = Path(__file__).parent / "data" / "external"
SECRET = "sk-probe-9d3e71c0a5b2f64e-secret"

TARGET = """
import os, sys

def answer(inputs):
    return {"final_response": "about " + inputs["question"], "tags": ["a"]}
"""


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")


def probe(
    folder: Path,
    *,
    evaluators: str = "",
    evals_code: str = "",
    target: str = TARGET,
    extra: str = "",
    rows: int = 3,
    outputs: dict[str, Any] | None = None,
) -> Path:
    """A function target, a dataset of ``rows`` rows, a module of evaluators and a spec."""
    return project(
        folder,
        target,
        files={"evals.py": evals_code or "def fine(outputs):\n    return 1.0\n"},
        data=projects.rows(rows, outputs=outputs or {}),
        evaluators="\n" + (evaluators or "  - {name: fine, type: custom, target: evals.py:fine}"),
        concurrency=1,
        extra=extra,
    )


def custom(*names: str, more: str = "") -> str:
    return "".join(f"  - {{name: {n}, type: custom, target: evals.py:{n}{more}}}\n" for n in names)


def run_json(invoke, folder: Path, spec: Path, *more: object) -> tuple[Any, dict[str, Any]]:
    out = folder / "r.json"
    result = invoke("run", spec, "--store", folder / "db", "--json", out, *more)
    assert "Traceback" not in result.output, result.output
    data = json.loads(out.read_text()) if out.exists() else {}
    return result, data


def results_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (experiment,) = data["experiments"]
    return {r["example_id"]: r for r in experiment["results"]}


def agenteval(folder: Path, *args: str, env: dict[str, str] | None = None, **popen: Any):
    """``agenteval ARGS`` as a process of its own, in ``folder``."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300", "NO_COLOR": "1"}
    full.pop("AGENTEVAL_STORE", None)
    full.update(env or {})
    command = [sys.executable, "-m", "agenteval_cli.cli", *args]
    return subprocess.Popen(
        command,
        cwd=folder,
        env=full,
        stdout=popen.pop("stdout", subprocess.PIPE),
        stderr=popen.pop("stderr", subprocess.PIPE),
        text=True,
        **popen,
    )


def judge(base_url: str, extra: str = "") -> str:
    return (
        "  - {name: quality, type: llm_judge, prompt: 'Is {outputs[final_response]} good?', "
        f"model: 'openai:gpt-4o-mini', base_url: '{base_url}', "
        f"model_kwargs: {{max_retries: 0}}{extra}}}\n"
    )


# == judges and evaluators ================================================================


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_judge_answering_every_call_with_an_http_error_fails_the_run(
    tmp_path, invoke, monkeypatch, status
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = status
        spec = probe(tmp_path, evaluators=custom("fine") + judge(server.base_url))
        result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output
    assert "quality failed on every result" in result.text
    results = results_of(data)
    assert len(results) == 3  # every result kept, the other evaluator scored
    assert {r["scores"]["fine"] for r in results.values()} == {1.0}
    assert {r["scores"]["quality"] for r in results.values()} == {None}
    assert SECRET not in result.output


def test_a_judge_replying_garbage_every_time_fails_the_run(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = "I'd rather not say <<<{not json"
        spec = probe(tmp_path, evaluators=custom("fine") + judge(server.base_url))
        result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output
    for found in results_of(data).values():
        assert found["scores"]["quality"] is None
        assert found["comments"]["quality"]


def test_a_continuous_judge_scoring_out_of_range_is_null_with_a_reason(
    tmp_path, invoke, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with openai_server() as server:
        server.default = {"score": 7, "reasoning": "a seven out of ten"}
        spec = probe(
            tmp_path, evaluators=custom("fine") + judge(server.base_url, ", continuous: true")
        )
        result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output
    for found in results_of(data).values():
        assert found["scores"]["quality"] is None
        assert "7" in found["comments"]["quality"]


class EchoingAuthServer:
    """Refuses every call with 401 and, as real providers do, quotes the key it was given."""

    def __init__(self) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                body = json.dumps(
                    {
                        "error": {
                            "message": f"Incorrect API key provided: {key}. You can find "
                            "your API key at https://platform.openai.com/account/api-keys.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    }
                ).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.handle_error = quiet  # type: ignore[method-assign]  # a client gone
        serve(self.httpd)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("where", ["env", "model_kwargs"])
def test_a_provider_quoting_the_refused_key_shows_it_nowhere(tmp_path, invoke, monkeypatch, where):
    server = EchoingAuthServer()
    try:
        if where == "env":
            monkeypatch.setenv("OPENAI_API_KEY", SECRET)
            item = judge(server.base_url)
        else:
            monkeypatch.delenv("OPENAI_API_KEY", raising=False)
            item = judge(server.base_url).replace(
                "{max_retries: 0}", f"{{max_retries: 0, api_key: {SECRET}}}"
            )
        spec = probe(tmp_path, evaluators=custom("fine") + item)
        result, data = run_json(invoke, tmp_path, spec, "--markdown", tmp_path / "r.md")
    finally:
        server.stop()
    assert result.exit_code == 3, result.output
    assert server.requests == 1
    with sqlite3.connect(tmp_path / "db") as conn:
        stored = " ".join(str(row) for row in conn.execute("SELECT * FROM results"))
    for text in (result.output, json.dumps(data), (tmp_path / "r.md").read_text(), stored):
        assert SECRET not in text and SECRET[:16] not in text


SLOW_REPLY_S = 4.0


def quiet(*args: Any) -> None:
    """A test server's handler for a client that went away: not agenteval's output."""


@contextmanager
def slow_judge_server(delay_s: float) -> Iterator[str]:
    with openai_server() as server:
        original = server._next

        def slow(request: dict[str, Any]) -> Any:
            time.sleep(delay_s)
            return original(request)

        server._next = slow  # type: ignore[method-assign]
        server._httpd.handle_error = quiet  # type: ignore[method-assign]  # a client gone
        yield server.base_url


@pytest.mark.slow
def test_a_judge_slower_than_the_evaluator_limit_fails_the_run_in_bounded_time(tmp_path):
    with slow_judge_server(SLOW_REPLY_S) as base_url:
        spec = probe(
            tmp_path,
            evaluators=custom("fine") + judge(base_url),
            extra="evaluator_timeout_s: 1\n",
        )
        started = time.monotonic()
        process = agenteval(
            tmp_path, "run", spec.name, "--store", "db", "--json", "r.json",
            env={"OPENAI_API_KEY": SECRET},
        )  # fmt: skip
        _, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    assert time.monotonic() - started < 3 * SLOW_REPLY_S + 20
    assert "Traceback" not in err
    results = results_of(json.loads((tmp_path / "r.json").read_text()))
    assert len(results) == 3
    for found in results.values():
        assert found["scores"] == {"fine": 1.0, "quality": None}
        assert "EvaluatorTimeout" in found["comments"]["quality"]


ODD = '''
import asyncio


class Scorer:
    """A class-based evaluator: an instance with __call__."""

    def __call__(self, outputs):
        return {"score": 0.25}  # no key: the evaluator's name


scorer = Scorer()


class AsyncScorer:
    async def __call__(self, outputs, reference_outputs):
        return {"key": "async_scorer", "score": True, "comment": "ok"}


async_scorer = AsyncScorer()


def many(outputs):
    return [{"key": "many_a", "score": 1}, {"key": "many_b", "score": 0.5, "comment": "half"}]


def text_score(outputs):
    return "0.9"


def nothing(outputs):
    return None


def bare_dict(outputs):
    return {"comment": "forgot the score"}


def huge_comment(outputs):
    return {"key": "huge_comment", "score": 1.0, "comment": "x" * 3_000_000}


def empty_key(outputs):
    return {"key": "", "score": 0.75}


def exits(outputs):
    raise SystemExit(0)


async def exits_async(outputs):
    raise SystemExit("evaluator quit")


def returns_list_of_nothing(outputs):
    return []


def mutates_inputs(inputs, example):
    inputs["question"] = "CHANGED"
    inputs["extra"] = 1
    example.inputs["question"] = "CHANGED TOO"
    example.outputs["added"] = True
    return 1.0


def sees_inputs(inputs, example):
    return {"key": "sees_inputs",
            "score": inputs == {"question": example.id.replace("e", "q")}
            and example.outputs == {} and example.inputs == inputs}
'''


def test_class_based_and_list_returning_evaluators_are_scored(tmp_path, invoke):
    spec = probe(
        tmp_path, evals_code=ODD, evaluators=custom("scorer", "async_scorer", "many", "empty_key")
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    for found in results_of(data).values():
        assert found["scores"] == {
            "scorer": 0.25,
            "async_scorer": True,
            "many_a": 1.0,
            "many_b": 0.5,
            "empty_key": 0.75,
        }
        assert found["comments"]["many_b"] == "half"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("text_score", "str"),
        ("nothing", "None"),
        ("bare_dict", "score"),
        ("exits", "SystemExit"),
        ("exits_async", "SystemExit"),
    ],
)
def test_an_evaluator_returning_no_score_fails_the_run_keeping_every_result(
    tmp_path, invoke, name, reason
):
    spec = probe(tmp_path, evals_code=ODD, evaluators=custom(name, "scorer"))
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output
    assert f"{name} failed on every result" in result.text
    results = results_of(data)
    assert len(results) == 3
    for found in results.values():
        assert found["scores"][name] is None and found["scores"]["scorer"] == 0.25
        assert reason in found["comments"][name]


def test_an_evaluator_returning_an_empty_list_is_not_silently_green(tmp_path, invoke):
    spec = probe(tmp_path, evals_code=ODD, evaluators=custom("returns_list_of_nothing"))
    result, data = run_json(invoke, tmp_path, spec)
    # scoring nothing on every result is no pass: the evaluator says nothing at all
    assert result.exit_code == 3, result.output
    assert "returns_list_of_nothing failed on every result" in result.text
    for found in results_of(data).values():
        assert found["scores"] == {"returns_list_of_nothing": None}
        assert found["comments"]["returns_list_of_nothing"].startswith(
            "evaluator 'returns_list_of_nothing' failed: ValueError: it returned [], no score"
        )


def test_a_huge_comment_keeps_the_json_valid_and_the_run_whole(tmp_path, invoke):
    spec = probe(tmp_path, evals_code=ODD, evaluators=custom("huge_comment"))
    result, data = run_json(invoke, tmp_path, spec, "--markdown", tmp_path / "r.md")
    assert result.exit_code == 0, result.output
    assert len(result.output) < 100_000  # the terminal is not flooded
    for found in results_of(data).values():
        assert found["scores"] == {"huge_comment": 1.0}


def test_an_evaluator_changing_inputs_and_example_changes_nothing_else(tmp_path, invoke):
    spec = probe(tmp_path, evals_code=ODD, evaluators=custom("mutates_inputs", "sees_inputs"))
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    for example_id, found in results_of(data).items():
        assert found["inputs"] == {"question": example_id.replace("e", "q")}
        assert found["scores"] == {"mutates_inputs": 1.0, "sees_inputs": True}


NUMBERS = """
import decimal
from fractions import Fraction


class Float32:
    \"\"\"What numpy's scalars are to a caller: a number that is no float.\"\"\"

    def __init__(self, value):
        self.value = value

    def __float__(self):
        return float(self.value)


import numbers

numbers.Real.register(Float32)  # as numpy registers its floating types


def odd_numbers(outputs):
    return [
        {"key": "fraction", "score": Fraction(1, 2)},
        {"key": "float32", "score": Float32(0.25)},
        {"key": "float32_alone", "score": 1.0},
    ]


def float32_nan(outputs):
    return Float32(float("nan"))


def decimal_score(outputs):
    return {"key": "decimal_score", "score": decimal.Decimal("0.5")}
"""


def test_number_types_that_are_no_float_are_their_values_and_their_nan_is_null(tmp_path, invoke):
    spec = probe(
        tmp_path,
        evals_code=NUMBERS,
        evaluators=custom("odd_numbers", "float32_nan", "decimal_score"),
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output  # float32_nan and decimal_score fail everywhere
    for found in results_of(data).values():
        assert found["scores"] == {
            "fraction": 0.5,
            "float32": 0.25,
            "float32_alone": 1.0,
            "float32_nan": None,
            "decimal_score": None,
        }
        assert "it returned nan, not a finite number" in found["comments"]["float32_nan"]
        assert "got Decimal" in found["comments"]["decimal_score"]  # loud, never a silent 0


def test_numpy_scores_are_their_values(tmp_path, invoke):
    pytest.importorskip("numpy")
    code = (
        "import numpy as np\n\ndef np_scores(outputs):\n"
        "    return [{'key': 'f32', 'score': np.float32(0.5)},\n"
        "            {'key': 'i64', 'score': np.int64(1)}]\n"
    )
    spec = probe(tmp_path, evals_code=code, evaluators=custom("np_scores"))
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    assert {k: r["scores"] for k, r in results_of(data).items()}["e0"] == {"f32": 0.5, "i64": 1.0}


def test_an_openevals_evaluator_named_as_a_custom_target_is_scored(tmp_path, invoke):
    spec = probe(
        tmp_path,
        evaluators="  - {name: exact, type: custom, target: 'openevals.exact:exact_match'}\n",
        outputs={"final_response": "about q0", "tags": ["a"]},
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    scores = {k: r["scores"] for k, r in results_of(data).items()}
    assert scores == {
        "e0": {"exact_match": True},
        "e1": {"exact_match": False},
        "e2": {"exact_match": False},
    }


# == data and references ==================================================================

TRAVEL = f"targets:\n  supervisor: {EXTERNAL / 'travel_graphs.py'}:supervisor_graph\n"


def travel_spec(
    folder: Path,
    rows: list[dict[str, Any]],
    evaluators: str = "[routing_accuracy]",
    suffix: str = ".jsonl",
) -> Path:
    data = folder / f"rows{suffix}"
    if suffix == ".jsonl":
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "spec.yaml"
    spec.write_text(f"dataset: {data.name}\n{TRAVEL}evaluators: {evaluators}\n")
    return spec


def warnings_of(output: str, word: str) -> list[str]:
    return [line for line in output.splitlines() if word in line and "warning" in line]


QUESTIONS = ["Get me a flight to Lisbon", "I need a hotel in Lisbon"]


@pytest.mark.parametrize(
    ("outputs", "field"),
    [
        ({"expected_agents ": ["flights_desk"]}, "expected_agents "),  # a trailing space
        ({"Expected_Agents": ["flights_desk"]}, "Expected_Agents"),
        ({"expected": {"agents": ["flights_desk"]}}, "expected"),  # nested one level down
        ({"outputs": {"expected_agents": ["flights_desk"]}}, "outputs"),  # wrapped twice
    ],
)
def test_a_misspelt_or_nested_reference_field_is_named(tmp_path, invoke, outputs, field):
    rows = [
        {"id": f"r{i}", "inputs": {"question": q}, "outputs": outputs}
        for i, q in enumerate(QUESTIONS)
    ]
    spec = travel_spec(tmp_path, rows)
    result = invoke("run", spec, "--store", tmp_path / "db")
    found = warnings_of(result.output, "expected_agents")
    assert len(found) == 1, result.output
    assert repr(field) in found[0] or field in found[0]
    validated = invoke("dataset", "validate", "--spec", spec)
    assert len(warnings_of(validated.output, "expected_agents")) == 1, validated.output


def test_a_reference_field_misspelt_in_some_rows_only_is_named(tmp_path, invoke):
    rows = [
        {
            "id": "r0",
            "inputs": {"question": QUESTIONS[0]},
            "outputs": {"expected_agents": ["flights_desk"]},
        },
        {
            "id": "r1",
            "inputs": {"question": QUESTIONS[1]},
            "outputs": {"expected_agent": ["billing"]},
        },  # scored 1.0, "nothing expected"
    ]
    spec = travel_spec(tmp_path, rows)
    result = invoke("run", spec, "--store", tmp_path / "db")
    found = warnings_of(result.output, "expected_agent")
    assert len(found) == 1, result.output
    assert "1 row(s) (first: 'r1') have the reference field 'expected_agent'" in found[0]
    assert "did you mean 'expected_agents'?" in found[0]


def test_a_reference_field_misspelt_in_a_csv_header_is_named(tmp_path, invoke):
    (tmp_path / "rows.csv").write_text(
        'id,question,outputs.expected_agent\nr0,Get me a flight to Lisbon,"[""flights_desk""]"\n'
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: rows.csv\n{TRAVEL}evaluators: [routing_accuracy]\n")
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert len(warnings_of(result.output, "expected_agent")) == 1, result.output


def test_expected_agents_as_a_string_is_not_spelt_out_into_letters(tmp_path, invoke):
    rows = [
        {
            "id": "r0",
            "inputs": {"question": QUESTIONS[0]},
            "outputs": {"expected_agents": "flights_desk"},
        }
    ]
    spec = travel_spec(tmp_path, rows)
    out = tmp_path / "r.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", out)
    if result.exit_code == 2:  # refused as bad input: one line naming the row
        assert result.output.count("error:") == 1 and "expected_agents" in result.text
        return
    assert result.exit_code == 0, result.output
    (found,) = json.loads(out.read_text())["experiments"][0]["results"]
    assert found["scores"]["routing_accuracy"] == 1.0  # the one expected agent was reached


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"id": "a", "inputs": {"question": "x"}}\n{"id": "b", "inputs": {"question": \n', ":2"),
        ('{"id": "a", "inputs": {"question": "x"}}\n[1, 2]\n', ":2"),
        ('{"id": "a", "inputs": {"question": "x"}, "outputs": ["billing"]}\n', ":1"),
        ('{"id": "a", "inputs": "just a string"}\n', ":1"),
        (
            '{"id": "a", "inputs": {"question": "x"}}\n{"id": "a", "inputs": {"question": "y"}}\n',
            ":2",
        ),
        ('\ufeff{"id": "a", "inputs": {"question": "x"}}\r\n\x00\r\n', ":2"),
    ],
)
def test_a_jsonl_with_a_bad_row_is_one_line_naming_it_before_any_call(
    tmp_path, invoke, content, where
):
    spec = probe(tmp_path)
    (tmp_path / "data.jsonl").write_text(content)
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert f"data.jsonl{where}" in lines[0], lines[0]
    if (tmp_path / "db").exists():  # nothing was started
        listed = invoke("experiments", "--store", tmp_path / "db", "--json").output
        assert json.loads(listed)["experiments"] == []


def test_a_jsonl_with_a_bom_crlf_and_blank_lines_is_read(tmp_path, invoke):
    spec = probe(tmp_path)
    (tmp_path / "data.jsonl").write_bytes(
        b'\xef\xbb\xbf{"id": "a", "inputs": {"question": "x"}}\r\n\r\n   \r\n'
        b'{"id": "b", "inputs": {"question": "y"}}\r\n'
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    assert set(results_of(data)) == {"a", "b"}


def baseline_run(tmp_path: Path, invoke) -> tuple[Path, dict[str, Any]]:
    spec = probe(tmp_path, extra="thresholds: {t: {}}\n")
    saved = tmp_path / "b.json"
    result = invoke("run", spec, "--store", tmp_path / "db", "--save-baseline", saved)
    assert result.exit_code == 0, result.output
    return spec, json.loads(saved.read_text())


@pytest.mark.parametrize(
    "edit",
    [
        "list",
        "scores_list",
        "score_null_row",
        "string_score",
        "empty_file",
        "experiments_not_list",
    ],
)
def test_a_malformed_baseline_is_exit_2_with_one_line(tmp_path, invoke, edit):
    spec, data = baseline_run(tmp_path, invoke)
    path = tmp_path / "b.json"
    experiment = data["experiments"][0]
    if edit == "list":
        text = json.dumps([1, 2])
    elif edit == "scores_list":
        experiment["scores"] = [1.0, 1.0]
        text = json.dumps(data)
    elif edit == "score_null_row":
        experiment["scores"] = {"e0": None, "e1": {"fine": 1.0}}
        text = json.dumps(data)
    elif edit == "string_score":
        experiment["scores"]["e0"]["fine"] = "1.0"
        text = json.dumps(data)
    elif edit == "empty_file":
        text = ""
    else:
        data["experiments"] = {"t": experiment}
        text = json.dumps(data)
    path.write_text(text)
    result = invoke("run", spec, "--store", tmp_path / "db", "--baseline", path)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert "b.json" in lines[0]


@pytest.mark.parametrize("edit", ["other_examples", "other_keys"])
def test_a_baseline_sharing_nothing_with_the_run_is_not_a_pass(tmp_path, invoke, edit):
    spec, data = baseline_run(tmp_path, invoke)
    experiment = data["experiments"][0]
    if edit == "other_examples":
        experiment["scores"] = {f"x{k}": v for k, v in experiment["scores"].items()}
    else:
        experiment["scores"] = {k: {"renamed": 0.5} for k in experiment["scores"]}
        experiment["metrics"] = {"renamed": 0.5}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))
    result = invoke("run", spec, "--store", tmp_path / "db", "--baseline", path)
    # the gate compared nothing: it cannot pass
    assert result.exit_code == 1, result.output
    why = {
        "other_examples": "no example id in common (another dataset, or ids that changed)",
        "other_keys": "no score key in common (the baseline has renamed)",
    }[edit]
    assert (
        f"t: compared nothing with the baseline {experiment['name']!r}: {why}; write it again "
        "with 'agenteval run SPEC --save-baseline FILE'"
    ) in result.text
    assert "gate passed" not in result.text


# == a run's last second ==================================================================

ROWS3 = "".join(json.dumps(row) + "\n" for row in projects.rows(3))


def body_target(folder: Path, body: str, *, extra: str = "", asynchronous: bool = False) -> Path:
    """A target whose ``answer`` runs ``body`` first, on three rows."""
    code = answer_after(
        body,
        imports="io, os, shutil, signal, subprocess, sys, threading, time",
        asynchronous=asynchronous,
    )
    return project(folder, code, dataset="rows.jsonl", concurrency=1, extra=extra)


def finish(process: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"still running after {timeout} s") from None


def stored_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_json_on_stdout_stays_valid_when_the_target_prints(tmp_path, asynchronous):
    spec = body_target(
        tmp_path,
        "print('debug: starting', inputs)\nsys.stdout.write('{not json\\n')\n"
        "os.write(1, b'raw bytes on fd 1\\n')",
        asynchronous=asynchronous,
    )
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "-")
    out, err = finish(process)
    assert process.returncode == 0, err
    document = json.loads(out)  # nothing but the JSON on stdout
    assert len(document["experiments"][0]["results"]) == 3
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "body",
    [
        "sys.stdout = io.StringIO()",  # swapped for good
        "sys.stderr.close()",
        "sys.stdout = None",
    ],
)
def test_a_target_replacing_its_streams_keeps_the_json_and_the_exit_code(tmp_path, body):
    spec = body_target(tmp_path, body)
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "-")
    out, err = finish(process)
    assert process.returncode == 0, err
    assert len(json.loads(out)["experiments"][0]["results"]) == 3
    assert "Traceback" not in err


def test_a_target_that_chdirs_into_a_folder_it_then_removes_moves_no_output(
    tmp_path, invoke, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    spec = body_target(
        tmp_path,
        "gone = HERE / ('gone-' + inputs['question'])\ngone.mkdir()\nos.chdir(gone)\n"
        "os.rmdir(gone)",
    )
    result = invoke("run", spec.name, "--store", "db/s.db", "--json", "r.json", "--html", "r.html")
    assert result.exit_code == 0, result.output
    assert Path.cwd() == tmp_path
    assert len(json.loads((tmp_path / "r.json").read_text())["experiments"][0]["results"]) == 3
    assert (tmp_path / "r.html").is_file()


def test_a_target_that_repoints_the_store_variable_changes_no_store(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTEVAL_STORE", str(tmp_path / "first.db"))
    spec = body_target(tmp_path, f"os.environ['AGENTEVAL_STORE'] = {str(tmp_path / 'x.db')!r}")
    result = invoke("run", spec.name)
    assert result.exit_code == 0, result.output
    assert stored_count(tmp_path / "first.db") == 3
    assert not (tmp_path / "x.db").exists()
    assert "x.db" not in result.text


@pytest.mark.parametrize("code", [0, 3, "'bye'"])
def test_a_target_calling_sys_exit_is_its_examples_error(tmp_path, invoke, code):
    spec = body_target(
        tmp_path,
        f"if inputs['question'] == 'q1':\n    sys.exit({code})",
        extra="max_error_rate: 0.5\n",
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output  # one error of three, within max_error_rate
    results = results_of(data)
    assert set(results) == {"e0", "e1", "e2"}
    assert "SystemExit" in results["e1"]["error"]
    assert results["e0"]["error"] is None and results["e2"]["error"] is None


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_target_calling_sys_exit_in_a_thread_of_its_own_is_harmless(tmp_path, invoke):
    spec = body_target(
        tmp_path, "t = threading.Thread(target=sys.exit, args=(7,))\nt.start()\nt.join()"
    )
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    assert len(results_of(data)) == 3


@pytest.mark.slow
def test_a_target_calling_os_exit_keeps_what_finished_and_is_never_exit_0(tmp_path):
    spec = body_target(
        tmp_path,
        "if inputs['question'] == 'q2':\n"
        "    time.sleep(0.5)  # the results before are committed (group commits: 50 ms)\n"
        "    threading.Thread(target=os._exit, args=(0,)).start()\n    time.sleep(5)",
    )
    process = agenteval(tmp_path, "run", spec.name, "--store", "db")
    _, err = finish(process)
    assert process.returncode == 3, err  # the run did not finish: it must not read as success
    assert err.strip().splitlines()[-1] == (
        "error: a target called os._exit(0) during the run; the results that finished are "
        "saved in the store, and --resume continues the run"
    )
    assert stored_count(tmp_path / "db") == 2  # what finished before is kept
    resumed = agenteval(tmp_path, "run", spec.name, "--store", "db", "--resume")
    assert finish(resumed) and resumed.returncode == 3  # the same target, the same exit


@pytest.mark.slow
def test_a_target_leaving_a_non_daemon_thread_does_not_hold_the_exit(tmp_path):
    spec = body_target(
        tmp_path, "threading.Thread(target=time.sleep, args=(3600,), name='lingering').start()"
    )
    started = time.monotonic()
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "r.json")
    _, err = finish(process, timeout=60)
    assert time.monotonic() - started < 40
    assert process.returncode == 0, err
    assert len(json.loads((tmp_path / "r.json").read_text())["experiments"][0]["results"]) == 3


def test_a_secret_the_target_prints_into_its_answer_is_redacted(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    spec = body_target(
        tmp_path,
        "key = os.environ['ANTHROPIC_API_KEY']\nos.environ['ANTHROPIC_API_KEY'] = 'changed'\n"
        "raise ValueError('auth failed for ' + key.upper().lower())",
    )
    result, data = run_json(invoke, tmp_path, spec, "--markdown", tmp_path / "r.md")
    assert result.exit_code == 3, result.output
    for text in (result.output, json.dumps(data), (tmp_path / "r.md").read_text()):
        assert SECRET not in text


# == the cache ============================================================================

CACHED_TARGET = """
import os
from helpers.wording import suffix

def answer(inputs):
    return {"final_response": inputs["question"] + suffix() + os.environ.get("PROBE_MODE", "")}
"""

LAZY_TARGET = """
def answer(inputs):
    import lazy_wording
    return {"final_response": inputs["question"] + lazy_wording.SUFFIX}
"""


def cached_project(folder: Path, target: str, target_options: str = "") -> Path:
    """A cached target whose module imports helpers of the project's own, on three rows."""
    return project(
        folder,
        target,
        options=target_options.removeprefix(", "),
        dataset="rows.jsonl",
        evaluators="[{name: check, type: custom, target: checks.py:check}]",
        extra="cache: true\n",
        files={
            "helpers/__init__.py": "",
            "helpers/wording.py": (
                "from .words import WORD\n\ndef suffix():\n    return ' ' + WORD\n"
            ),
            "helpers/words.py": "WORD = 'old'\n",
            "lazy_wording.py": "SUFFIX = ' old'\n",
            "checks.py": "def check(outputs):\n    return 1.0\n",
        },
    )


def cli_json(folder: Path, spec: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``agenteval run SPEC --json`` in a process of its own: each run imports the target's
    modules afresh, as a user's next run does. No byte-code is written: Python would take a
    module edited to the same size within its second from its own stale cache, whatever
    agenteval's cache decides."""
    process = agenteval(
        folder, "run", spec.name, "--store", "db", "--json", "r.json",
        env={"PYTHONPATH": f"{ROOT}{os.pathsep}{folder}", "PYTHONDONTWRITEBYTECODE": "1",
             **(env or {})},
    )  # fmt: skip
    _, err = finish(process)
    assert process.returncode == 0, err
    return json.loads((folder / "r.json").read_text())


def answers(folder: Path, spec: Path, **env: str) -> tuple[list[str], list[bool]]:
    found = sorted(results_of(cli_json(folder, spec, env)).values(), key=lambda r: r["example_id"])
    return [r["outputs"]["final_response"] for r in found], [r["cached"] for r in found]


OLD = ["q0 old", "q1 old", "q2 old"]
NEW = ["q0 new", "q1 new", "q2 new"]


@pytest.mark.slow
@pytest.mark.parametrize("same_size_and_mtime", [False, True])
def test_editing_a_module_a_helper_imports_relatively_is_a_miss(tmp_path, same_size_and_mtime):
    spec = cached_project(tmp_path, CACHED_TARGET)
    assert answers(tmp_path, spec) == (OLD, [False] * 3)
    assert answers(tmp_path, spec) == (OLD, [True] * 3)
    words = tmp_path / "helpers" / "words.py"
    before = words.stat()
    words.write_text("WORD = 'new'\n")  # the same size
    if same_size_and_mtime:
        os.utime(words, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert answers(tmp_path, spec) == (NEW, [False] * 3)


@pytest.mark.slow
def test_editing_a_module_imported_inside_the_target_function_is_a_miss(tmp_path):
    spec = cached_project(tmp_path, LAZY_TARGET)
    assert answers(tmp_path, spec) == (OLD, [False] * 3)
    (tmp_path / "lazy_wording.py").write_text("SUFFIX = ' new'\n")
    assert answers(tmp_path, spec) == (NEW, [False] * 3)


@pytest.mark.slow
def test_a_cache_env_variable_set_empty_is_not_the_same_as_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("PROBE_MODE", raising=False)
    spec = cached_project(tmp_path, CACHED_TARGET, ", cache_env: [PROBE_MODE]")
    assert answers(tmp_path, spec) == (OLD, [False] * 3)
    assert answers(tmp_path, spec, PROBE_MODE="") == (OLD, [False] * 3)
    assert answers(tmp_path, spec, PROBE_MODE="") == (OLD, [True] * 3)
    assert answers(tmp_path, spec, PROBE_MODE="x") == ([a + "x" for a in OLD], [False] * 3)


@pytest.mark.slow
def test_an_edited_evaluator_scores_cached_answers_afresh(tmp_path):
    spec = cached_project(tmp_path, CACHED_TARGET)
    assert {r["scores"]["check"] for r in results_of(cli_json(tmp_path, spec)).values()} == {1.0}
    (tmp_path / "checks.py").write_text("def check(outputs):\n    return 0.0\n")
    found = list(results_of(cli_json(tmp_path, spec)).values())
    assert [r["cached"] for r in found] == [True] * 3
    assert {r["scores"]["check"] for r in found} == {0.0}  # no stale score


# == signals and services =================================================================

SLOW_EVALS = """
import os, time
from pathlib import Path

def slow(outputs):
    if outputs["final_response"].endswith("q1"):
        Path(os.environ["MARK"]).write_text("scoring")
        time.sleep(60)
    return 1.0
"""


def wait_for(path: Path, process: subprocess.Popen, limit: float = 90) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "never got there"
        time.sleep(0.02)


def experiment_statuses(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [s for (s,) in conn.execute("SELECT status FROM experiments")]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_scoring_saves_every_result_and_says_how_to_resume(tmp_path, name):
    spec = body_target(
        tmp_path, "pass",
        extra="evaluator_timeout_s: 100\n"
        "evaluators: [{name: slow, type: custom, target: evals.py:slow}]\n",
    )  # fmt: skip
    (tmp_path / "evals.py").write_text(SLOW_EVALS)
    mark = tmp_path / "mark"
    process = agenteval(
        tmp_path, "run", spec.name, "--store", "db", "--json", "r.json", env={"MARK": str(mark)}
    )
    wait_for(mark, process)
    started = time.monotonic()
    process.send_signal(getattr(signal, name))
    _, err = finish(process, timeout=60)
    assert time.monotonic() - started < 15, err  # the grace period and the forced end
    assert process.returncode == 130, err
    assert "Traceback" not in err
    text = " ".join(err.split())
    assert "resume with: agenteval run" in text and "--resume" in text
    assert experiment_statuses(tmp_path / "db") == ["interrupted"]
    with sqlite3.connect(tmp_path / "db") as conn:
        stored = dict(conn.execute("SELECT example_id, scores_json FROM results"))
    assert "e0" in stored and "e1" in stored  # the one cut short is saved, null, saying why
    assert "not scored" in stored["e1"]


@pytest.mark.slow
def test_sigterm_while_a_judge_server_hangs_ends_the_run_in_bounded_time(tmp_path):
    import socket

    sock = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(sock.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        spec = probe(tmp_path, evaluators=judge(base_url))
        process = agenteval(
            tmp_path, "run", spec.name, "--store", "db", env={"OPENAI_API_KEY": SECRET}
        )
        deadline = time.monotonic() + 90
        while not held:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, err = finish(process, timeout=60)
    finally:
        sock.close()
        for conn in held:
            conn.close()
    assert time.monotonic() - started < 15, err
    assert process.returncode == 130, err
    assert "Traceback" not in err and SECRET not in err
    assert experiment_statuses(tmp_path / "db") == ["interrupted"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGHUP"])
def test_a_signal_during_an_upload_is_one_line_and_the_next_upload_finishes(
    tmp_path, invoke, monkeypatch, name
):
    from langsmith_stub import serving

    with serving(monkeypatch) as server:
        assert server._httpd is not None
        server._httpd.handle_error = quiet  # type: ignore[method-assign]  # the killed upload
        spec = probe(tmp_path, rows=6)
        assert invoke("run", spec, "--store", tmp_path / "db").exit_code == 0
        with sqlite3.connect(tmp_path / "db") as conn:
            (experiment,) = [n for (n,) in conn.execute("SELECT name FROM experiments")]
        server.latency_s = 0.5
        env = {k: v for k, v in os.environ.items() if k.startswith(("LANGSMITH", "AGENTEVAL_L"))}
        process = agenteval(tmp_path, "upload", experiment, "--store", "db", env=env)
        deadline = time.monotonic() + 60
        while not server.requests:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(getattr(signal, name))
        _, err = finish(process, timeout=60)
        assert process.returncode == 130, err
        assert "Traceback" not in err
        [line] = [line for line in err.splitlines() if "interrupted" in line]
        head = f"interrupted ({'Ctrl-C' if name == 'SIGINT' else name}); "
        assert line.startswith(head), err
        # stopped while the dataset was pushed, or while results were sent: each says so
        said = line[len(head) :]
        assert said == "what was written before stays written" or re.fullmatch(
            r"\d+ of 6 result\(s\) were sent to LangSmith and are marked so; "
            r"'agenteval upload \S+ --store db' sends the rest",
            said,
        ), err
        assert server.api_key not in err
        server.latency_s = 0
        again = invoke("upload", experiment, "--store", tmp_path / "db")
        assert again.exit_code == 0, again.output
        assert "Traceback" not in again.output
        roots = [r for r in server.runs_of(experiment) if not r.get("parent_run_id")]
        assert len(roots) == 6


@pytest.mark.slow
def test_sigterm_with_json_on_stdout_leaves_stdout_empty_or_valid(tmp_path):
    spec = body_target(
        tmp_path,
        "if inputs['question'] == 'q1':\n    (HERE / 'mark').write_text('')\n    time.sleep(60)",
    )
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "-")
    wait_for(tmp_path / "mark", process)
    process.send_signal(signal.SIGTERM)
    out, err = finish(process, timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    if out.strip():  # what is on stdout is one JSON document, never a torn one
        json.loads(out)
    assert stored_count(tmp_path / "db") == 1


@pytest.mark.slow
@pytest.mark.parametrize("handler", ["signal.SIG_DFL", "signal.SIG_IGN"])
def test_a_target_resetting_the_sigterm_handler_does_not_lose_the_stop(tmp_path, handler):
    spec = body_target(
        tmp_path,
        f"signal.signal(signal.SIGTERM, {handler})\n"
        "if inputs['question'] == 'q1':\n    (HERE / 'mark').write_text('')\n"
        "    await asyncio.sleep(60)",
        asynchronous=True,
    )
    (tmp_path / "target.py").write_text("import asyncio\n" + (tmp_path / "target.py").read_text())
    process = agenteval(tmp_path, "run", spec.name, "--store", "db")
    wait_for(tmp_path / "mark", process)
    process.send_signal(signal.SIGTERM)
    _, err = finish(process, timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert experiment_statuses(tmp_path / "db") == ["interrupted"]
    assert stored_count(tmp_path / "db") == 1
    assert "resume with" in " ".join(err.split())


# == odd settings, odd answers ============================================================


@pytest.mark.parametrize(
    "setting",
    [
        "evaluator_timeout_s: .nan",
        "evaluator_timeout_s: -1",
        "evaluator_timeout_s: 0",
        "timeout_s: .nan",
        "concurrency: 0",
        "evaluator_concurrency: -2",
    ],
)
def test_a_nonsense_limit_is_one_line_and_exit_2(tmp_path, invoke, setting):
    spec = probe(tmp_path, extra=f"{setting}\n")
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert setting.split(":")[0] in lines[0]


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_target_answering_nan_and_odd_types_keeps_the_json_strict(tmp_path, invoke):
    spec = body_target(
        tmp_path,
        "import datetime, decimal\n"
        "return {'final_response': 'x', 'confidence': float('nan'), 'big': float('inf'),\n"
        "        'when': datetime.datetime(2026, 1, 2), 'tags': {'a'},\n"
        "        'price': decimal.Decimal('1.5'), 'raw': b'bytes'}",
    )
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    data = strict_json((tmp_path / "r.json").read_text())
    (experiment,) = data["experiments"]
    assert len(experiment["results"]) == 3
    assert all(r["outputs"]["final_response"] == "x" for r in experiment["results"])


def test_a_json_path_that_is_a_folder_is_exit_4_and_the_results_are_kept(tmp_path, invoke):
    spec = probe(tmp_path)
    (tmp_path / "out").mkdir()
    result = invoke("run", spec, "--store", tmp_path / "db", "--json", tmp_path / "out")
    assert result.exit_code in (2, 4), result.output
    assert "Traceback" not in result.output
    assert sum(line.startswith("error:") for line in result.output.splitlines()) == 1
    if result.exit_code == 4:
        assert stored_count(tmp_path / "db") == 3


LEAKY_EVALS = """
import os

def leaky(outputs):
    key = os.environ["OPENAI_API_KEY"]
    return {"key": "leaky", "score": None, "comment": f"evaluator 'leaky' failed: key {key}"}

def escapes(outputs):
    raise RuntimeError("\\x1b[2J\\x1b[31mfake red [bold]markup[/bold] \\x07 done")

def prints(outputs):
    print("evaluator says hi")
    return 1.0
"""


def test_a_secret_in_an_evaluators_comment_is_redacted_everywhere(tmp_path, invoke, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    spec = probe(tmp_path, evals_code=LEAKY_EVALS, evaluators=custom("leaky"))
    result, data = run_json(invoke, tmp_path, spec, "--markdown", tmp_path / "r.md")
    assert result.exit_code == 3, result.output
    with sqlite3.connect(tmp_path / "db") as conn:
        stored = " ".join(str(row) for row in conn.execute("SELECT scores_json FROM results"))
    for text in (result.output, json.dumps(data), (tmp_path / "r.md").read_text(), stored):
        assert SECRET not in text


def test_control_characters_in_an_evaluators_error_do_not_reach_the_terminal(tmp_path, invoke):
    spec = probe(tmp_path, evals_code=LEAKY_EVALS, evaluators=custom("escapes"))
    result, _ = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 3, result.output
    assert "\x1b[2J" not in result.output and "\x07" not in result.output
    assert "[bold]markup[/bold]" in result.text  # markup shown as written


def test_an_evaluator_that_prints_keeps_json_on_stdout_valid(tmp_path):
    spec = probe(tmp_path, evals_code=LEAKY_EVALS, evaluators=custom("prints"))
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "-")
    out, err = finish(process)
    assert process.returncode == 0, err
    assert len(strict_json(out)["experiments"][0]["results"]) == 3
    assert "evaluator says hi" in err


@pytest.mark.slow
def test_a_reader_closing_the_pipe_mid_document_is_exit_4_with_one_line(tmp_path):
    spec = body_target(tmp_path, "inputs = {'question': inputs['question'] * 50000}")
    process = agenteval(tmp_path, "run", spec.name, "--store", "db", "--json", "-")
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(100)  # `| head -c 100`
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=120) == 4, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert sum(line.startswith("error:") for line in err.splitlines()) == 1, err
    assert stored_count(tmp_path / "db") == 3


def test_a_corrupt_store_is_one_line_on_every_reading_command(tmp_path, invoke):
    db = tmp_path / "db"
    db.write_bytes(b"this is not a database" * 100)
    for args in (
        ["experiments"],
        ["experiments", "--json"],
        ["cache", "info"],
        ["compare", "a", "b"],
    ):
        result = invoke(*args, "--store", db, catch_exceptions=True)
        assert result.exit_code in (2, 4), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (args, result.output)


def test_cache_info_after_the_target_file_is_gone_is_no_traceback(tmp_path, invoke):
    spec = cached_project(tmp_path, LAZY_TARGET)
    fresh = invoke("run", spec, "--store", tmp_path / "db")
    assert fresh.exit_code == 0, fresh.output
    (tmp_path / "lazy_wording.py").unlink()
    (tmp_path / "target.py").unlink()
    info = invoke("cache", "info", "--store", tmp_path / "db")
    assert info.exit_code == 0, info.output
    assert "3" in info.text and "no longer match" in info.text, info.output


def test_a_lone_surrogate_in_a_later_row_is_named(tmp_path, invoke):
    spec = probe(tmp_path)
    (tmp_path / "data.jsonl").write_text(
        '{"id": "a", "inputs": {"question": "x"}}\n'
        '{"id": "b", "inputs": {"question": "y \\ud800 z"}}\n'
    )
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "data.jsonl:2" in lines[0], result.output


@pytest.mark.filterwarnings("error::RuntimeWarning")  # "coroutine ... was never awaited"
def test_a_sync_target_returning_a_coroutine_is_awaited(tmp_path, invoke):
    spec = body_target(
        tmp_path,
        "async def later():\n    return {'final_response': 'awaited ' + inputs['question']}\n"
        "return later()",
    )
    result, data = run_json(invoke, tmp_path, spec)
    found = results_of(data)
    assert result.exit_code == 0, result.output  # awaited, as an async target's answer is
    assert {k: r["outputs"] for k, r in found.items()}["e0"] == {"final_response": "awaited q0"}


@pytest.mark.parametrize("returned", ["None", "42", "['a', 'b']"])
def test_a_target_returning_no_answer_never_scores_as_answered(tmp_path, invoke, returned):
    spec = body_target(tmp_path, f"return {returned}")
    spec.write_text(spec.read_text() + "evaluators: [resolution_coverage]\n")
    rows = "".join(
        json.dumps(
            {"id": f"e{i}", "inputs": {"question": f"q{i}"}, "outputs": {"must_mention": []}}
        )
        + "\n"
        for i in range(3)
    )
    (tmp_path / "rows.jsonl").write_text(rows)  # nothing to mention: 1.0 for any answer
    result, data = run_json(invoke, tmp_path, spec)
    assert "Traceback" not in result.output
    for found in results_of(data).values():
        if found["error"] is None:  # taken as an answer: it is what the target returned
            assert found["outputs"] not in ({}, None)
        else:
            assert found["scores"]["resolution_coverage"] is None


class RawServer:
    """Answers every request with the same status, content type and body."""

    def __init__(self, status: int, body: bytes, content_type: str) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.handle_error = quiet  # type: ignore[method-assign]
        serve(self.httpd)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (200, b"<html><body>502 Bad Gateway (proxy)</body></html>", "text/html"),
        (200, b'{"id": "x", "object": "chat.completion"}', "application/json"),  # no choices
        (200, b'{"choices": [{"index": 0, "message": {"role": "assistant"}}]}', "application/json"),
        (502, b"<html>Bad Gateway</html>", "text/html"),
    ],
)
def test_a_judge_behind_a_broken_proxy_fails_the_run(
    tmp_path, invoke, monkeypatch, status, body, content_type
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = RawServer(status, body, content_type)
    try:
        spec = probe(tmp_path, evaluators=custom("fine") + judge(server.base_url))
        result, data = run_json(invoke, tmp_path, spec)
    finally:
        server.stop()
    assert result.exit_code == 3, result.output
    assert "quality failed on every result" in result.text
    for found in results_of(data).values():
        assert found["scores"] == {"fine": 1.0, "quality": None}
        assert found["comments"]["quality"].startswith("evaluator 'quality' failed: ")


@pytest.mark.slow
@pytest.mark.parametrize("target", ["evals/target.py:answer", "evalpkg.target:answer"])
def test_editing_the_project_package_a_target_wraps_is_a_miss(tmp_path, target):
    """The usual layout: an eval folder (or package) wrapping the project's own package,
    importable from the project's folder (on the path, or an editable install)."""
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "graph.py").write_text("WORD = 'old'\n")
    for folder in ("evals", "evalpkg"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "target.py").write_text(
            "from myapp.graph import WORD\n\n"
            "def answer(inputs):\n    return {'final_response': inputs['question'] + ' ' + WORD}\n"
        )
    (tmp_path / "rows.jsonl").write_text(ROWS3)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: rows.jsonl\ntargets: {{t: '{target}'}}\ncache: true\n"
        "evaluators: [resolution_coverage]\n"
    )
    assert answers(tmp_path, spec) == (OLD, [False] * 3)
    assert answers(tmp_path, spec) == (OLD, [True] * 3)
    (tmp_path / "myapp" / "graph.py").write_text("WORD = 'new'\n")
    assert answers(tmp_path, spec) == (NEW, [False] * 3)


LANGSMITH_STYLE = """
from langsmith.evaluation import EvaluationResult, EvaluationResults


class RunExample:
    def __call__(self, run, example):
        return EvaluationResult(key="run_example", score=1, comment=run.outputs["final_response"])


run_example = RunExample()


def several(run, example):
    return EvaluationResults(results=[EvaluationResult(key="a", score=0.5),
                                      EvaluationResult(key="b", score=None, comment="n/a")])
"""


def test_langsmith_style_evaluators_returning_evaluation_results_are_scored(tmp_path, invoke):
    spec = probe(tmp_path, evals_code=LANGSMITH_STYLE, evaluators=custom("run_example", "several"))
    result, data = run_json(invoke, tmp_path, spec)
    assert result.exit_code == 0, result.output
    found = results_of(data)["e1"]
    assert found["scores"] == {"run_example": 1.0, "a": 0.5, "b": None}
    assert found["comments"]["run_example"] == "about q1"


@pytest.mark.slow
def test_sigterm_during_a_dataset_push_is_one_line_and_exit_130(tmp_path, monkeypatch):
    from langsmith_stub import serving

    with serving(monkeypatch) as server:
        assert server._httpd is not None
        server._httpd.handle_error = quiet  # type: ignore[method-assign]  # the killed push
        spec = probe(tmp_path, rows=50)
        server.latency_s = 0.5
        env = {k: v for k, v in os.environ.items() if k.startswith(("LANGSMITH", "AGENTEVAL_L"))}
        process = agenteval(tmp_path, "dataset", "push", "--config", spec.name, env=env)
        deadline = time.monotonic() + 60
        while not server.requests:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        _, err = finish(process, timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and server.api_key not in err
    assert err.strip().splitlines()[-1].startswith("interrupted (SIGTERM)"), err


@pytest.mark.slow
def test_resuming_after_the_target_was_edited_says_the_answers_mix_two_versions(tmp_path):
    spec = body_target(
        tmp_path,
        "if inputs['question'] == 'q2' and not (HERE / 'fixed').exists():\n"
        "    time.sleep(0.5)\n    os._exit(1)",
    )
    first = agenteval(tmp_path, "run", spec.name, "--store", "db")
    finish(first)
    assert first.returncode == 1 and stored_count(tmp_path / "db") == 2
    target = tmp_path / "target.py"
    target.write_text(target.read_text().replace("'answer to '", "'the answer to '"))
    (tmp_path / "fixed").write_text("")
    resumed = agenteval(tmp_path, "run", spec.name, "--store", "db", "--resume")
    _, err = finish(resumed)
    assert resumed.returncode == 0, err
    assert "target.py changed" in " ".join(err.split())  # 2 old answers, 1 new, in one experiment
