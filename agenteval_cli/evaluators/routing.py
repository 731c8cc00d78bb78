"""Routing: did the request reach the agents it should have? Agents come from the trace.

``expected_agents`` may name leaf agents or the teams holding them: an expected name is met
when it is any level of an invoked agent's path (``money_team > account`` meets both
``money_team`` and ``account``). An untraced result has no routing figures, only a reason;
so has one whose agents the target switches without naming them (``Trace.unattributed``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from agenteval_cli.core.records import Trace, Turn
from agenteval_cli.evaluators.registry import entry_parts, register
from agenteval_cli.metrics.registry import metric


def agent_names(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    return [str(v).strip().lower() for v in values or []]


def invoked_names(trace: Trace) -> list[str]:
    """Every name an invoked agent answers to: leaf agents and their teams, lower-cased."""
    return list(dict.fromkeys(agent_names(trace.agents_at_any_level)))


def specialists(trace: Trace, ignore: list[str]) -> list[list[str]]:
    """Paths (lower-cased) of the invoked leaf agents that are not coordinators."""
    skip = set(agent_names(ignore)) | set(agent_names(trace.coordinators))
    paths = [agent_names(p) for p in trace.agent_paths] or [
        [a] for a in agent_names(trace.agent_path)
    ]
    return [p for p in paths if p and p[-1] not in skip]


def _covered(path: list[str], expected: set[str]) -> bool:
    return any(level in expected for level in path)


def _untraced(key: str, trace: Trace) -> dict | None:
    """Null with the reason when the trace cannot say which agents ran."""
    reason = trace.agents_unknown
    return None if reason is None else {"key": key, "score": None, "comment": reason}


@register(
    "routing_accuracy",
    family="routing",
    reads="outputs.expected_agents; trace agents",
    references=("expected_agents",),
    description="share of expected agents that made at least one model call",
    metrics=[
        metric(
            "routing_accuracy",
            "routing accuracy",
            fmt="percent",
            pass_mark=">= 1",
            abbrev="routing",
            headline=True,
        )
    ],
    needs_answer=False,
)
def routing_accuracy() -> Any:
    """|expected ∩ invoked| / |expected|, 1.0 when nothing is expected (nothing to miss)."""

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        if (unknown := _untraced("routing_accuracy", trace)) is not None:
            return unknown
        return expected_share(
            "routing_accuracy",
            reference_outputs.get("expected_agents"),
            invoked_names(trace),
            seen=f"invoked {trace.agents_invoked}",
            nothing_expected="no agents expected",
        )

    return evaluate


def expected_share(
    key: str, expected: Any, found: Collection[str], *, seen: str, nothing_expected: str
) -> dict:
    """|expected ∩ found| / |expected| (names compared as :func:`agent_names` spells them),
    1.0 when nothing is expected; the comment says what was ``seen`` and what is missing."""
    wanted = list(dict.fromkeys(agent_names(expected)))
    if not wanted:
        return {"key": key, "score": 1.0, "comment": nothing_expected}
    missing = [name for name in wanted if name not in found]
    score = (len(wanted) - len(missing)) / len(wanted)
    comment = f"{seen}; missing {missing}" if missing else seen
    return {"key": key, "score": score, "comment": comment}


@register(
    "routing_precision",
    family="routing",
    reads="outputs.expected_agents; trace agents",
    references=("expected_agents",),
    description="share of invoked specialists that were expected (the supervisor is not counted)",
    metrics=[metric("routing_precision", "routing precision", fmt="percent")],
    example="- {name: routing_precision, ignore_agents: [supervisor]}",
    needs_answer=False,
)
def routing_precision(*, ignore_agents: list[str] | None = None) -> Any:
    """|expected ∩ invoked| / |invoked specialists|; 1.0 when no specialist was invoked and
    none was expected, 0.0 when none was invoked but some were expected."""
    ignore = ["supervisor"] if ignore_agents is None else ignore_agents

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        if (unknown := _untraced("routing_precision", trace)) is not None:
            return unknown
        expected = set(agent_names(reference_outputs.get("expected_agents")))
        paths = specialists(trace, ignore)
        if not paths:
            score = 1.0 if not expected else 0.0
            return {"key": "routing_precision", "score": score, "comment": "no specialist invoked"}
        unexpected = [p[-1] for p in paths if not _covered(p, expected)]
        score = (len(paths) - len(unexpected)) / len(paths)
        invoked = [p[-1] for p in paths]
        comment = f"unexpected {unexpected}" if unexpected else f"invoked {invoked}"
        return {"key": "routing_precision", "score": score, "comment": comment}

    return evaluate


@register(
    "forbidden_agents",
    family="routing",
    reads="outputs.forbidden_agents; trace agents",
    references=("forbidden_agents",),
    description="fails when an agent listed in forbidden_agents was invoked (negative cases)",
    metrics=[metric("forbidden_agents", "no forbidden agent", fmt="percent", binary=True)],
    needs_answer=False,
)
def forbidden_agents() -> Any:
    """True when no forbidden agent made a model call; True when nothing is forbidden."""

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        if (unknown := _untraced("forbidden_agents", trace)) is not None:
            return unknown
        forbidden = agent_names(reference_outputs.get("forbidden_agents"))
        invoked = invoked_names(trace)
        hit = [a for a in forbidden if a in invoked]
        if not forbidden:
            return {"key": "forbidden_agents", "score": True, "comment": "nothing forbidden"}
        comment = f"invoked forbidden {hit}" if hit else f"none of {forbidden} invoked"
        return {"key": "forbidden_agents", "score": not hit, "comment": comment}

    return evaluate


@register(
    "routing_exact",
    family="routing",
    reads="outputs.expected_agents; trace agents",
    references=("expected_agents",),
    description="true when the invoked specialists are exactly the expected agents (set equality)",
    metrics=[metric("routing_exact", "exact routing", fmt="percent", binary=True)],
    example="- {name: routing_exact, ignore_agents: [supervisor]}",
    needs_answer=False,
)
def routing_exact(*, ignore_agents: list[str] | None = None) -> Any:
    """Set equality of expected agents and invoked specialists (coordinators ignored)."""
    ignore = ["supervisor"] if ignore_agents is None else ignore_agents

    def evaluate(reference_outputs: dict, trace: Trace) -> dict:
        if (unknown := _untraced("routing_exact", trace)) is not None:
            return unknown
        expected = set(agent_names(reference_outputs.get("expected_agents")))
        paths = specialists(trace, ignore)
        names = set(invoked_names(trace))
        missing = sorted(expected - names)
        extra = sorted({p[-1] for p in paths if not _covered(p, expected)})
        parts = [f"missing {missing}"] if missing else []
        parts += [f"unexpected {extra}"] if extra else []
        comment = "; ".join(parts) or f"exactly {sorted(expected)}"
        return {"key": "routing_exact", "score": not missing and not extra, "comment": comment}

    return evaluate


def one_agent_only(rows: Iterable[tuple[dict[str, Any], Trace]]) -> str | None:
    """Why an experiment's routing is not measured, or None when it is: every result that
    ran to its end with its agents known shows the one same agent while rows expect others.
    One request answered alone says nothing; a whole experiment of one agent against
    references naming others says the target's agents were never told apart (unnamed
    agents, an undeclared state key), and each such row would score a confident 0. A
    request that errored says nothing either: it may have stopped at its first agent."""
    verdict = OneAgent()
    for reference, trace in rows:
        verdict.add(reference, trace)
    return verdict.reason()


class OneAgent:
    """:func:`one_agent_only`'s verdict, added to one row at a time: a run keeps one per
    target as its results are stored, so its end need not read them back."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.expected: set[str] = set()

    def add(self, reference: dict[str, Any] | None, trace: Trace) -> None:
        expected = None if reference is None else reference.get("expected_agents")
        if expected is not None:  # a row that names none adds nothing
            self.expected.update(agent_names(expected))
        if not trace.untraced and not trace.unattributed and trace.error is None:
            self.seen.update(invoked_names(trace))  # the agents are known (agents_unknown)

    def reason(self) -> str | None:
        others = sorted(self.expected - self.seen)
        if len(self.seen) != 1 or not others:
            return None
        (only,) = self.seen
        return (
            f"every result shows the one agent {only!r} while rows expect {others}; name the "
            "agents the target runs (create_agent(name=...)), or declare the state key that "
            "switches them (active_agent: {key: ...})"
        )


