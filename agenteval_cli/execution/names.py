"""Names in the dataset checked against the system: every agent, tool and skill a row's
references name (``expected_agents``, ``forbidden_agents``, ``required_tools``,
``expected_tools``, ``expected_skills``, and each turn's) that the target has not.

``expected_agents: [hotel]`` where the agent is ``hotel_assistant`` would otherwise score
as a routing miss on every row, read as the system's failure. Before any call the names are
checked against what the target's graph holds (:mod:`agenteval_cli.targets.names`); where
that cannot be read (a function, a Runnable, a served graph), after the run against what
the experiment's traces show. The figures stay computed (a correctly named agent the system
lacks is a real miss), but each unknown name is said once, with the nearest real one, and
the comments of the row's scores name it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example, Result, Score, Trace
from agenteval_cli.data.conversations import TURNS
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.store.results import encode
from agenteval_cli.targets import Target
from agenteval_cli.targets.names import SystemNames

__all__ = [
    "FIELDS",
    "AfterRun",
    "NameCheck",
    "NameNote",
    "NamesSeen",
    "RowNotes",
    "Unknown",
    "annotate_stored",
    "check_after_run",
    "check_before_run",
    "check_recorded",
    "row_notes",
    "seen_names",
    "trace_names",
    "unknown_names",
    "with_notes",
]

# The reference fields that name parts of the system: field -> what it names.
FIELDS: Mapping[str, str] = {
    "expected_agents": "agent",
    "forbidden_agents": "agent",
    "required_tools": "tool",
    "expected_tools": "tool",
    "expected_skills": "skill",
}
CHECKED_ROWS = 8192  # rows checked (a large file: its first)
SHOWN_ROWS = 3  # rows a line names before it counts the rest


@dataclass
class Unknown:
    """One name the dataset gives that the target has not, and where."""

    target: str
    kind: str  # "agent", "tool" or "skill"
    name: str
    known: frozenset[str]  # what the target has (or the run showed)
    # the traces it was checked against ("this run", "the imported traces"); None: the graph
    seen_in: str | None = None
    fields: list[str] = field(default_factory=list)  # the reference fields naming it
    rows: list[str] = field(default_factory=list)  # "row 4", "row 4 turn 2"
    # example id -> (turn, field) naming it: turn None for the row's own references
    in_rows: dict[str, set[tuple[int | None, str]]] = field(default_factory=dict)

    @property
    def nearest(self) -> str | None:
        return nearest(self.name, self.known)

    def where(self) -> str:
        if len(self.rows) == 1:
            return self.rows[0]
        shown = ", ".join(self.rows[:SHOWN_ROWS])
        more = len(self.rows) - SHOWN_ROWS
        return f"{len(self.rows)} rows ({shown}{f' and {more} more' if more > 0 else ''})"

    def what(self) -> str:
        """``'hotel' is no agent of target 'supervisor'``, with the nearest real name."""
        if self.seen_in is not None:
            verb = {"agent": "ran", "tool": "was called", "skill": "was loaded"}[self.kind]
            text = f"no {self.kind} of target {self.target!r} {verb} under the name {self.name!r}"
            text += f" in {self.seen_in}"
        else:
            text = f"{self.name!r} is no {self.kind} of target {self.target!r}"
        close = self.nearest
        if close is not None:
            return f"{text} (nearest: {close!r})"
        return f"{text} (it has none)" if not self.known else text

    def line(self, source: str) -> str:
        """The warning: the file, the rows, the fields, the name and the nearest real one."""
        return f"{source}: {self.where()}: {', '.join(self.fields)}: {self.what()}"

    def after_all(self, source: str) -> str:
        """What the run says of a name said unknown before it that its traces showed (an
        agent or tool the graph builds on each call, which is not there to read)."""
        return (
            f"{source}: {self.where()}: {', '.join(self.fields)}: {self.name!r} is "
            f"{'an' if self.kind == 'agent' else 'a'} {self.kind} of target {self.target!r} "
            "after all: the run's traces show it, "
            "though its graph did not hold it when loaded"
        )

    def note(self) -> NameNote:
        return NameNote(self.kind, _key(self.kind, self.name), self.what())


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name`` (one holding the other first, then by difflib's
    ratio), or None when nothing is known."""
    lowered = name.lower()

    def unlikeness(candidate: str) -> tuple[bool, float, str]:
        other = candidate.lower()
        holds = lowered in other or other in lowered
        return not holds, -difflib.SequenceMatcher(None, lowered, other).ratio(), candidate

    return min(known, key=unlikeness, default=None)


