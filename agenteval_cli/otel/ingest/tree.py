"""One trace's spans as a tree, whatever the file says of their parents.

Trace files are untrusted: a collector cuts a trace short (a span names a parent the files
do not hold), a broken exporter writes a span that is its own parent or a ring of spans
each the parent of the next (no root at all). Every walk of the trace (runs, attribution,
order) needs a tree, so the spans are made one here, once, and what was mended is said: a
cycle is cut at its earliest span, which becomes a root; a span whose parent is missing is
a root already, said when the trace has another root (one root whose parent is elsewhere
is a trace continued from another service, nothing to say).
"""

from __future__ import annotations

from dataclasses import replace

from agenteval_cli.otel.ingest.otlp import Span

__all__ = ["rooted"]

_FOLLOWING, _DONE = 1, 2
_SHOWN = 3  # span names a note lists before "and N more"


def rooted(spans: list[Span]) -> tuple[list[Span], list[str]]:
    """``spans`` (of one trace, ids unique) with every parent cycle cut, and the notes
    saying what was cut or found missing (none for a sound trace)."""
    by_id = {s.span_id: s for s in spans}
    state: dict[str, int] = {}
    cuts: dict[str, list[Span]] = {}  # id of the span made a root -> its cycle
    for span in spans:
        chain: list[Span] = []
        current: Span | None = span
        while current is not None and current.span_id not in state:
            state[current.span_id] = _FOLLOWING
            chain.append(current)
            current = by_id.get(current.parent_id) if current.parent_id else None
        if current is not None and state[current.span_id] == _FOLLOWING:  # came round
            cycle = sorted(chain[chain.index(current) :], key=lambda s: (s.start_ns, s.span_id))
            cuts[cycle[0].span_id] = cycle
        for each in chain:
            state[each.span_id] = _DONE
    mended = [replace(s, parent_id=None) if s.span_id in cuts else s for s in spans]
    notes = [_cycles_note(spans[0].trace_id, list(cuts.values()))] if cuts else []
    orphans = [s for s in mended if s.parent_id and s.parent_id not in by_id]
    roots = [s for s in mended if not s.parent_id or s.parent_id not in by_id]
    if orphans and len(roots) > 1:
        notes.append(_orphans_note(orphans))
    return mended, notes


def _cycles_note(trace_id: str, cycles: list[list[Span]]) -> str:
    described = []
    for cycle in cycles:
        if len(cycle) == 1:
            described.append(f"span {cycle[0].name!r} is its own parent")
        else:
            described.append(f"spans {_names(cycle)} are each other's ancestors")
    origin = min((s for c in cycles for s in c), key=lambda s: s.start_ns).origin
    return (
        f"{origin}: trace {trace_id} has no root ({'; '.join(described)}): "
        "read with the earliest span of each cycle as a root"
    )


def _orphans_note(orphans: list[Span]) -> str:
    first = min(orphans, key=lambda s: s.start_ns)
    return (
        f"{first.origin}: trace {first.trace_id}: {len(orphans)} span(s) name a parent no "
        f"file holds (a trace cut short?), {_names(orphans)}: read as roots of their own"
    )


def _names(spans: list[Span]) -> str:
    shown = ", ".join(repr(s.name) for s in spans[:_SHOWN])
    return shown + (f" and {len(spans) - _SHOWN} more" if len(spans) > _SHOWN else "")
