"""Pulled examples written as files: strict JSON, and the data exactly as pulled."""

from __future__ import annotations

import csv
import io
import json

import pytest

from agenteval_cli.core.records import Example
from agenteval_cli.data.examples import load_examples
from agenteval_cli.langsmith import files

URL = "postgres://app:hunter22@db/prod"


def _refuse(constant: str) -> None:
    raise ValueError(f"not strict JSON: {constant}")


def pulled() -> list[Example]:
    inf = float("inf")
    return [
        Example(
            "a",
            {"question": f"NaN or Infinity? see {URL}", "weights": [float("nan"), inf, -inf, 0.5]},
            {"expected": {"score": -inf, "note": "NaN"}},
            {"source": "langsmith"},
        ),
        Example("b", {"question": "plain", "weights": [1, 2]}, {}, {}),
    ]


EXPECTED_A = {
    "id": "a",
    "inputs": {"question": f"NaN or Infinity? see {URL}", "weights": [None, None, None, 0.5]},
    "outputs": {"expected": {"score": None, "note": "NaN"}},
    "metadata": {"source": "langsmith"},
}
EXPECTED_B = {"id": "b", "inputs": {"question": "plain", "weights": [1, 2]}}


def test_a_pulled_jsonl_file_is_strict_json_with_nan_and_infinity_as_null(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTEVAL_TEST_DB_PASSWORD", "hunter22")  # a dataset is not redacted
    path = tmp_path / "pulled.jsonl"
    files.write(pulled(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line, parse_constant=_refuse) for line in lines] == [EXPECTED_A, EXPECTED_B]
    back = {e.id: e for e in load_examples(path)}
    assert back["a"].inputs["weights"] == [None, None, None, 0.5]
    assert back["a"].inputs["question"] == f"NaN or Infinity? see {URL}"


def test_a_pulled_json_file_is_strict_json_and_indented(tmp_path):
    path = tmp_path / "pulled.json"
    files.write(pulled(), path)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text, parse_constant=_refuse) == [EXPECTED_A, EXPECTED_B]
    assert text.startswith('[\n  {\n    "id": "a",')


def test_a_csv_cell_of_json_is_strict_json():
    examples = [Example("a", {"question": "q", "weights": [float("nan"), 1.5]}, {}, {})]
    rows = list(csv.reader(io.StringIO(files.render(examples, ".csv"))))
    assert rows[0] == ["id", "inputs.question", "inputs.weights"]
    assert rows[1][:2] == ["a", "q"]
    assert json.loads(rows[1][2], parse_constant=_refuse) == [None, 1.5]


@pytest.mark.parametrize("value", [{"text": "NaN"}, ["Infinity", 1e308], {"x": 1.0}])
def test_json_without_nan_or_infinity_is_written_as_json_dumps_writes_it(value):
    assert files.strict(value) == json.dumps(value, ensure_ascii=False)
    assert files.strict(value, indent=2) == json.dumps(value, ensure_ascii=False, indent=2)
