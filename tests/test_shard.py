"""``run --shard i/N`` and ``agenteval merge``: the shards of a run partition its examples by
id, the same in any process, and merged they store what the unsharded run stores."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from stored import by_target, no_experiment, per_example, same_metrics, write_demo_spec

import agenteval_cli as agenteval
from agenteval_cli.core.errors import UserError
from agenteval_cli.data.examples import load_examples, parse_shard, shard_of
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.report.json_report import experiment_metrics, write_json
from agenteval_cli.results.figures import stored
from agenteval_cli.store.db import Store
from agenteval_cli.store.summaries import summary_scores

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "routing.jsonl"


def write_spec(path: Path, *, dataset: Path = DATASET, repetitions: int = 2) -> Path:
    return write_demo_spec(path, prefix="sharded", dataset=dataset, repetitions=repetitions)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The spec run unsharded, then as 3 shards into 3 stores, merged."""
    base = tmp_path_factory.mktemp("shards")
    spec = write_spec(base / "spec.yaml")
    agenteval.run(spec, store=base / "full.db")
    shards = [base / f"shard{i}.db" for i in (1, 2, 3)]
    for i, path in enumerate(shards, 1):
        report = agenteval.run(spec, store=path, shard=(i, 3))
        assert report.status == "finished"
    report = agenteval.merge(shards, store=base / "merged.db")
    return base, spec, shards, report


def test_shard_assignment_is_the_sha256_of_the_id_and_a_partition():
    ids = [e.id for e in load_examples(DATASET)]
    for count in (1, 2, 3, 4, 7):
        for example_id in ids:
            digest = hashlib.sha256(example_id.encode()).digest()
            assert shard_of(example_id, count) == int.from_bytes(digest[:8], "big") % count + 1
        owners = {i: shard_of(i, count) for i in ids}
        assert set(owners.values()) <= set(range(1, count + 1))
    # pinned (from `printf example-1 | sha256sum`): a change would re-split every suite
    assert shard_of("example-1", 4) == 1
    assert shard_of("", 3) == 2


