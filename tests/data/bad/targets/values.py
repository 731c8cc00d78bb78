"""Targets that misbehave per call: the run must record an error and go on."""

import asyncio
import time

NUMBER = 42


def returns_int(inputs):
    return 7


def returns_none(inputs):
    return None


def returns_unserialisable(inputs):
    return {"final_response": "ok", "handle": object(), "when": {1, 2}}


def returns_circular(inputs):
    data = {"final_response": "loop"}
    data["self"] = data
    return data


def raises(inputs):
    raise KeyError("customer_id")


def hangs_sync(inputs):
    time.sleep(3600)


async def hangs_async(inputs):
    await asyncio.sleep(3600)


def raises_by_question(inputs):
    """A different failure per question: 'v1' and 'v2' raise ValueErrors with their own
    message, 'k' a KeyError, 't' a TypeError, 'o' an OSError, 'r' a RuntimeError."""
    question = inputs["question"]
    if question.startswith("v"):
        raise ValueError(f"bad value {question}")
    errors = {"k": KeyError("id"), "t": TypeError("no"), "o": OSError("disk"), "r": RuntimeError()}
    if question in errors:
        raise errors[question]
    return {"final_response": question}
