"""Hostile input: every broken file under tests/data/bad/ gets one clear line and exit 2, or,
for a per-example failure, a recorded error while the run completes. Never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "data" / "bad"

# spec file -> (line the error names, or None; a fragment of the message)
SPEC_ERRORS = {
    "yaml_syntax.yaml": (3, "invalid YAML"),
    "tab_indent.yaml": (3, "indent with spaces, not tabs"),
    "empty.yaml": (None, "spec file is empty"),
    "only_comments.yaml": (None, "spec file is empty"),
    "top_level_list.yaml": (1, "the top level must be a mapping"),
    "unknown_key.yaml": (3, "unknown key 'concurency' (did you mean 'concurrency'?)"),
    "wrong_type.yaml": (3, "concurrency: expected an integer from 1 to 1024, got 'four'"),
    "negative_timeout.yaml": (3, "timeout_s: expected a number > 0, got -1"),
    "missing_targets.yaml": (1, "missing required key 'targets'"),
    "missing_dataset_file.yaml": (1, "file not found"),
    "targets_list.yaml": (2, "expected a mapping of target names to import paths"),
    "bad_import_syntax.yaml": (2, "malformed import path 'not an import path'"),
    "missing_module.yaml": (2, "no module named 'no_such_package'"),
    "missing_attr.yaml": (2, "has no attribute 'answr' (did you mean 'answer'?)"),
    "target_file_missing.yaml": (2, "missing.py' does not exist"),
    "import_raises.yaml": (2, "raised RuntimeError: database not reachable at import time"),
    "import_syntax_error.yaml": (2, "raised SyntaxError"),
    "target_not_callable.yaml": (2, "is a int, not a graph, Runnable or function"),
    "unknown_evaluator.yaml": (3, "did you mean 'routing_accuracy'?"),
    "not_utf8.yaml": (3, "not valid UTF-8"),
    "bad_retries.yaml": (3, "retries.max: expected an integer >= 0, got 'lots'"),
    "bad_retry_kind.yaml": (3, "unknown error kind 'ratelimit' (did you mean 'rate_limit'?)"),
    "bad_rate_limit.yaml": (3, "requests_per_minute: expected a number > 0, got 0"),
    "cache_not_bool.yaml": (3, "cache: expected true or false"),
    "unset_env.yaml": (1, "environment variable 'AGENTEVAL_TEST_UNSET_DATASET' is not set"),
    "evaluator_module_missing.yaml": (4, "no_evals.py' does not exist"),
    "import_exits.yaml": (2, "exits_on_import.py' raised SystemExit: 0"),
    "huge_concurrency.yaml": (3, "concurrency: expected an integer from 1 to 1024, got 1000000"),
    "nan_timeout.yaml": (3, "timeout_s: expected a number > 0, got nan"),
    "infinite_delay.yaml": (3, "retries.initial_delay_s: expected a number >= 0, got inf"),
    "arabic_digits.yaml": (3, "repetitions: expected an integer from 1 to 1000, got '١٢'"),
}

# dataset file -> (line the error names, or None; a fragment of the message)
DATASET_ERRORS: dict[str, tuple[int | str | None, str]] = {
    "empty.jsonl": (None, "contains no examples"),
    "blank_lines.jsonl": (None, "contains no examples"),
    "invalid_json_line.jsonl": (2, "invalid JSON"),
    "no_inputs.jsonl": (2, "row has no 'inputs'"),
    "inputs_not_object.jsonl": (1, "'inputs' must be an object"),
    "duplicate_ids.jsonl": (3, "duplicate id 'a' (same as line 1)"),
    "unknown_row_key.jsonl": (1, "unknown key 'expected'"),
    "not_utf8.jsonl": (1, "not valid UTF-8 (byte 0xe9"),
    "bad_id_type.jsonl": (2, "'id' must be a non-empty string or an integer, got true"),
    "conversation_turn_references.jsonl": (2, "outputs.turns has 1 entry for 2 turns (give one"),
    "ragged.csv": (3, "row has 4 cells but the header has 3 columns"),
    "unclosed_quote.csv": (2, "invalid CSV"),
    "bad_json_cell.csv": (2, "column 'outputs.must_mention': invalid JSON"),
    "header_only.csv": (None, "contains no examples"),
    "unnamed_column.csv": (1, "column 3 has no name"),
    "not_a_list.json": (None, "expected a list of rows, got a single row"),
    "invalid.json": (2, "invalid JSON"),
    "bad.yaml": (2, "invalid YAML"),
    "rows_not_objects.yaml": ("1 row 1", "row is not an object"),
    "unknown_suffix.txt": (None, "unknown dataset format '.txt'"),
}


def assert_one_line_error(result, file: Path | str, line: int | str | None, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    text = result.output.strip()
    assert "\n" not in text and "Traceback" not in text, text
    where = f"{file}:{line}:" if line is not None else f"{file}:"
    assert text.startswith(f"error: {where}"), text
    assert fragment in text, text
    assert len(text) < 400  # never a dump of the offending input


def assert_validate_errors(result, file: str, line: int | str | None, fragment: str) -> None:
    """``dataset validate`` reports every bad row: the first is the line a run reports; with
    more than one, each has its line and a last line counts them (and the valid rows)."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    where = f"{file}:{line}:" if line is not None else f"{file}:"
    assert lines[0].startswith(f"error: {where}") and fragment in lines[0], lines
    assert all(len(text) < 400 for text in lines)  # never a dump of the offending input
    if len(lines) > 1:
        errors = lines[:-1]
        assert all(text.startswith(f"error: {file}:") for text in errors), lines
        assert lines[-1].startswith(f"{file}: "), lines
        assert lines[-1].endswith(f", {len(errors)} bad row(s)"), lines


