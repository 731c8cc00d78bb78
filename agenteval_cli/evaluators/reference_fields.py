"""Reference fields the evaluators need, checked against the rows before a run.

An evaluator whose reference field no row has scores as if nothing were expected
(``routing_accuracy`` is 1.0 with no ``expected_agents``): a misspelt field passes
silently. Each evaluator declares the fields it reads (the registry's ``references`` and
``optional_references``, or a user function's :func:`~registry.reads_references`); when no
row has any field an evaluator needs while rows have fields no evaluator reads, one warning
per such field names it and the nearest needed one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from agenteval_cli.core.records import Example
from agenteval_cli.data.conversations import (
    conversation_references,
    is_conversation,
    turn_references,
)
from agenteval_cli.evaluators.registry import REGISTRY, entry_references

# People's labels of a judge's verdicts (outputs.human: {<score key>: <value>}), read by
# ``agenteval judge calibrate`` and the --json export's calibration, never by an evaluator.
HUMAN_LABELS = "human"
CHECKED_ROWS = 8192  # rows read for the check (a large file: its first)


@dataclass(frozen=True)
class Reads:
    """What one evaluator of a spec reads of the reference outputs."""

    name: str  # as the spec names it
    needed: tuple[str, ...]  # it needs one of these
    optional: tuple[str, ...] = ()


def spec_reads(items: Iterable[Any], functions: Mapping[str, Any] | None = None) -> list[Reads]:
    """What each of a spec's evaluator items (``EvaluatorSpec``) reads; ``functions`` maps
    an item's name to its built function, whose declaration wins (a user's own)."""
    found = []
    for item in items:
        kind = (item.options or {}).get("type") or item.name
        fn = (functions or {}).get(item.name)
        needed, optional = entry_references(str(kind), fn)
        found.append(Reads(str(item.name), needed, optional))
    return found


def reference_warnings(
    reads: Sequence[Reads], examples: Iterable[Example], source: str
) -> list[str]:
    """One line for each evaluator whose needed reference fields are in no row while rows
    have a field no evaluator reads: naming that field (the nearest, when several) and the
    nearest needed one; and one for the rows that lack a field other rows give while
    having an unread one close to it (a typo in some rows). Evaluators missing the same field
    share their line."""
    if not any(r.needed for r in reads):
        return []
    rows = list(islice(examples, CHECKED_ROWS))
    present: set[str] = set()
    for example in rows:
        present.update(reference_fields(example))
    known = _known_fields(reads)
    unknown = sorted(present - known)
    if not unknown:
        return []
    return _in_no_row(reads, present, unknown, source) + _in_some_rows(reads, rows, known, source)


def _in_no_row(
    reads: Sequence[Reads], present: set[str], unknown: list[str], source: str
) -> list[str]:
    """The evaluators none of whose needed fields is in any row."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for r in reads:
        if r.needed and not set(r.needed) & present:
            pair = max(((u, f) for u in unknown for f in r.needed), key=lambda p: _similarity(*p))
            pairs.setdefault(pair, []).append(r.name)
    lines = []
    for (field, nearest), names in pairs.items():
        readers = ", ".join(dict.fromkeys(names))
        if _similarity(field, nearest) >= SIMILAR:
            lines.append(
                f"{source}: no row has the reference field {nearest!r} that {readers} "
                f"reads, and rows have {field!r}, which no evaluator reads: did you mean "
                f"{nearest!r}? (without it {readers} scores as if nothing were expected)"
            )
        else:
            lines.append(
                f"{source}: no row has the reference field {nearest!r} that {readers} "
                f"reads, so it scores as if nothing were expected; rows have {field!r}, "
                "which no evaluator reads"
            )
    return lines


SIMILAR = 0.6  # as close as a typo: "did you mean" is said


def _in_some_rows(
    reads: Sequence[Reads], rows: Sequence[Example], known: set[str], source: str
) -> list[str]:
    """Rows without an evaluator's needed field but with an unread one as close to it as a
    typo, for an evaluator other rows do give its field (a row with no such field is one
    that expects nothing, as a negative example does)."""
    found: dict[tuple[str, str], tuple[list[str], list[str]]] = {}  # -> (readers, row ids)
    fields_of = {id(e): reference_fields(e) for e in rows}
    given = {r.name for r in reads if any(f in fields_of[id(e)] for e in rows for f in r.needed)}
    for example in rows:
        fields = fields_of[id(example)]
        for r in reads:
            if r.name not in given or set(r.needed) & fields:
                continue
            close = [
                (u, f) for u in fields - known for f in r.needed if _similarity(u, f) >= SIMILAR
            ]
            if not close:
                continue
            pair = max(close, key=lambda p: _similarity(*p))
            readers, ids = found.setdefault(pair, ([], []))
            if r.name not in readers:
                readers.append(r.name)
            if example.id not in ids:
                ids.append(example.id)
    lines = []
    for (field, nearest), (readers, ids) in found.items():
        names = ", ".join(readers)
        lines.append(
            f"{source}: {len(ids)} row(s) (first: {ids[0]!r}) have the reference field "
            f"{field!r}, which no evaluator reads, and not {nearest!r} that {names} reads: "
            f"did you mean {nearest!r}? (without it {names} scores those rows as if nothing "
            "were expected)"
        )
    return lines


def reference_fields(example: Example) -> set[str]:
    """The reference fields a row gives: its ``outputs``' keys, or a conversation's, those of
    the whole conversation and of each of its turns (``outputs.turns``)."""
    if not is_conversation(example):
        return {str(k) for k in example.outputs}
    fields = {str(k) for k in conversation_references(example)}
    for each in turn_references(example):
        fields.update(str(k) for k in each)
    return fields


def _known_fields(reads: Sequence[Reads]) -> set[str]:
    """Every reference field an evaluator reads: the registry's and the spec's own."""
    known: set[str] = {HUMAN_LABELS}
    for info in REGISTRY.values():
        known.update(info.references, info.optional_references)
    for r in reads:
        known.update(r.needed, r.optional)
    return known


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()
