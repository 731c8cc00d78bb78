"""What would only fail at the end fails before any target is called, with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "tests" / "data" / "bad" / "targets" / "good.py"


def _dataset(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"inputs": r}) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("rows", "target", "start", "fragments"),
    [
        pytest.param(
            [{"query": "refund please"}, {"query": "reset my SSO"}],
            "  supervisor: agenteval_cli.demo.supervisor:graph\n",
            "error: {spec}:3: target 'supervisor' reads inputs.question, ",
            [
                "which every example of the dataset lack (row 1 has: query)",
                "set input_key to a field the rows have",
            ],
            id="a-graph-input-key-no-row-has",
        ),
        pytest.param(
            [{"query": "a"}, {"other": "b"}, {"query": "c"}, {"x": 1}],
            '  plain:\n    target: {good}:answer\n    input: {{question: "{{query}}"}}\n',
            "error: ",
            [
                "target 'plain' reads inputs.query, which 2 example(s) of the dataset lack",
                "(row 2 has: other)",
            ],
            id="a-template-field-some-rows-lack-named-with-the-first-row",
        ),
        pytest.param(
            [{"turns": ["refund please", "and my invoice?"]}],
            '  plain:\n    target: {good}:answer\n    input: {{messages: "{{turns}}"}}\n',
            "error: {spec}:5: target 'plain' reads inputs.turns, which would send every turn "
            "of a conversation in one call (only the first would be answered)",
            [
                "(conversation rows are driven turn by turn: map a turn's field instead, "
                'such as "{question}")'
            ],
            id="a-template-sending-a-conversations-turns-at-once",
        ),
        pytest.param(
            [{"turns": [{"query": "refund please"}, "and my invoice?"]}],
            "  supervisor: agenteval_cli.demo.supervisor:graph\n",
            "error: {spec}:3: target 'supervisor' reads inputs.question, ",
            ["which every example of the dataset lack (row 1 turn 1 has: query)"],
            id="a-graph-input-key-a-conversations-turn-lacks",
        ),
        pytest.param(
            [
                {"turns": [{"query": "a"}, {"query": "b"}]},
                {"turns": [{"query": "c"}, "a message"]},
                {"turns": [{"query": "d"}, {"resume": "yes"}]},
            ],
            '  plain:\n    target: {good}:answer\n    input: {{question: "{{query}}"}}\n',
            "error: ",
            [
                "target 'plain' reads inputs.query, which 1 example(s) of the dataset lack",
                "(row 2 turn 2 has: question)",
            ],
            id="a-template-field-a-turn-lacks-named-with-its-row-and-turn",
        ),
    ],
)
def test_a_field_the_rows_lack_fails_before_any_call(
    tmp_path, invoke, rows, target, start, fragments
):
    data = _dataset(tmp_path, rows)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n" + target.format(good=GOOD))
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert text.startswith(start.format(spec=spec)), text
    for fragment in fragments:
        assert fragment in text, text
    assert not (tmp_path / "s.db").exists() or _results(tmp_path / "s.db") == 0


def test_a_conversation_is_checked_turn_by_turn_not_as_its_row(tmp_path):
    """The row's own inputs hold only ``turns``; each turn has the field the template reads
    (a message turn as the target's input_key, a resume turn sending none)."""
    from agenteval_cli.data.examples import load_examples
    from agenteval_cli.execution.experiment import check_target_inputs
    from agenteval_cli.spec.model import load_spec
    from agenteval_cli.targets import adapt

    turns = ["refund please", {"question": "and my invoice?"}, {"resume": "yes"}]
    data = _dataset(tmp_path, [{"turns": turns}, {"question": "a single turn"}])
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n  plain: {GOOD}:answer\n")
    target = adapt(
        lambda inputs: {"final_response": inputs["question"]},
        name="plain",
        import_path=f"{GOOD}:answer",
        input={"question": "{question}"},
    )
    assert target.input_fields == ("question",)
    check_target_inputs(load_spec(spec), [target], load_examples(data))  # nothing lacks it


def test_a_function_target_reads_what_it_likes(tmp_path, invoke):
    data = _dataset(tmp_path, [{"query": "a"}])
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"dataset: {data}\ntargets:\n  plain: {GOOD}:answer\n")
    result = invoke("run", spec, "--store", tmp_path / "s.db")
    assert result.exit_code == 0, result.output


