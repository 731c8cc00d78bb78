"""Walks of nested data without Python's recursion limit.

Traces are as deep as the agents that made them: a recursing agent, a long chain of
subgraphs, a collector's file of 2,000 nested spans. A recursive walk would stop at
Python's limit (about 1,000 frames) with a ``RecursionError``. A walk written as a
generator that *yields* the walk of a child where it would have called it, and receives
that walk's result back, runs here on an explicit stack instead: as deep as memory allows.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

__all__ = ["Walk", "nested_deeper", "run_walk"]

T = TypeVar("T")

# A walk of one node: yields the walks of the nodes below it, is sent each one's result,
# returns its own.
Walk = Generator["Walk[Any]", Any, T]


def run_walk(walk: Walk[T]) -> T:
    """Run ``walk`` and the walks it yields, depth first, on a list instead of the call
    stack; its result is what it returns."""
    stack: list[Walk[Any]] = [walk]
    value: Any = None
    while True:
        try:
            below = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value  # type: ignore[no-any-return]
            value = done.value
            continue
        stack.append(below)
        value = None


def nested_deeper(value: Any, levels: int) -> bool:
    """Whether JSON-like ``value`` (dicts and lists) nests more than ``levels`` containers
    deep, the value itself the first: found on a list, as deep as it goes."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            items: Any = current.values()
        elif isinstance(current, list):
            items = current
        else:
            continue
        if depth > levels:
            return True
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False
