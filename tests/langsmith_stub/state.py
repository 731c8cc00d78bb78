"""The stand-in's in-memory state and the records its routes share.

Everything a route reads or writes lives in :class:`State`; requests, faults and errors
are plain records, so tests can inspect them directly.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

TENANT_ID = "00000000-0000-4000-8000-00000000cafe"
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int = 0


@dataclass
class Fault:
    """Answer ``status`` to the next ``times`` requests whose "METHOD path" matches ``pattern``.

    ``after_apply`` processes the request first and then fails, like a server that
    committed the write but lost the response."""

    pattern: str
    status: int
    times: int = 1
    after_apply: bool = False
    retry_after: str | None = "0"


class ApiError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class State:
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # example id -> versions, oldest first: (as_of, example record or None once deleted)
    examples: dict[str, list[tuple[datetime, dict[str, Any] | None]]] = field(default_factory=dict)
    versions: dict[str, list[datetime]] = field(default_factory=dict)  # dataset id -> as_of list
    tags: dict[str, dict[str, datetime]] = field(default_factory=dict)  # dataset id -> tag -> as_of
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    early_patches: dict[str, dict[str, Any]] = field(default_factory=dict)  # before the run
    feedback: dict[str, dict[str, Any]] = field(default_factory=dict)

    def dataset_by_name(self, name: str) -> dict[str, Any] | None:
        return next((d for d in self.datasets.values() if d["name"] == name), None)

    def session_by_name(self, name: str) -> dict[str, Any] | None:
        return next((s for s in self.sessions.values() if s["name"] == name), None)

    def examples_at(self, dataset_id: str, as_of: datetime | None = None) -> list[dict]:
        """Copies of a dataset's examples at ``as_of`` (default: now), in creation order."""
        found = []
        for history in self.examples.values():
            record = at(history, as_of)
            if record is not None and record["dataset_id"] == dataset_id:
                found.append(copy.deepcopy(record))
        return found


def at(history: list[tuple[datetime, dict | None]], as_of: datetime | None) -> dict | None:
    """An example as it was at ``as_of`` (the newest state when None)."""
    record = None
    for when, state in history:
        if as_of is not None and when > as_of:
            break
        record = state
    return record


def page(items: list[Any], query: dict[str, list[str]]) -> list[Any]:
    """Offset pagination, as the list endpoints do it (``limit`` default 100)."""
    offset = int(query.get("offset", ["0"])[-1])
    limit = int(query.get("limit", ["100"])[-1])
    return items[offset : offset + limit]