def test_the_split_is_the_same_in_another_process_with_another_hash_seed():
    ids = [e.id for e in load_examples(DATASET)]
    here = [shard_of(i, 5) for i in ids]
    code = (
        "import json, sys; from agenteval_cli.data.examples import shard_of;"
        "print(json.dumps([shard_of(i, 5) for i in json.load(sys.stdin)]))"
    )
    for seed in ("1", "987"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(ids),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(out.stdout) == here


@pytest.mark.parametrize("text", ["0/3", "4/3", "x", "1/0", "-1/3", "1/3/4", "1/", "²/3"])
def test_a_bad_shard_is_a_one_line_usage_error(tmp_path, invoke, demo_spec, text):
    out = invoke("run", demo_spec, "--shard", text, "--store", tmp_path / "s.db")
    assert out.exit_code == 2, out.output
    line = out.output.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line
    assert no_experiment(tmp_path / "s.db")
    with pytest.raises(ValueError):
        parse_shard(text)


def test_the_api_refuses_a_bad_shard(tmp_path, demo_spec):
    for bad in ((0, 3), (4, 3), (1, 0), ("1", "3")):
        with pytest.raises(ValueError):
            agenteval.run(demo_spec, store=tmp_path / "s.db", shard=bad)  # type: ignore[arg-type]


def test_the_shards_partition_the_examples_and_record_their_shard(runs):
    _base, _, shards, _ = runs
    all_ids = {e.id for e in load_examples(DATASET)}
    seen: dict[str, int] = {}
    for i, path in enumerate(shards, 1):
        with Store(path, readonly=True) as store:
            for experiment in store.experiments():
                assert (experiment.shard_index, experiment.shard_count) == (i, 3)
                assert experiment.dataset_examples == len(all_ids)
                ids = {r.result.example_id for r in store.results(experiment.id)}
                assert all(shard_of(x, 3) == i for x in ids)
                assert experiment.example_count == len(ids)
                for x in ids:
                    assert seen.setdefault(x, i) == i
    assert set(seen) == all_ids


def test_the_merge_stores_what_the_unsharded_run_stores(runs):
    base, _, _, report = runs
    assert report.status == "finished" and report.examples == 32
    with Store(base / "full.db", readonly=True) as full, Store(base / "merged.db") as merged:
        expected, got = by_target(full), by_target(merged)
        assert list(got) == list(expected) == ["supervisor", "swarm"]
        for target, full_id in expected.items():
            merged_id = got[target]
            record = merged.experiment(merged_id)
            assert record.status == "finished" and record.shard_count is None
            assert record.example_count == full.experiment(full_id).example_count == 32
            assert record.spec_hash == full.experiment(full_id).spec_hash
            assert record.dataset_hash == full.experiment(full_id).dataset_hash
            assert per_example(merged, merged_id) == per_example(full, full_id)
            assert merged.result_count(merged_id) == 64
            same_metrics(experiment_metrics(merged, merged_id), experiment_metrics(full, full_id))
            keys = Catalog(keys=("routing_accuracy", "cost_usd"))
            assert record.catalog == full.experiment(full_id).catalog  # how the metrics read
            same_metrics(
                stored(merged, merged_id, repetitions=2, catalog=keys).metrics(),
                stored(full, full_id, repetitions=2, catalog=keys).metrics(),
            )
            # the dataset-level score, over all the shards' results, not one shard's
            merged_scores = summary_scores(merged, merged_id)
            assert [s.key for s in merged_scores] == ["routing_confusion"]
            assert merged_scores == summary_scores(full, full_id)
            assert (
                report.experiment(target).metrics.keys() == experiment_metrics(full, full_id).keys()
            )


def test_merge_json_is_the_run_json_document(runs, invoke):
    base, _, shards, _ = runs
    out = invoke("merge", *shards, "--store", base / "cli.db", "--json", base / "merged.json")
    assert out.exit_code == 0, out.output
    with Store(base / "full.db", readonly=True) as store:  # what run --json writes
        unsharded = by_target(store)
        write_json(base / "full.json", store, [unsharded["supervisor"], unsharded["swarm"]])
    merged = json.loads((base / "merged.json").read_text())["experiments"]
    expected = json.loads((base / "full.json").read_text())["experiments"]
    assert [e["target"] for e in merged] == ["supervisor", "swarm"]
    for got, want in zip(merged, expected, strict=True):
        assert got.keys() == want.keys()
        same_metrics(got["metrics"], want["metrics"])
        for key in ("metric_counts", "dataset_results", "routing_confusion", "pricing"):
            assert got[key] == want[key], key
        assert got["dataset_hash"] == want["dataset_hash"]

        def results(doc):
            return sorted(
                ((r["example_id"], r["repetition"], json.dumps(r["scores"])) for r in doc),
            )

        assert results(got["results"]) == results(want["results"])


def test_merging_again_replaces_the_earlier_merge(runs):
    base, _, shards, first = runs
    out = base / "again.db"
    agenteval.merge(shards, store=out)
    again = agenteval.merge(list(reversed(shards)), store=out)  # in any order
    with Store(out, readonly=True) as store:
        assert len(store.experiments()) == 2
        assert {e.id for e in store.experiments()} == set(again.ids)
        for experiment in store.experiments():
            assert store.result_count(experiment.id) == 64
            assert len(summary_scores(store, experiment.id)) == 1
    assert [e.results for e in again.experiments] == [e.results for e in first.experiments]


def one_line_refusal(invoke, *args) -> str:
    out = invoke("merge", *args)
    assert out.exit_code == 2, out.output
    line = out.output.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line
    return line


def test_merge_refuses_a_missing_or_a_repeated_shard(runs, invoke, tmp_path):
    base, _, (one, two, three), _ = runs
    out = tmp_path / "out.db"
    line = one_line_refusal(invoke, one, three, "--store", out)
    assert "shard(s) 2/3 missing" in line and str(one) in line and str(three) in line
    line = one_line_refusal(invoke, one, "--store", out)
    assert "shard(s) 2/3, 3/3 missing" in line
    line = one_line_refusal(invoke, one, two, two, three, "--store", out)
    assert "shard 2/3 is in more than one store" in line and str(two) in line
    line = one_line_refusal(invoke, one, two, three, "--store", one)
    assert "is one of the shard stores" in line
    line = one_line_refusal(invoke, one, two, tmp_path / "nope.db", "--store", out)
    assert "no experiment store at" in line and "nope.db" in line
    line = one_line_refusal(invoke, one, two, base / "full.db", "--store", out)
    assert "holds no sharded run" in line and "full.db" in line
    assert not out.exists() or not Store(out).experiments()


def test_merge_refuses_shards_of_another_spec_or_dataset(runs, invoke, tmp_path):
    _base, _, (one, _two, three), _ = runs
    other_spec = write_spec(tmp_path / "other.yaml", repetitions=1)
    agenteval.run(other_spec, store=tmp_path / "spec2.db", shard=(2, 3))
    line = one_line_refusal(invoke, one, tmp_path / "spec2.db", three, "--store", tmp_path / "o")
    assert "different spec (spec hash)" in line and "spec2.db" in line and str(one) in line

    data = tmp_path / "data"
    data.mkdir()
    rows = DATASET.read_text().splitlines(keepends=True)
    (data / "routing.jsonl").write_text("".join(rows))
    spec = write_spec(data / "spec.yaml", dataset=Path("routing.jsonl"), repetitions=1)
    stores = [data / f"s{i}.db" for i in (1, 2, 3)]
    agenteval.run(spec, store=stores[0], shard=(1, 3))
    agenteval.run(spec, store=stores[1], shard=(2, 3))
    (data / "routing.jsonl").write_text("".join(rows[:-1]))  # the dataset changed: one row fewer
    agenteval.run(spec, store=stores[2], shard=(3, 3))
    line = one_line_refusal(invoke, *stores, "--store", tmp_path / "o")
    assert line.startswith("error: the shards are of different dataset version (dataset hash): ")
    assert f"{stores[0]}; {stores[1]} vs {stores[2]}" in line


def test_merge_refuses_an_unfinished_shard(runs, invoke, tmp_path):
    _base, _, (one, two, three), _ = runs
    copy = tmp_path / "two.db"
    with Store(two, readonly=True) as source, sqlite3.connect(copy) as target:
        source.db.backup(target)
    db = sqlite3.connect(copy)
    db.execute("UPDATE experiments SET status = 'interrupted' WHERE target = 'swarm'")
    db.commit()
    db.close()
    line = one_line_refusal(invoke, one, copy, three, "--store", tmp_path / "o.db")
    assert "shard 2/3 is unfinished" in line and "two.db" in line and "--resume" in line
    with pytest.raises(UserError, match="unfinished"):
        agenteval.merge([one, copy, three], store=tmp_path / "o2.db")


def test_a_resumed_shard_keeps_its_shard(tmp_path):
    spec = write_spec(tmp_path / "spec.yaml", repetitions=1)
    path = tmp_path / "s.db"
    first = agenteval.run(spec, store=path, shard=(1, 2))
    expected = first.saved
    db = sqlite3.connect(path)
    db.execute("DELETE FROM results WHERE id IN (SELECT id FROM results LIMIT 5)")
    db.execute("UPDATE experiments SET status = 'interrupted'")
    db.commit()
    db.close()
    resumed = agenteval.run(spec, store=path, resume=True)
    assert resumed.status == "finished" and resumed.saved == expected
    with Store(path, readonly=True) as store:
        for experiment in store.experiments():
            ids = {r.result.example_id for r in store.results(experiment.id)}
            assert ids and all(shard_of(x, 2) == 1 for x in ids)
    with pytest.raises(ValueError):
        agenteval.run(spec, store=path, resume=True, shard=(1, 2))


def test_merge_quiet_is_one_line_and_json_dash_is_the_document_alone(runs, invoke):
    base, _, shards, _ = runs
    out = invoke("merge", *shards, "--store", base / "quiet.db", "-q")
    assert out.exit_code == 0, out.output
    assert out.stdout.strip() == "sharded: merged 3 shards · 2 target(s), 128 results"
    out = invoke("merge", *shards, "--store", base / "quiet.db", "--json", "-")
    assert out.exit_code == 0, out.output
    document = json.loads(out.stdout)
    assert [e["target"] for e in document["experiments"]] == ["supervisor", "swarm"]
    assert all(len(e["results"]) == 64 for e in document["experiments"])


def test_merge_keeps_each_results_status_also_from_a_shard_stored_before_statuses(runs, tmp_path):
    """A result's status travels with it into the merged store; a shard whose store has no
    status column yet (an older build's) reads as its rows mean: error where they errored."""
    _, _, shards, _ = runs
    copies = []
    for index, shard in enumerate(shards, 1):
        copy = tmp_path / f"shard{index}.db"
        source, target = sqlite3.connect(shard), sqlite3.connect(copy)
        source.backup(target)
        source.close()
        target.close()
        copies.append(copy)
    db = sqlite3.connect(copies[0])
    db.execute(
        "UPDATE results SET status = 'interrupted', interrupt = '\"approve?\"'"
        " WHERE id = (SELECT MIN(id) FROM results)"
    )
    db.commit()
    db.close()
    db = sqlite3.connect(copies[1])
    db.execute(
        "UPDATE results SET error = 'ValueError: boom' WHERE id = (SELECT MIN(id) FROM results)"
    )
    db.execute("ALTER TABLE results DROP COLUMN status")
    db.execute("ALTER TABLE results DROP COLUMN interrupt")
    db.commit()
    db.close()
    report = agenteval.merge(copies, store=tmp_path / "merged.db")
    assert report.status == "finished"
    with Store(tmp_path / "merged.db") as merged:
        counts: dict[str, int] = {}
        for experiment_id in report.ids:
            for status, n in merged.status_counts(experiment_id).items():
                counts[status] = counts.get(status, 0) + n
        # 2 targets x 32 examples x 2 repetitions, one of them errored and one interrupted
        assert counts == {"ok": 2 * 32 * 2 - 2, "error": 1, "interrupted": 1}
        stopped = [
            s.result
            for i in report.ids
            for s in merged.results(i)
            if s.result.status == "interrupted"
        ]
        assert [r.interrupt for r in stopped] == ['"approve?"']


def test_merge_refuses_a_shard_holding_an_example_of_another_and_keeps_none_of_its_results(
    runs, invoke, tmp_path
):
    """Shard 2's copy holds one result of an example shard 1 holds (same target and
    repetition): the merge stops at shard 2 with one line, shard 2's copy rolled back whole."""
    _, _, (one, two, three), _ = runs
    copy = tmp_path / "two.db"
    source, target = sqlite3.connect(two), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    first = sqlite3.connect(one)
    (example_id, repetition, name) = first.execute(
        "SELECT r.example_id, r.repetition, e.target FROM results r"
        " JOIN experiments e ON e.id = r.experiment_id ORDER BY r.id LIMIT 1"
    ).fetchone()
    shard_one_counts = dict(
        first.execute(
            "SELECT e.target, COUNT(*) FROM results r JOIN experiments e"
            " ON e.id = r.experiment_id GROUP BY e.target"
        ).fetchall()
    )
    first.close()
    db = sqlite3.connect(copy)
    db.execute(
        "UPDATE results SET example_id = ? WHERE id = (SELECT MIN(r.id) FROM results r"
        " JOIN experiments e ON e.id = r.experiment_id WHERE e.target = ? AND r.repetition = ?)",
        (example_id, name, repetition),
    )
    db.commit()
    db.close()

    line = one_line_refusal(invoke, one, copy, three, "--store", tmp_path / "cli.db")
    assert line == (
        f"error: {copy} (shard 2/3) holds examples another shard holds too"
        " (run every shard with the same agenteval and dataset)"
    )
    out = tmp_path / "merged.db"
    with pytest.raises(UserError, match=r"two\.db \(shard 2/3\) holds examples another shard"):
        agenteval.merge([one, copy, three], store=out)
    with Store(out, readonly=True) as merged:
        experiments = merged.experiments()
        assert sorted(e.target for e in experiments) == ["supervisor", "swarm"]
        assert {e.status for e in experiments} == {"interrupted"}
        # shard 1's results were committed before shard 2's copy failed; none of shard 2's
        assert {e.target: merged.result_count(e.id) for e in experiments} == shard_one_counts
        # 12 of the dataset's 32 examples are shard 1's (1/3 by sha256), 2 repetitions each
        assert shard_one_counts == {"supervisor": 2 * 12, "swarm": 2 * 12}
