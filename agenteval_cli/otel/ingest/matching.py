"""Which dataset row each recorded request answers.

A request names its row when one of its spans carries ``agenteval.example_id`` (as an
attribute, or a key of OpenInference's ``metadata``, which
``using_metadata({"agenteval.example_id": ...})`` or a LangChain run's config metadata
sets); otherwise it answers the row whose input text (the target's ``input_key`` field) is
exactly the text the request began with. Several requests for one row are its repetitions,
in the order they started. A request no row claims, and a row no request answers, are
reported, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agenteval_cli.core.records import Example
from agenteval_cli.otel.ingest.requests import RecordedRequest

__all__ = ["Matched", "match"]


@dataclass
class Matched:
    """Each row's requests (its repetitions), and the requests no row claimed, with why."""

    by_row: dict[str, list[RecordedRequest]] = field(default_factory=dict)
    unclaimed: list[tuple[RecordedRequest, str]] = field(default_factory=list)

    @property
    def repetitions(self) -> int:
        return max((len(found) for found in self.by_row.values()), default=0)


def row_text(example: Example, input_key: str) -> str | None:
    """The text a request for this row begins with: its ``input_key`` field."""
    value = example.inputs.get(input_key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def match(
    requests: Sequence[RecordedRequest], examples: Sequence[Example], input_key: str
) -> Matched:
    matched = Matched(by_row={e.id: [] for e in examples})
    by_text: dict[str, list[str]] = {}
    for example in examples:
        text = row_text(example, input_key)
        if text is not None:
            by_text.setdefault(text, []).append(example.id)
    for request in requests:
        if request.example_id is not None:
            if request.example_id in matched.by_row:
                matched.by_row[request.example_id].append(request)
            else:
                why = f"its agenteval.example_id {request.example_id!r} is no row of the dataset"
                matched.unclaimed.append((request, why))
            continue
        text = (request.input_text or "").strip()
        rows = by_text.get(text, []) if text else []
        if len(rows) == 1:
            matched.by_row[rows[0]].append(request)
        elif rows:
            why = (
                f"its input matches rows {', '.join(rows)}: tag each request with "
                "agenteval.example_id"
            )
            matched.unclaimed.append((request, why))
        else:
            shown = text if len(text) <= 60 else text[:59] + "…"
            why = (
                f"its input {shown!r} is no row's {input_key!r}"
                if text
                else "no input text was found in it"
            )
            matched.unclaimed.append((request, why))
    return matched
