"""Retrieval metrics: a worked example exactly, and every defined edge."""

from __future__ import annotations

import json
import math

import pytest

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import ToolCall, Trace
from agenteval_cli.evaluators import build_evaluator, normalize
from agenteval_cli.evaluators.retrieval import (
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

SEED_RANKING = ["doc5", "doc1", "doc9", "doc3", "doc2"]
SEED_RELEVANT = {"doc2", "doc5", "doc9"}
SEED_GRADES = {"doc5": 3, "doc9": 2, "doc2": 1}


def scores(options=None, *, outputs, reference, trace=None):
    fn = build_evaluator("retrieval", options)
    raw = fn(outputs=outputs, reference_outputs=reference, trace=trace or Trace())
    return {s.key: s for s in normalize(raw, "retrieval")}


def test_the_seeds_worked_example_with_the_functions():
    assert round(precision_at_k(SEED_RANKING, SEED_RELEVANT, 3), 3) == 0.667
    assert round(precision_at_k(SEED_RANKING, SEED_RELEVANT, 5), 3) == 0.6
    assert round(recall_at_k(SEED_RANKING, SEED_RELEVANT, 3), 3) == 0.667
    assert round(recall_at_k(SEED_RANKING, SEED_RELEVANT, 5), 3) == 1.0
    assert reciprocal_rank(SEED_RANKING, SEED_RELEVANT) == 1.0
    assert round(ndcg_at_k(SEED_RANKING, SEED_GRADES, 5), 3) == 0.921
    # the worked example's intermediate values: DCG@5 = 4.387, IDCG@5 = 4.762
    assert 3 + 2 / math.log2(4) + 1 / math.log2(6) == pytest.approx(4.387, abs=5e-4)
    assert 3 + 2 / math.log2(3) + 1 / math.log2(4) == pytest.approx(4.762, abs=5e-4)


def test_the_seeds_worked_example_through_the_evaluator():
    got = scores(
        {"k": [3, 5]}, outputs={"retrieved": SEED_RANKING}, reference={"relevance": SEED_GRADES}
    )
    assert round(got["precision@3"].score, 3) == 0.667
    assert round(got["precision@5"].score, 3) == 0.6
    assert round(got["recall@3"].score, 3) == 0.667
    assert got["recall@5"].score == 1.0
    assert got["reciprocal_rank"].score == 1.0
    assert round(got["ndcg@5"].score, 3) == 0.921
    assert got["hit@3"].score == 1.0
    # AP@5: relevant at ranks 1, 3, 5 -> (1/1 + 2/3 + 3/5) / 3
    assert got["average_precision@5"].score == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert "doc5" in got["precision@3"].comment


def test_first_relevant_at_rank_three_gives_a_third():
    got = scores(
        {"k": 3}, outputs={"retrieved": ["a", "b", "doc5"]}, reference={"relevant": ["doc5"]}
    )
    assert got["reciprocal_rank"].score == pytest.approx(1 / 3)
    assert got["hit@3"].score == 1.0
    assert set(got) == {
        "precision@3",
        "recall@3",
        "hit@3",
        "ndcg@3",
        "average_precision@3",
        "reciprocal_rank",
    }


def test_binary_relevance_ndcg():
    # relevant at ranks 2 and 3 of 3; ideal puts them at 1 and 2
    got = scores(
        {"k": 3}, outputs={"retrieved": ["x", "a", "b"]}, reference={"relevant": ["a", "b"]}
    )
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert got["ndcg@3"].score == pytest.approx(expected)


def test_nothing_retrieved_is_zero_everywhere():
    got = scores({"k": [1, 3]}, outputs={"retrieved": []}, reference={"relevant": ["a"]})
    assert {k: s.score for k, s in got.items()} == {k: 0.0 for k in got}


def test_nothing_relevant_is_undefined_not_zero():
    got = scores({"k": 3}, outputs={"retrieved": ["a"]}, reference={"relevant": []})
    assert all(s.score is None for s in got.values())
    assert "undefined" in got["precision@3"].comment


def test_k_beyond_the_list_divides_precision_by_k():
    got = scores({"k": 10}, outputs={"retrieved": ["a", "b"]}, reference={"relevant": ["a", "c"]})
    assert got["precision@10"].score == pytest.approx(0.1)
    assert got["recall@10"].score == 0.5
    assert got["average_precision@10"].score == 0.5  # 1/1 over min(2, 10) relevant


def test_duplicate_ids_count_once_at_their_first_rank():
    got = scores(
        {"k": 3}, outputs={"retrieved": ["a", "a", "a", "b"]}, reference={"relevant": ["a", "b"]}
    )
    # deduplicated ranking is [a, b]: 2 relevant in the top 3
    assert got["precision@3"].score == pytest.approx(2 / 3)
    assert got["recall@3"].score == 1.0
    assert "2 duplicate id(s) ignored" in got["recall@3"].comment


def test_documents_with_ids_in_metadata_and_a_custom_key():
    docs = [{"page_content": "x", "metadata": {"source_id": "d2"}}, {"id": "d7"}]
    got = scores(
        {"k": 2, "key": "docs", "id_key": "source_id"},
        outputs={"docs": docs},
        reference={"relevant": ["d7"]},
    )
    assert got["reciprocal_rank"].score == 0.5


def test_ids_from_retriever_tool_calls_in_the_trace():
    trace = Trace(
        tool_calls=[
            ToolCall(
                "rag", "search_docs", {"q": "x"}, output=json.dumps([{"id": "d1"}, {"id": "d2"}])
            ),
            ToolCall("rag", "other_tool", {}, output=json.dumps([{"id": "d9"}])),
        ]
    )
    got = scores(
        {"k": 3, "retriever_tools": ["search_docs"]},
        outputs={"final_response": "..."},
        reference={"relevant": ["d2"]},
        trace=trace,
    )
    assert got["reciprocal_rank"].score == 0.5
    assert got["precision@3"].comment.startswith("retriever tool calls")


@pytest.mark.parametrize("k", [0, -1, [], [1, "3"], True])
def test_bad_k_is_a_user_error(k):
    with pytest.raises(UserError, match="k must be a positive integer"):
        build_evaluator("retrieval", {"k": k})