def test_the_corpus_holds_at_least_40_broken_inputs():
    files = [p for p in BAD.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) >= 40
    assert set(SPEC_ERRORS) <= {p.name for p in (BAD / "specs").iterdir()}
    assert set(DATASET_ERRORS) <= {p.name for p in (BAD / "datasets").iterdir()}


@pytest.mark.parametrize("name", sorted(SPEC_ERRORS))
def test_a_broken_spec_is_one_line_and_exit_2(name, tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(BAD)
    monkeypatch.delenv("AGENTEVAL_TEST_UNSET_DATASET", raising=False)
    line, fragment = SPEC_ERRORS[name]
    result = invoke("run", f"specs/{name}", "--store", tmp_path / "db")
    assert_one_line_error(result, f"specs/{name}", line, fragment)


@pytest.mark.parametrize("name", sorted(DATASET_ERRORS))
def test_a_broken_dataset_is_one_line_and_exit_2_in_validate_and_run(
    name, tmp_path, monkeypatch, invoke
):
    monkeypatch.chdir(BAD)
    line, fragment = DATASET_ERRORS[name]
    checked = invoke("dataset", "validate", f"datasets/{name}")
    assert_validate_errors(checked, f"datasets/{name}", line, fragment)
    if name.endswith(".txt"):
        return  # a spec refuses the suffix before reading the file, tested above
    spec = tmp_path / "spec.yaml"
    target = BAD / "targets" / "good.py"
    spec.write_text(f"dataset: {BAD / 'datasets' / name}\ntargets: {{good: {target}:answer}}\n")
    ran = invoke("run", spec, "--store", tmp_path / "db")
    assert_one_line_error(ran, BAD / "datasets" / name, line, fragment)


def test_a_10_mb_line_is_read_and_a_10_mb_broken_line_is_reported_briefly(tmp_path, invoke):
    big = tmp_path / "big.jsonl"
    question = "x" * (10 * 1024 * 1024)
    big.write_text(json.dumps({"id": "big", "inputs": {"question": question}}) + "\n")
    assert invoke("dataset", "validate", big).exit_code == 0
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "inputs": {"question": "ok"}}\n{"inputs": "' + question + "\n")
    result = invoke("dataset", "validate", broken)
    assert_one_line_error(result, broken, 2, "invalid JSON")


def test_a_bom_spec_and_a_bom_dataset_just_work(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(BAD)
    result = invoke("run", "specs/bom.yaml", "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output


def results_by_target(
    invoke, tmp_path: Path, spec: str, exit_code: int = 0
) -> dict[str, dict[str, dict]]:
    out = tmp_path / "r.json"
    result = invoke("run", BAD / "specs" / spec, "--store", tmp_path / "db", "--json", out)
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output
    return {
        e["target"]: {r["example_id"]: r for r in e["results"]}
        for e in json.loads(out.read_text())["experiments"]
    }


def test_misbehaving_targets_are_recorded_per_example_and_the_run_completes(tmp_path, invoke):
    found = results_by_target(invoke, tmp_path, "target_misbehaves.yaml", exit_code=3)
    for example in ("n", "l", "s"):
        assert found["int"][example]["error"] == (
            "TypeError: target returned int; return a dict (or a string)"
        )
        assert found["none"][example]["error"].startswith("TypeError: target returned NoneType")
        assert found["raises"][example]["error"] == "KeyError: 'customer_id'"
        circular = found["circular"][example]["error"]
        assert circular.startswith("target returned outputs that cannot be stored")
        odd = found["odd_values"][example]
        assert odd["error"] is None and odd["outputs"]["handle"].startswith("<object object")
        assert sorted(odd["outputs"]["when"]) == [1, 2]
    assert found["lower"]["n"]["error"] == "AttributeError: 'int' object has no attribute 'lower'"
    assert found["lower"]["l"]["error"].startswith("AttributeError: 'list' object")
    assert found["lower"]["s"]["error"] is None  # the string question is fine


def test_misbehaving_evaluators_give_null_scores_with_reasons(tmp_path, invoke):
    found = results_by_target(invoke, tmp_path, "evaluators_misbehave.yaml", exit_code=3)
    result = found["good"]["a"]
    assert result["error"] is None
    assert result["scores"] == {
        "raises": None,
        "garbage": None,
        "string_score": None,
        "returns_none": None,
        "fine": 1.0,
    }
    assert "ZeroDivisionError: division by zero" in result["comments"]["raises"]
    assert "return a dict with 'score'" in result["comments"]["garbage"]


def test_a_graph_without_its_input_key_fails_before_any_call(tmp_path, invoke):
    spec = BAD / "specs" / "graph_missing_input_key.yaml"
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert_one_line_error(
        result, spec, 2, "target 'supervisor' reads inputs.question, which every example"
    )
    assert "(row 1 has: text)" in result.output


def test_hanging_targets_time_out_and_the_process_still_exits(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "agenteval_cli.cli", "run", "specs/target_hangs.yaml"),
            *("--store", str(tmp_path / "db"), "--json", str(tmp_path / "r.json")),
        ],
        cwd=BAD,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr  # run errors: the timed-out calls
    assert "errors: sync: 2 of 2 call(s) failed (100.0%, above max_error_rate 0)" in done.stderr
    assert time.monotonic() - started < 30  # a thread stuck in time.sleep(3600) is abandoned
    experiments = json.loads((tmp_path / "r.json").read_text())["experiments"]
    errors = {e["target"]: {r["error"] for r in e["results"]} for e in experiments}
    assert errors == {
        "sync": {"TimeoutError: no answer within 0.3 s"},
        "async": {"TimeoutError: no answer within 0.3 s"},
        "good": {None},
    }


def test_a_base_exception_in_a_target_is_that_examples_error_never_a_silent_exit(tmp_path, invoke):
    found = results_by_target(invoke, tmp_path, "target_base_exceptions.yaml")  # max_error_rate: 1
    errors = {target: {r["error"] for r in rows.values()} for target, rows in found.items()}
    assert errors == {
        "exits": {"SystemExit: 0"},
        "exits_async": {"SystemExit: 0"},
        "generator_exit": {"RuntimeError: generator_exit raised GeneratorExit"},
        "stop_iteration": {"RuntimeError: stop_iteration raised StopIteration"},
        "cancelled": {"CancelledError: gave up"},
        "halt": {"Halt: halt"},
        "good": {None},
    }
    assert {len(rows) for rows in found.values()} == {2}


def test_errored_calls_are_summarised_and_fail_the_run_with_exit_3(tmp_path, invoke):
    result = invoke("run", BAD / "specs" / "target_misbehaves.yaml", "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    lines = result.output.splitlines()
    at = lines.index("  errors: lower: 2 of 3 call(s) failed (66.7%, above max_error_rate 0)")
    assert lines[at + 1] == (
        "    2 × AttributeError, first: AttributeError: 'int' object has no attribute 'lower'"
    )
    at = lines.index("  errors: raises: 3 of 3 call(s) failed (100.0%, above max_error_rate 0)")
    assert lines[at + 1] == "    3 × KeyError: 'customer_id'"
    assert "errors: odd_values" not in result.output  # no error, no line
    assert lines[-1] == (
        "  run failed: int, none, circular, raises, lower: calls errored above max_error_rate 0 "
        "(allow a share with --max-error-rate RATE or 'max_error_rate:' in the spec)"
    )


def test_max_error_rate_from_the_cli_or_the_spec_lets_errors_through(tmp_path, invoke):
    spec = BAD / "specs" / "target_misbehaves.yaml"
    # 'lower' fails 2 of 3 (66.7%), the others 3 of 3 or 0 of 3
    allowed = invoke("run", spec, "--store", tmp_path / "db", "--max-error-rate", "1")
    assert allowed.exit_code == 0, allowed.output
    assert "errors: lower: 2 of 3 call(s) failed (66.7%)" in allowed.output
    assert "run failed" not in allowed.output
    too_low = invoke("run", spec, "--store", tmp_path / "db", "--max-error-rate", "0.9")
    assert too_low.exit_code == 3  # 'raises' errored on all of its calls
    assert "errors: lower: 2 of 3 call(s) failed (66.7%)\n" in too_low.output
    assert "errors: raises: 3 of 3 call(s) failed (100.0%, above max_error_rate 0.9)" in (
        too_low.output
    )
    refused = invoke("run", spec, "--store", tmp_path / "db", "--max-error-rate", "2")
    assert refused.exit_code == 2
    written = tmp_path / "spec.yaml"
    written.write_text(
        f"dataset: {BAD / 'datasets' / 'bom.jsonl'}\n"
        f"targets: {{raises: {BAD / 'targets' / 'values.py'}:raises}}\n"
        "max_error_rate: 0.5\n"
    )
    assert invoke("run", written, "--store", tmp_path / "db").exit_code == 3  # 2 of 2
    assert (
        invoke("run", written, "--store", tmp_path / "db", "--max-error-rate", "1").exit_code == 0
    )


def test_an_evaluator_failing_on_every_example_fails_the_run(tmp_path, invoke):
    result = invoke("run", BAD / "specs" / "evaluators_misbehave.yaml", "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    lines = result.output.splitlines()
    at = lines.index("  evaluator failed: good: raises on 2 of 2 result(s), first:")
    assert lines[at + 1].startswith("    evaluator 'raises' failed: ZeroDivisionError")
    assert "good: fine on" not in result.output
    assert lines[-1] == (
        "  run failed: evaluator(s) garbage, raises, returns_none, string_score failed on "
        "every result (fix them, or leave them out of the spec)"
    )


def test_exit_codes_are_distinct_and_in_the_help(invoke):
    from agenteval_cli.core.errors import ExitCode, UserError
    from agenteval_cli.langsmith.client import LangSmithFailure

    codes = [
        ExitCode.OK,
        ExitCode.GATE_FAILED,
        ExitCode.BAD_INPUT,
        ExitCode.RUN_ERRORS,
        ExitCode.SERVICE_FAILED,
        ExitCode.INTERRUPTED,
    ]
    assert codes == [0, 1, 2, 3, 4, 130]
    assert UserError.exit_code == ExitCode.BAD_INPUT
    assert LangSmithFailure.exit_code == ExitCode.SERVICE_FAILED != ExitCode.GATE_FAILED
    help_text = " ".join(invoke("run", "--help").output.split())
    assert "0 success; 1 quality gate failed" in help_text
    assert "4 LangSmith failure" in help_text and "130 interrupted" in help_text


# --- unstorable results, alias bombs, deep nesting, row sizes, non-regular files, a dataset
# --- changed during a run

# dataset file -> (line the error names, or None; a fragment of the message)
LIMIT_DATASET_ERRORS: dict[str, tuple[int | str | None, str]] = {
    "alias_bomb.yaml": (5, "aliases expand to more than 100,000 nodes"),
    "deep_nesting.jsonl": (2, "row is nested deeper than 100 levels (flatten the data)"),
    "deep_nesting.json": (None, "data nested deeper than 100 levels (flatten the data)"),
    "deep_nesting.yaml": (3, "row is nested deeper than 100 levels (flatten the data)"),
    "lone_surrogate.jsonl": (2, "inputs.question holds a lone surrogate (\\ud83d)"),
    "lone_surrogate.yaml": ("2 row 2", "inputs.question holds a lone surrogate (\\udc00)"),
}


@pytest.mark.parametrize("name", sorted(LIMIT_DATASET_ERRORS))
def test_a_dataset_beyond_a_limit_is_one_line_and_exit_2_at_once(
    name, tmp_path, monkeypatch, invoke
):
    started = time.monotonic()
    monkeypatch.chdir(BAD)
    line, fragment = LIMIT_DATASET_ERRORS[name]
    checked = invoke("dataset", "validate", f"datasets/{name}")
    assert_validate_errors(checked, f"datasets/{name}", line, fragment)
    spec = tmp_path / "spec.yaml"
    target = BAD / "targets" / "good.py"
    spec.write_text(f"dataset: {BAD / 'datasets' / name}\ntargets: {{good: {target}:answer}}\n")
    ran = invoke("run", spec, "--store", tmp_path / "db")
    assert_one_line_error(ran, BAD / "datasets" / name, line, fragment)
    assert time.monotonic() - started < 5


def test_a_416_byte_alias_bomb_spec_is_refused_in_under_a_second(tmp_path, monkeypatch, invoke):
    monkeypatch.chdir(BAD)
    started = time.process_time()  # the work done, whatever else holds the CPU
    result = invoke("run", "specs/alias_bomb.yaml", "--store", tmp_path / "db")
    assert time.process_time() - started < 1
    assert_one_line_error(
        result,
        "specs/alias_bomb.yaml",
        5,
        "invalid YAML: aliases expand to more than 100,000 nodes (write the data out, or use "
        "fewer aliases)",
    )


def test_a_few_aliases_are_still_fine(tmp_path, invoke):
    dataset = tmp_path / "rows.yaml"
    dataset.write_text(
        "- inputs: &shared {question: same, context: [a, b, c]}\n"
        "  outputs: {expected_agents: [billing]}\n"
        "- {id: two, inputs: *shared}\n"
    )
    result = invoke("dataset", "validate", dataset)
    assert result.exit_code == 0, result.output
    assert " ".join(result.output.split()).startswith(f"{dataset}: 2 examples, all valid")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_a_spec_or_dataset_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    def special(name: str) -> Path:
        path = tmp_path / name
        if kind == "fifo":
            os.mkfifo(path)  # reading it would wait for a writer forever
        elif kind == "dev_zero":
            path.symlink_to("/dev/zero")  # reading it would never end
        else:
            path.mkdir()
        return path

    spec, dataset = special("spec.yaml"), special("rows.jsonl")
    good = tmp_path / "good.yaml"
    good.write_text(
        f"dataset: {dataset}\ntargets: {{good: {BAD / 'targets' / 'good.py'}:answer}}\n"
    )
    runs = [
        ("run", spec, "--store", tmp_path / "db"),
        ("dataset", "validate", dataset),
        ("run", good, "--store", tmp_path / "db"),
    ]
    for args in runs:
        done = subprocess.run(
            [sys.executable, "-m", "agenteval_cli.cli", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        text = (done.stdout + done.stderr).strip()
        assert "\n" not in text and "Traceback" not in text, text
        # a symlink to /dev/zero resolves to a path without a dataset suffix: refused too
        assert any(why in text for why in ("not a regular file", "not a file", "'zero'")), text
    assert spec.exists() and not spec.is_file()  # never replaced or written to


def test_unstorable_results_are_stored_or_recorded_and_the_run_completes(tmp_path, invoke):
    found = results_by_target(invoke, tmp_path, "target_unstorable.yaml", exit_code=3)
    for example in ("a", "b"):
        surrogate = found["surrogate"][example]
        assert surrogate["error"] is None
        assert surrogate["outputs"] == {"final_response": "half an emoji: \ufffd", "\ufffd": "key"}
        assert surrogate["comments"]["quotes"] == "quoted \ufffd"
        assert surrogate["comments"]["raises_bad_str"] == (
            "evaluator 'raises_bad_str' failed: StrRaises: <str() of the exception raised "
            "RuntimeError>"
        )
        assert found["bad_repr"][example]["outputs"] == {
            "final_response": "ok",
            "thing": "<ReprRaises object: repr() raised RuntimeError>",
        }
        assert found["bad_str"][example]["error"] == (
            "StrRaises: <str() of the exception raised RuntimeError>"
        )
        assert found["bad_message"][example]["error"] == "ValueError: cut short: \ufffd"
    # every result is stored: nothing is left for a resume to call again
    again = invoke(
        "run", BAD / "specs" / "target_unstorable.yaml", "--store", tmp_path / "db", "--resume"
    )
    assert again.exit_code == 2 and "no unfinished experiment" in again.output, again.output


def _changing_run(invoke, tmp_path: Path, monkeypatch, change: str):
    """A 6-row dataset read in 64-byte blocks, and a target that changes the file on its
    first call: ``append`` adds a row, ``modify`` rewrites the last one."""
    from agenteval_cli.data import examples as datasets

    monkeypatch.setattr(datasets, "HELD_EXAMPLES", 2)
    monkeypatch.setattr(datasets, "_BLOCK", 64)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(f'{{"id": "e{i}", "inputs": {{"question": "q{i}"}}}}\n' for i in range(6))
    )
    target = tmp_path / "changer.py"
    target.write_text(
        "from pathlib import Path\n"
        f"ROWS = Path({str(rows)!r})\n"
        "CALLS = []\n"
        "def answer(inputs):\n"
        "    CALLS.append(inputs['question'])\n"
        "    if len(CALLS) == 1:\n"
        f"        if {change!r} == 'append':\n"
        "            with ROWS.open('a') as handle:\n"
        '                handle.write(\'{"id": "late", "inputs": {"question": "late"}}\\n\')\n'
        "        else:\n"
        "            ROWS.write_text(ROWS.read_text().replace('\"q5\"', '\"zz\"'))\n"
        "    return {'final_response': inputs['question']}\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {rows}\ntargets: {{t: {target}:answer}}\nconcurrency: 1\n")
    out = tmp_path / "r.json"
    return rows, spec, invoke("run", spec, "--store", tmp_path / "db", "--json", out)


def test_rows_appended_during_a_run_are_left_out_with_a_note(tmp_path, monkeypatch, invoke):
    rows, _, result = _changing_run(invoke, tmp_path, monkeypatch, "append")
    assert result.exit_code == 0, result.output
    assert (
        f"note: {rows}: the dataset file changed during the run; the run used the 6 examples "
        "it had when it started"
    ) in result.output
    (experiment,) = json.loads((tmp_path / "r.json").read_text())["experiments"]
    assert [r["example_id"] for r in experiment["results"]] == [f"e{i}" for i in range(6)]


def test_rows_changed_during_a_run_stop_it_in_one_line_and_it_can_be_resumed(
    tmp_path, monkeypatch, invoke
):
    from agenteval_cli.store.db import Store

    rows, spec, result = _changing_run(invoke, tmp_path, monkeypatch, "modify")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert (
        f"error: {rows}: the dataset file changed during the run; the results so far are kept "
        "(restore the file and run again with --resume to finish, or run without --resume to "
        "start over)"
    ) in result.output
    with Store(tmp_path / "db") as store:
        (experiment,) = store.experiments()
        kept = [s.result.example_id for s in store.results(experiment.id)]
    assert experiment.status == "interrupted"
    assert 1 <= len(kept) < 6 and kept == [f"e{i}" for i in range(len(kept))]
    rows.write_text(rows.read_text().replace('"zz"', '"q5"'))  # restored
    resumed = invoke("run", spec, "--store", tmp_path / "db", "--resume")
    assert resumed.exit_code == 0, resumed.output
    with Store(tmp_path / "db") as store:
        (experiment,) = store.experiments()
        done = sorted(s.result.example_id for s in store.results(experiment.id))
    assert experiment.status == "finished" and done == [f"e{i}" for i in range(6)]


def test_rescoring_with_an_evaluator_failing_everywhere_exits_3(tmp_path, invoke):
    evals = BAD / "targets" / "evals.py"
    spec = tmp_path / "spec.yaml"
    head = (
        f"dataset: {BAD / 'datasets' / 'bom.jsonl'}\n"
        f"targets: {{good: {BAD / 'targets' / 'good.py'}:answer}}\n"
        f"evaluators:\n  - {{name: fine, type: custom, target: {evals}:fine}}\n"
    )
    spec.write_text(head)
    assert invoke("run", spec, "--store", tmp_path / "db").exit_code == 0
    spec.write_text(head + f"  - {{name: raises, type: custom, target: {evals}:raises}}\n")
    rescored = invoke("run", spec, "--rescore", "good", "--store", tmp_path / "db")
    assert rescored.exit_code == 3, rescored.output
    lines = rescored.output.splitlines()
    assert "  evaluator failed: good: raises on 2 of 2 result(s), first:" in lines
    assert lines[-1] == (
        "  run failed: evaluator(s) raises failed on every result (fix them, or leave them "
        "out of the spec)"
    )


def test_the_error_summary_ranks_kinds_by_count_and_shows_three(tmp_path, invoke):
    data = tmp_path / "data.jsonl"
    questions = ["v1", "k", "ok", "t", "v2", "k", "o", "r", "k"]
    data.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "inputs": {"question": q}}) + "\n"
            for i, q in enumerate(questions)
        )
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {data}\ntargets: {{mixed: {BAD / 'targets' / 'values.py'}:raises_by_question}}\n"
        "concurrency: 1\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 3, result.output
    lines = result.output.splitlines()
    at = lines.index("  errors: mixed: 8 of 9 call(s) failed (88.9%, above max_error_rate 0)")
    assert lines[at + 1 : at + 5] == [
        "    3 × KeyError: 'id'",
        "    2 × ValueError, first: ValueError: bad value v1",
        "    1 × TypeError: no",  # then by first appearance: t (e3) before o (e6) and r (e7)
        "    and 2 more of 2 other kind(s)",
    ]


@pytest.mark.parametrize(
    ("name", "size", "message"),
    [
        ("spec.yaml", 2 * 1024**2, "spec file is larger than 1 MiB"),
        ("rows.json", 2 * 1024**3, "a .json dataset is read whole, and this one is larger than"),
        ("rows.yaml", 300 * 1024**2, "a .yaml dataset is read whole, and this one is larger than"),
    ],
)
def test_a_file_too_large_to_read_whole_is_refused_without_reading_it(
    tmp_path, name, size, message, invoke
):
    path = tmp_path / name
    with path.open("wb") as handle:  # sparse: it claims the size without taking the disk
        handle.truncate(size)
    started = time.monotonic()
    if name == "spec.yaml":
        result = invoke("run", path, "--store", tmp_path / "db")
    else:
        result = invoke("dataset", "validate", path)
    assert time.monotonic() - started < 5
    assert_one_line_error(result, path, None, message)


def test_a_merge_key_bomb_is_refused_like_an_alias_bomb(tmp_path, invoke):
    levels = ["a: &a {x1: 1, x2: 2, x3: 3, x4: 4, x5: 5, x6: 6, x7: 7, x8: 8}"]
    for name, below in zip("bcdefg", "abcdef", strict=True):
        levels.append(f"{name}: &{name} {{<<: [{', '.join([f'*{below}'] * 8)}], {name}{name}: 1}}")
    spec = tmp_path / "merge.yaml"
    spec.write_text("\n".join(levels) + "\ndataset: rows.jsonl\ntargets: {t: m:t}\n")
    started = time.monotonic()
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert time.monotonic() - started < 1
    # the merges of b to e repeat 136 + 1,128 + 9,064 + 72,552 nodes: f's passes 100,000
    assert_one_line_error(result, spec, 6, "aliases expand to more than 100,000 nodes")
    a_few = tmp_path / "few.yaml"
    a_few.write_text("base: &base {timeout_s: 5}\nother: {<<: *base, x: 1}\n")
    from agenteval_cli.core.yamlsource import load_yaml

    assert load_yaml(a_few.read_text(), file=a_few).data["other"] == {"timeout_s": 5, "x": 1}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            'experiment_prefix: "x\\ud800"\n',
            1,
            "experiment_prefix holds a lone surrogate (\\ud800)",
        ),
        ('targets: {"g\\udc00": m:f}\n', 1, "targets.g\\udc00 holds a lone surrogate (\\udc00)"),
        ("experiment_prefix: ${AGENTEVAL_TEST_BYTES}\n", 1, "holds a lone surrogate (\\udcff)"),
    ],
)
def test_a_spec_holding_a_lone_surrogate_is_refused_before_anything_is_stored(
    tmp_path, monkeypatch, text, line, message, invoke
):
    monkeypatch.setenv("AGENTEVAL_TEST_BYTES", "a\udcffb")  # the bytes a\xffb, undecodable
    spec = tmp_path / "spec.yaml"
    good = BAD / "targets" / "good.py"
    spec.write_text(
        text
        + f"dataset: {BAD / 'datasets' / 'bom.jsonl'}\n"
        + ("" if "targets" in text else f"targets: {{good: {good}:answer}}\n")
    )
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert_one_line_error(result, spec, line, message)