def unknown_names(
    target: str,
    names: SystemNames,
    examples: Iterable[Example],
    *,
    seen_in: str | None = None,
) -> list[Unknown]:
    """The names ``examples`` give that ``names`` lacks, in the order first met; a kind
    ``names`` cannot tell (None) is not checked."""
    found: dict[tuple[str, str], Unknown] = {}
    keys: dict[str, set[str]] = {}  # the names of each kind the target has, as compared
    for kind in set(FIELDS.values()):
        if (has := _known(names, kind)) is not None:
            keys[kind] = {_key(kind, k) for k in has}
    for example in islice(examples, CHECKED_ROWS):
        for reference_field, turn, kind, name in named_in(example):
            known = _known(names, kind)
            if known is None or _key(kind, name) in keys[kind]:
                continue
            unknown = found.setdefault(
                (kind, _key(kind, name)), Unknown(target, kind, name, known, seen_in)
            )
            label = reference_field if turn is None else f"turns[].{reference_field}"
            if label not in unknown.fields:
                unknown.fields.append(label)
            where = _row(example) + ("" if turn is None else f" turn {turn}")
            if not unknown.rows or unknown.rows[-1] != where:  # a row's names come together
                unknown.rows.append(where)
            unknown.in_rows.setdefault(example.id, set()).add((turn, reference_field))
    return list(found.values())


def named_in(example: Example) -> Iterator[tuple[str, int | None, str, str]]:
    """(field, turn or None, kind, name) of every name the row's references give."""
    outputs = example.outputs if isinstance(example.outputs, dict) else {}
    yield from _named(outputs, None)
    turns = outputs.get(TURNS)
    if isinstance(turns, list):
        for number, references in enumerate(turns, 1):
            if isinstance(references, dict):
                yield from _named(references, number)


def _named(
    references: Mapping[str, Any], turn: int | None
) -> Iterator[tuple[str, int | None, str, str]]:
    for reference_field, kind in FIELDS.items():
        value = references.get(reference_field)
        for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            name = item.get("name") if isinstance(item, Mapping) else item
            if isinstance(name, str) and name.strip():
                yield reference_field, turn, kind, name.strip()


def _known(names: SystemNames, kind: str) -> frozenset[str] | None:
    return {"agent": names.agents, "tool": names.tools, "skill": names.skills}[kind]


def _key(kind: str, name: str) -> str:
    """A name as the evaluators compare it: agents and skills case-insensitively."""
    return name if kind == "tool" else name.strip().lower()


def _row(example: Example) -> str:
    return f"row {example.row}" if example.row is not None else f"example {example.id!r}"


def seen_names(results: Iterable[Result]) -> SystemNames:
    """What an experiment's traces show (:func:`trace_names` of every result and turn)."""
    seen = NamesSeen()
    for result in results:
        seen.add_result(result)
    return seen.names()


def trace_names(traces: Iterable[Trace | None]) -> SystemNames:
    """What traces show: every agent that ran (teams included), every tool the models
    called and every skill loaded. Nothing is known (None) when none was traced, and no
    skill when no trace could tell skills (no ``skill_tools``)."""
    seen = NamesSeen()
    for trace in traces:
        seen.add(trace)
    return seen.names()


