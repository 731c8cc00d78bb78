"""Reference fields the evaluators read, checked against the rows: a misspelt field that
would score 100% routing accuracy is named, with the field it should be."""

from __future__ import annotations

from pathlib import Path

from agenteval_cli.core.records import Example
from agenteval_cli.evaluators.reference_fields import Reads, reference_warnings, spec_reads
from agenteval_cli.evaluators.registry import REGISTRY, reads_references
from agenteval_cli.spec.model import EvaluatorSpec

ROOT = Path(__file__).resolve().parent.parent
DEMO_ROWS = ROOT / "datasets" / "routing.jsonl"
WARNING = (
    "no row has the reference field 'expected_agents' that routing_accuracy reads, and rows "
    "have 'expected_agent', which no evaluator reads: did you mean 'expected_agents'?"
)


def _misspelt(tmp_path: Path, rows: int = 3) -> tuple[Path, Path]:
    """The demo's spec on its first rows, with ``expected_agents`` written without its s."""
    lines = DEMO_ROWS.read_text().splitlines()[:rows]
    data = tmp_path / "typo.jsonl"
    data.write_text(
        "\n".join(line.replace('"expected_agents"', '"expected_agent"') for line in lines)
    )
    spec = tmp_path / "typo.yaml"
    text = (ROOT / "configs" / "routing.yaml").read_text()
    spec.write_text(text.replace("../datasets/routing.jsonl", str(data)))
    return spec, data


def test_a_run_warns_once_naming_the_misspelt_field_and_the_one_it_should_be(tmp_path, invoke):
    spec, data = _misspelt(tmp_path)
    result = invoke("run", spec, "--store", tmp_path / "db")
    assert result.exit_code == 0, result.output
    assert result.text.count(WARNING) == 1
    assert f"warning: {data}: {WARNING}" in result.text


def test_dataset_validate_with_the_spec_warns_and_without_it_does_not(tmp_path, invoke):
    spec, data = _misspelt(tmp_path)
    checked = invoke("dataset", "validate", "--spec", spec)
    assert checked.exit_code == 0, checked.output
    assert f"{data}: 3 examples, all valid" in checked.text
    assert checked.text.count(WARNING) == 1
    plain = invoke("dataset", "validate", data)
    assert plain.exit_code == 0 and "warning" not in plain.text
    demo = invoke("dataset", "validate", "--spec", ROOT / "configs" / "routing.yaml")
    assert demo.exit_code == 0 and "warning" not in demo.text  # every field it needs is there
    neither = invoke("dataset", "validate")
    assert neither.exit_code == 2 and "give PATH or --spec SPEC" in neither.text


def _rows(*outputs: dict) -> list[Example]:
    return [Example(id=f"e{i}", inputs={"q": "?"}, outputs=o) for i, o in enumerate(outputs)]


def test_the_registry_declares_what_each_evaluator_needs():
    assert REGISTRY["routing_accuracy"].references == ("expected_agents",)
    assert REGISTRY["resolution_coverage"].references == ("must_mention",)
    assert REGISTRY["trajectory_match"].references == ("trajectory", "expected_tools")
    assert REGISTRY["handoff_chain_length"].references == ()  # reads the trace alone


def test_no_warning_when_one_row_has_the_field_or_every_field_is_read():
    reads = spec_reads([EvaluatorSpec(name="routing_accuracy")])
    some = _rows({"notes": "none expected"}, {"expected_agents": ["b"]})
    assert reference_warnings(reads, some, "d.jsonl") == []  # one row has it: a real dataset
    known = _rows({"must_mention": ["x"]})  # an evaluator not in the spec reads it
    assert reference_warnings(reads, known, "d.jsonl") == []
    assert reference_warnings(reads, _rows({}), "d.jsonl") == []  # nothing misspelt to name


def test_a_field_far_from_any_needed_one_is_named_without_a_guess():
    reads = spec_reads(
        [EvaluatorSpec(name="routing_accuracy"), EvaluatorSpec(name="routing_exact")]
    )
    (line,) = reference_warnings(reads, _rows({"route": ["billing"]}), "d.jsonl")
    assert line == (
        "d.jsonl: no row has the reference field 'expected_agents' that routing_accuracy, "
        "routing_exact reads, so it scores as if nothing were expected; rows have 'route', which "
        "no evaluator reads"
    )