def _results(store: Path) -> int:
    import sqlite3

    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]


MINIMAL = ROOT / "tests" / "data" / "specs" / "minimal.yaml"


@pytest.mark.parametrize(
    ("baseline", "message", "looked_up"),
    [
        pytest.param(
            "{tmp}/nosuch.json",
            "--baseline file not found: {tmp}/nosuch.json",
            False,
            id="a-missing-file",
        ),
        pytest.param(
            "nobody",
            "--baseline 'nobody': no target or experiment of that name",
            True,
            id="an-unknown-experiment",
        ),
    ],
)
def test_a_baseline_that_cannot_be_had_fails_before_any_call(
    tmp_path, invoke, baseline, message, looked_up
):
    store = tmp_path / "s.db"
    result = invoke("run", MINIMAL, "--store", store, "--baseline", baseline.format(tmp=tmp_path))
    assert result.exit_code == 2, result.output
    assert message.format(tmp=tmp_path) in result.output
    assert "supervisor 3/3" not in result.output and "routing accuracy" not in result.output
    if looked_up:  # the name was looked for in the store, which holds no result
        assert _results(store) == 0
    else:
        assert not store.exists() or _results(store) == 0


def test_a_baseline_named_by_target_is_pinned_to_the_experiment_before_this_run(tmp_path):
    from agenteval_cli.cli.outputs import RunOutputs
    from agenteval_cli.cli.run import _preflight
    from agenteval_cli.store.db import Store

    with Store(tmp_path / "s.db") as store:
        before = store.create_experiment(
            prefix="p", target="supervisor", target_path="m:f", spec={}
        )
        pinned = _preflight(RunOutputs(baseline="supervisor"), None, store)
        store.create_experiment(prefix="p", target="supervisor", target_path="m:f", spec={})
        assert store.latest_experiment("supervisor").name != before.name  # the name moved on
    assert pinned.baseline == before.name  # the baseline did not


def test_report_paths_that_cannot_be_written_fail_before_any_call(tmp_path, invoke):
    store = tmp_path / "s.db"
    folder = tmp_path / "a-folder"
    folder.mkdir()
    as_file = tmp_path / "plain-file"
    as_file.write_text("")
    for option, path, message in (
        ("--json", folder, f"--json {folder} is a folder, not a file"),
        ("--html", as_file / "r.html", f"--html {as_file / 'r.html'}: {as_file} is a file"),
        ("--junit", folder, f"--junit {folder} is a folder"),
        ("--markdown", as_file / "x" / "r.md", f": {as_file} is a file, not a folder"),
    ):
        result = invoke("run", MINIMAL, "--store", store, option, path)
        assert result.exit_code == 2, result.output
        assert message in result.output, result.output
    assert _results(store) == 0


def test_save_baseline_to_the_specs_missing_baseline_says_only_that_it_saved(tmp_path, invoke):
    spec = tmp_path / "spec.yaml"
    text = MINIMAL.read_text().replace("../datasets/", f"{MINIMAL.parent.parent}/datasets/")
    spec.write_text(text + "baseline: base.json\n")
    result = invoke(
        "run", spec, "--store", tmp_path / "s.db", "--save-baseline", tmp_path / "base.json"
    )
    assert result.exit_code == 0, result.output
    assert "no baseline yet" not in result.output
    assert f"baselinesaved:{tmp_path / 'base.json'}" in result.squeezed


def test_a_spec_without_evaluators_says_what_it_measures(tmp_path, invoke):
    result = invoke("run", MINIMAL, "--store", tmp_path / "s.db")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"note: {MINIMAL}: no evaluators: only error rate and latency are measured" in text
