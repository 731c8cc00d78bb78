"""An ``input:`` function: an example's inputs -> the nested graph's input."""

from __future__ import annotations


def to_state(inputs: dict) -> dict:
    return {"query": inputs["question"].upper(), "tags": [f"customer-{inputs['customer_id']}"]}