def test_a_dataset_removed_during_a_run_stops_it_with_the_calls_in_flight_kept(
    tmp_path, monkeypatch, invoke
):
    from agenteval_cli.data import examples as datasets
    from agenteval_cli.store.db import Store

    monkeypatch.setattr(datasets, "HELD_EXAMPLES", 2)  # read again for the second repetition
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(f'{{"id": "e{i}", "inputs": {{"question": "q{i}"}}}}\n' for i in range(6))
    )
    target = tmp_path / "remover.py"
    target.write_text(
        "import time\n"
        "from pathlib import Path\n"
        "def answer(inputs):\n"
        f"    Path({str(rows)!r}).unlink(missing_ok=True)\n"
        "    time.sleep(0.05)\n"
        "    return {'final_response': 'ok'}\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"dataset: {rows}\ntargets: {{t: {target}:answer}}\nconcurrency: 2\nrepetitions: 2\n"
    )
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 2, result.output
    assert f"error: {rows}: dataset file not found (check the path)" in result.output
    assert "Traceback" not in result.output
    with Store(tmp_path / "db") as store:
        (experiment,) = store.experiments()
        kept = [(s.result.example_id, s.result.repetition) for s in store.results(experiment.id)]
    assert experiment.status == "interrupted"
    assert sorted(kept) == [(f"e{i}", 0) for i in range(6)]  # the last one was in flight
