"""The ``--json`` export is written as the rows are read, and is the same document as the
whole export dumped at once."""

from __future__ import annotations

import json

import pytest
from report_fixtures import demo_run

from agenteval_cli.core.records import Example, Result, Score, Trace
from agenteval_cli.report.json_report import experiment_json, strict_json, write_json
from agenteval_cli.store.db import Store

__all__ = ["demo_run"]


def whole(store: Store, ids: list[str]) -> str:
    """The export as it was written before it streamed: one dump of the whole document."""
    return strict_json({"experiments": [experiment_json(store, i) for i in ids]}, indent=2) + "\n"


def test_the_streamed_export_of_the_demo_is_the_whole_dump(demo_run, tmp_path):
    with Store(demo_run / "db") as store:
        ids = [e.id for e in store.experiments()]
        assert len(ids) == 2
        write_json(tmp_path / "r.json", store, ids)
        expected = whole(store, ids)
    text = (tmp_path / "r.json").read_text()
    assert text == expected
    data = json.loads(text)
    assert [len(e["results"]) for e in data["experiments"]] == [32, 32]
    assert data["experiments"][0]["agents"]  # the demo's agents made model calls
    assert data["experiments"][0]["routing_confusion"] is not None


@pytest.fixture
def odd_store(tmp_path, monkeypatch):
    """An experiment with no result, and one whose results hold NaN, an error, a secret and
    text with newlines and quotes."""
    monkeypatch.setenv("AGENTEVAL_TEST_TOKEN", "s3cr3t-value-123")
    store = Store(tmp_path / "db")
    common = {"prefix": "p", "target_path": "t.py:f", "spec": {"pricing": {}}}
    empty = store.create_experiment(target="empty", **common)
    full = store.create_experiment(target="full", **common)
    examples = [
        Example(id="a", inputs={"question": 'line 1\n  "line 2"'}, outputs={}),
        Example(id="b", inputs={"question": "s3cr3t-value-123"}, outputs={}),
    ]
    store.add_result(
        full.id,
        examples[0],
        Result(
            "a",
            0,
            {"final_response": "x\ny", "ratio": float("nan")},
            Trace(agent_path=["solo"]),
            scores=[Score("routing_accuracy", 1.0, "ok\n}")],
        ),
    )
    store.add_result(
        full.id, examples[1], Result("b", 0, None, Trace(), error="ValueError: s3cr3t-value-123")
    )
    yield store, [empty.id, full.id]
    store.close()


def test_the_streamed_export_of_odd_experiments_is_the_whole_dump(odd_store, tmp_path):
    store, ids = odd_store
    for chosen in ([], [ids[0]], [ids[1]], [ids[1], ids[0]], ids):
        write_json(tmp_path / "r.json", store, chosen)
        text = (tmp_path / "r.json").read_text()
        assert text == whole(store, chosen), chosen
    assert "s3cr3t-value-123" not in text
    empty, full = json.loads(text, parse_constant=pytest.fail)["experiments"]
    assert empty["results"] == [] and empty["target"] == "empty"
    assert [r["example_id"] for r in full["results"]] == ["a", "b"]
    assert full["results"][0]["outputs"] == {"final_response": "x\ny", "ratio": None}
    assert full["results"][1]["error"] == "ValueError: ***"
    assert json.loads(strict_json({"experiments": []}, indent=2)) == {"experiments": []}


def test_a_failed_export_leaves_the_previous_file(odd_store, tmp_path, monkeypatch):
    store, ids = odd_store
    path = tmp_path / "r.json"
    path.write_text("previous\n")

    def broken(_stored, *_pricing):
        raise RuntimeError("disk full")

    monkeypatch.setattr("agenteval_cli.report.json_report.result_json", broken)
    with pytest.raises(RuntimeError):
        write_json(path, store, ids)
    assert path.read_text() == "previous\n"
    assert not path.with_name("r.json.tmp").exists()