def expects_others(reference: dict[str, Any] | None, trace: Trace) -> bool:
    """Whether a row's references name an agent its trace does not show."""
    expected = set(agent_names((reference or {}).get("expected_agents")))
    return bool(expected - set(invoked_names(trace)))


NONE = "(none)"


def routing_rows(
    reference: dict[str, Any] | None, trace: Trace, turns: Sequence[Turn] | None = None
) -> list[tuple[dict[str, Any], Trace]]:
    """What the routing confusion counts of one result, as ``(reference_outputs, trace)``:
    a single-turn result itself; a conversation, each turn it sent against that turn's own
    references (``outputs.turns``) when some turn expects agents, else the whole conversation
    against its top-level ones, as its ``routing_accuracy`` is scored."""
    reference = reference or {}
    if turns is None:
        return [(reference, trace)]
    listed = reference.get("turns")
    given: list[Any] = listed if isinstance(listed, list) else []
    per_turn = [
        (refs, turn.trace)
        for turn, refs in zip(turns, given, strict=False)
        if turn.sent and isinstance(refs, dict)
    ]
    if any(refs.get("expected_agents") for refs, _ in per_turn):
        return per_turn
    return [({k: v for k, v in reference.items() if k != "turns"}, trace)]


def confusion_matrix(
    rows: Iterable[tuple[dict[str, Any], Trace]], *, ignore_agents: list[str] | None = None
) -> dict[str, Any] | None:
    """Expected agent x invoked agent counts over a target's results: the one matrix the
    ``routing_confusion`` evaluator, ``--json``, compare and the HTML report show.

    A row is ``(reference_outputs, trace)``, read once (a generator keeps one at a time).
    Names are lower-cased; ``ignore_agents`` (default ``[supervisor]``) and the trace's
    coordinators are not specialists. Per result: an expected agent that was invoked adds 1
    on the diagonal; one that was missed adds 1 to each invoked specialist that was not
    expected (where the request went instead), or to ``(none)`` if there is none; an
    unexpected specialist when nothing was missed adds 1 to the ``(none)`` row (invoked
    without being expected). A result whose agents are unknown adds nothing. None when no
    row expects agents.
    """
    ignore = ["supervisor"] if ignore_agents is None else ignore_agents
    counts: dict[str, dict[str, int]] = {}
    seen_expected = False

    def add(expected: str, invoked: str) -> None:
        row = counts.setdefault(expected, {})
        row[invoked] = row.get(invoked, 0) + 1

    for reference, trace in rows:
        if trace.agents_unknown is not None:  # no agents to count, not "(none)"
            continue
        expected = list(dict.fromkeys(agent_names((reference or {}).get("expected_agents"))))
        seen_expected = seen_expected or bool(expected)
        paths = specialists(trace, ignore)
        reached = set(invoked_names(trace))  # an expected team is met by any of its agents
        unexpected = list(dict.fromkeys(p[-1] for p in paths if not _covered(p, set(expected))))
        missed = [e for e in expected if e not in reached]
        for e in expected:
            if e in reached:
                add(e, e)
            for i in (unexpected or [NONE]) if e in missed else []:
                add(e, i)
        if not missed:
            for i in unexpected or ([] if expected else [NONE]):
                add(NONE, i)
    if not seen_expected:
        return None
    expected_labels = sorted(counts, key=lambda a: (a == NONE, a))
    invoked_labels = sorted({i for r in counts.values() for i in r}, key=lambda a: (a == NONE, a))
    return {
        "expected": expected_labels,
        "invoked": invoked_labels,
        "counts": [[counts[e].get(i, 0) for i in invoked_labels] for e in expected_labels],
    }


def confusion_ignore(evaluators: list[Any]) -> list[str] | None:
    """The ``ignore_agents`` of a spec's ``routing_confusion`` item (None: the default), so
    the matrix every report shows is the one the evaluator scored."""

    for item in evaluators:
        name, options = entry_parts(item)
        if (options.get("type") or name) == "routing_confusion":
            ignore = options.get("ignore_agents")
            return None if ignore is None else [str(a) for a in ignore]
    return None