class NamesSeen:
    """What traces show, added to one trace at a time: a run keeps one per target as its
    results are stored, so its end need not read them back (:func:`trace_names`)."""

    def __init__(self) -> None:
        self.agents: set[str] = set()
        self.tools: set[str] = set()
        self.skills: set[str] | None = None
        self.traced = False

    def add(self, trace: Trace | None) -> None:
        if trace is None or trace.untraced:
            return
        self.traced = True
        self.agents.update(trace.agents_at_any_level)
        self.tools.update(call.name for call in trace.tool_calls)
        if trace.skills is not None:
            self.skills = (self.skills or set()) | set(trace.skills)

    def add_result(self, result: Result) -> None:
        """A result's trace and each of its turns'."""
        self.add(result.trace)
        for turn in result.turns or ():
            self.add(turn.trace)

    def names(self) -> SystemNames:
        if not self.traced:
            return SystemNames()
        skills = None if self.skills is None else frozenset(self.skills)
        return SystemNames(frozenset(self.agents), frozenset(self.tools), skills)


def shows(names: SystemNames, kind: str, key: str) -> bool:
    """Whether ``names`` hold the name of ``kind`` compared as ``key`` (:func:`_key`)."""
    known = _known(names, kind)
    return known is not None and key in {_key(kind, k) for k in known}


class NameNote(NamedTuple):
    """An unknown name a score's comment is to say: its kind, its name as compared, the text."""

    kind: str
    key: str
    text: str


# What the comments of one row's scores add, by turn: None for the row's own scores (every
# name the row gives, its turns' included), a turn's number for that turn's scores (the
# names its own references give): turn -> score key -> the notes.
RowNotes = dict[int | None, dict[str, list[NameNote]]]


def row_notes(
    unknowns: Sequence[Unknown], keys_reading: Mapping[str, Iterable[str]]
) -> dict[str, RowNotes]:
    """example id -> the notes of its scores: the unknown names the row gives in the fields
    each score key's evaluator reads."""
    notes: dict[str, RowNotes] = {}
    for unknown in unknowns:
        note = unknown.note()
        for example_id, places in unknown.in_rows.items():
            for turn, reference_field in sorted(places, key=lambda p: (p[0] or 0, p[1])):
                for key in keys_reading.get(reference_field, ()):
                    for level in dict.fromkeys([None, turn]):
                        said = notes.setdefault(example_id, {}).setdefault(level, {})
                        if note not in said.setdefault(key, []):
                            said[key].append(note)
    return notes


def with_notes(
    scores: list[Score], notes: Mapping[str, Sequence[NameNote]], traces: Iterable[Trace | None]
) -> list[Score]:
    """``scores`` whose keys ``notes`` names with those notes after their comment, but for
    a name ``traces`` show: the graph lacked it when loaded, the call ran it all the same."""
    if not notes:
        return scores
    shown = trace_names(traces)
    found = []
    for score in scores:
        texts = [n.text for n in notes.get(score.key, ()) if not shows(shown, n.kind, n.key)]
        comment = "; ".join(filter(None, [score.comment, *texts]))
        found.append(Score(score.key, score.score, comment) if texts else score)
    return found


@dataclass
class NameCheck:
    """The unknown names of a run's dataset, per target, as the run says them."""

    source: str  # the dataset file (or the spec, for a LangSmith dataset)
    unknowns: dict[str, list[Unknown]] = field(default_factory=dict)  # target -> its names
    # whether the rows checked name any agent, tool or skill (unknown: True); when none
    # does, nothing is left to check after the run, and the rows are not read again
    names_given: bool = True

    def lines(self) -> list[str]:
        return [u.line(self.source) for found in self.unknowns.values() for u in found]

    def notes(self, keys_reading: Mapping[str, Iterable[str]]) -> dict[str, dict[str, RowNotes]]:
        """target -> example id -> the notes its scores' comments get."""
        return {
            target: notes
            for target, found in self.unknowns.items()
            if (notes := row_notes(found, keys_reading))
        }

    def refusal(self) -> UserError | None:
        """The error of a strict run (``--strict``, ``strict_names``), or None."""
        found = [u for each in self.unknowns.values() for u in each]
        if not found:
            return None
        first = found[0]
        more = f" (and {len(found) - 1} more unknown name(s))" if len(found) > 1 else ""
        return UserError(
            f"{first.where()}: {', '.join(first.fields)}: {first.what()}{more}",
            file=self.source,
            hint="correct the name in the dataset, or run without --strict / strict_names",
        )