def test_a_users_evaluator_declares_the_fields_it_reads():
    @reads_references("expected_route", optional=["route_notes"])
    def route_ok(outputs, reference_outputs):
        return outputs.get("route") == reference_outputs.get("expected_route")

    item = EvaluatorSpec(name="route_ok", options={"type": "custom", "target": "x.py:route_ok"})
    reads = spec_reads([item], {"route_ok": route_ok})
    assert reads == [Reads("route_ok", ("expected_route",), ("route_notes",))]
    rows = _rows({"expected_rout": "billing", "route_notes": "n"})
    (line,) = reference_warnings(reads, rows, "d.jsonl")
    assert "rows have 'expected_rout'" in line and "did you mean 'expected_route'?" in line
    assert reference_warnings(reads, _rows({"expected_route": "b"}), "d.jsonl") == []


def test_a_field_misspelt_in_some_rows_only_is_named_with_those_rows():
    reads = spec_reads([EvaluatorSpec(name="routing_accuracy")])
    rows = _rows(
        {"expected_agents": ["a"]},
        {"expected_agent": ["b"]},  # a typo: scored as if nothing were expected
        {"notes": "a negative example: nothing expected"},
        {"Expected_Agents": ["c"]},
        {"expected_agent": ["d"]},
    )
    assert reference_warnings(reads, rows, "d.jsonl") == [
        "d.jsonl: 2 row(s) (first: 'e1') have the reference field 'expected_agent', which no "
        "evaluator reads, and not 'expected_agents' that routing_accuracy reads: did you mean "
        "'expected_agents'? (without it routing_accuracy scores those rows as if nothing were "
        "expected)",
        "d.jsonl: 1 row(s) (first: 'e3') have the reference field 'Expected_Agents', which no "
        "evaluator reads, and not 'expected_agents' that routing_accuracy reads: did you mean "
        "'expected_agents'? (without it routing_accuracy scores those rows as if nothing were "
        "expected)",
    ]


def test_a_conversations_per_turn_references_count_and_their_typos_are_named():
    reads = spec_reads(
        [EvaluatorSpec(name="routing_accuracy"), EvaluatorSpec(name="resolution_coverage")]
    )

    def conversation(*turns: dict) -> Example:
        return Example(
            "c",
            {"turns": ["first", "second"][: len(turns)]},
            {"turns": list(turns), "notes": "a field no evaluator reads"},
        )

    # every needed field is given inside the turns: nothing to say
    given = [conversation({"expected_agents": ["billing"]}, {"must_mention": ["refund"]})]
    assert reference_warnings(reads, given, "c.jsonl") == []
    typo = [conversation({"expected_agents": ["billing"]}, {"must_mentoin": ["x"]})]
    (line,) = reference_warnings(reads, typo, "c.jsonl")
    assert line.startswith("c.jsonl: no row has the reference field 'must_mention'")
    assert "did you mean 'must_mention'?" in line


def test_a_conversations_reference_fields_are_its_own_and_its_turns():
    reads = spec_reads([EvaluatorSpec(name="routing_accuracy")])

    def talk(*turns: dict, **whole) -> Example:
        inputs = {"turns": [f"message {n}" for n in range(len(turns))]}
        return Example(id="c", inputs=inputs, outputs={"turns": list(turns), **whole})

    given = [talk({"expected_agents": ["billing"]}, {})]
    assert reference_warnings(reads, given, "d.jsonl") == []  # 'turns' itself is no field
    assert reference_warnings(reads, [talk({}, {}, expected_agents=["a"])], "d.jsonl") == []
    (line,) = reference_warnings(reads, [talk({}, {"expected_agent": ["b"]})], "d.jsonl")
    assert line.startswith(
        "d.jsonl: no row has the reference field 'expected_agents' that routing_accuracy "
        "reads, and rows have 'expected_agent', which no evaluator reads"
    )
