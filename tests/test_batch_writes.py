"""A group commit's rows: inserted by a few statements of many rows each, in their order,
and searched for secrets once a batch, each row redacted as it would be alone."""

from __future__ import annotations

from test_store import make_result, new_experiment

from agenteval_cli.core.records import Example
from agenteval_cli.store import results


def test_a_batch_is_inserted_by_a_few_statements_in_its_order(store):
    """1,000 results and their cache entries: 1,000 = 3 × 256 + 128 + 64 + 32 + 8 rows a
    statement, seven statements a table (executemany stepped once a row), ids in batch
    order; of two cache entries of one key, the later is kept, as one statement a row kept
    it."""
    exp = new_experiment(store)
    examples = [Example(f"e{i:04d}", {"q": i}, {}) for i in range(1000)]
    batch = [
        results.encode(exp.id, e, make_result(e.id), cache_key=f"k{i // 2}", target_path="m:f")
        for i, e in enumerate(examples)
    ]
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    results.write(store.db, batch)
    store.db.set_trace_callback(None)
    inserts = [s.split(" (")[0] for s in statements if s.startswith("INSERT")]
    assert inserts == ["INSERT INTO results"] * 7 + ["INSERT OR REPLACE INTO cache"] * 7
    ids = [
        example_id
        for (example_id,) in store.db.execute(
            "SELECT example_id FROM results WHERE experiment_id = ? ORDER BY id", (exp.id,)
        )
    ]
    assert ids == [e.id for e in examples]
    kept = dict(store.db.execute("SELECT key, outputs_json FROM cache"))
    assert len(kept) == 500
    assert kept["k0"] == batch[1].cache[2]  # e0001's answer, written after e0000's
    assert [s.result.example_id for s in store.results(exp.id)] == ids


def test_one_row_holding_a_secret_is_redacted_and_the_others_are_left_as_they_are(
    store, monkeypatch
):
    secret = "sk-batch-0123456789abcdef"
    monkeypatch.setenv("AGENTEVAL_TEST_API_KEY", secret)
    exp = new_experiment(store)
    batch = []
    for i in range(100):
        result = make_result(f"e{i}")
        if i == 57:
            result.outputs = {"final_response": f"my key is {secret}"}
        batch.append(results.encode(exp.id, Example(f"e{i}", {"q": i}, {}), result))
    cleaned = results.without_secrets(batch)
    assert [c is b for c, b in zip(cleaned, batch, strict=True)] == [i != 57 for i in range(100)]
    assert secret not in cleaned[57].row[5] and "my key is" in cleaned[57].row[5]
    assert results.without_secrets(batch[:57]) == batch[:57]  # none: the batch as it was