def check_before_run(
    targets: Sequence[Target], examples: Iterable[Example], source: str
) -> NameCheck:
    """The names the rows give that a target's graph lacks (targets whose names cannot
    be read before the run are checked after it: :func:`check_after_run`)."""
    rows = list(islice(examples, CHECKED_ROWS))
    check = NameCheck(source, names_given=any(next(named_in(row), None) for row in rows))
    for target in targets:
        found = unknown_names(target.name, target.names, rows)
        if found:
            check.unknowns[target.name] = found
    return check


@dataclass
class AfterRun:
    """What a run's traces say of the dataset's names: those no trace of a target whose
    names were not read shows (``unknown``), and those said unknown before the run that
    the traces showed after all (``shown``)."""

    unknown: NameCheck
    shown: list[Unknown] = field(default_factory=list)


def check_after_run(
    targets: Sequence[Target],
    examples: Iterable[Example],
    seen_by: Callable[[str], SystemNames],
    before: NameCheck,
) -> AfterRun:
    """The names the rows give that no trace of a target's experiment shows, for the kinds
    its graph could not tell before the run, and those ``before`` said unknown that its
    traces show; ``seen_by(target)`` is what its experiment's traces show."""
    after = AfterRun(NameCheck(before.source))
    if not before.names_given:  # no row names anything: no name can be unknown
        return after
    rows = list(islice(examples, CHECKED_ROWS))
    for target in targets:
        said = before.unknowns.get(target.name, [])
        names = target.names
        if not said and None not in (names.agents, names.tools, names.skills):
            continue
        seen = seen_by(target.name)
        after.shown += [u for u in said if shows(seen, u.kind, _key(u.kind, u.name))]
        unread = SystemNames(
            seen.agents if names.agents is None else None,
            seen.tools if names.tools is None else None,
            seen.skills if names.skills is None else None,
        )
        found = unknown_names(target.name, unread, rows, seen_in="this run")
        if found:
            after.unknown.unknowns[target.name] = found
    return after


def check_recorded(
    target: str, recorded: Iterable[tuple[Example, Result]], source: str
) -> NameCheck:
    """An experiment no graph was loaded for (imported from LangSmith or from OpenTelemetry
    traces): the names its rows' references give that none of its traces shows."""
    pairs = list(islice(recorded, CHECKED_ROWS))
    seen = seen_names(result for _, result in pairs)
    rows = list({example.id: example for example, _ in pairs}.values())
    check = NameCheck(source)
    found = unknown_names(target, seen, rows, seen_in="the imported traces")
    if found:
        check.unknowns[target] = found
    return check


def annotate_stored(
    check: NameCheck,
    keys_reading: Mapping[str, Iterable[str]],
    experiments: Mapping[str, ExperimentRecord],
    store: Store,
) -> None:
    """Write the notes of names found unknown only after the run (a function's, a
    Runnable's) into the comments of the stored scores of the rows that give them, as a
    run adds the notes of names known before it: no 0 reads as a plain routing miss."""
    notes = check.notes(keys_reading)
    writer = store.writer()
    for target, by_example in notes.items():
        record = experiments.get(target)
        if record is None:
            continue
        rewritten = []
        for stored in store.results(record.id):  # rewritten once read: a row rewritten moves
            row = by_example.get(stored.result.example_id)
            if row is None:
                continue
            result = stored.result
            turns = result.turns or []
            for number, turn in enumerate(turns, 1):
                turn.scores = with_notes(turn.scores, row.get(number, {}), [turn.trace])
            traces = [result.trace, *(turn.trace for turn in turns)]
            result.scores = with_notes(result.scores, row.get(None, {}), traces)
            example = Example(result.example_id, stored.inputs, stored.reference_outputs)
            rewritten.append(encode(record.id, example, result, replace=True))
        for row_record in rewritten:
            writer.add(row_record)
    writer.flush()
