"""Where failures start: each target's blamed requests counted by agent and kind.

The blame is read once per result when it is stored (:mod:`agenteval_cli.evaluators.blame`);
this module only counts and renders it: the table under the run's table, its Markdown and
HTML forms, and one line per result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from agenteval_cli.evaluators.blame import KINDS
from agenteval_cli.report.table import plain

if TYPE_CHECKING:
    from agenteval_cli.store.db import Store

TITLE = "where failures start"
NO_AGENT = "(unknown)"  # a failed request whose agents the trace cannot tell apart


def counts(blames: Iterable[dict[str, Any] | None]) -> Counter[tuple[str, str]]:
    """``(agent, kind) -> requests`` over the blamed results (None: did not fail)."""
    found: Counter[tuple[str, str]] = Counter()
    for blame in blames:
        if blame:
            found[(str(blame.get("agent") or NO_AGENT), str(blame.get("kind") or ""))] += 1
    return found


def stored_counts(store: Store, experiment_ids: Sequence[str]) -> list[tuple[str, Counter]]:
    """Each stored experiment's target and its counts."""
    return [(store.experiment(i).target, counts(store.blames(i))) for i in experiment_ids]


def kinds_of(found: Counter[tuple[str, str]]) -> list[str]:
    """The kinds present, in :data:`KINDS` order (unknown ones after)."""
    present = {kind for _, kind in found}
    order = [*KINDS, "unknown"]
    return sorted(present, key=lambda k: (order.index(k) if k in order else len(order), k))


def agents_of(found: Counter[tuple[str, str]]) -> list[str]:
    """The agents blamed, most requests first, then by name."""
    per: Counter[str] = Counter()
    for (agent, _), n in found.items():
        per[agent] += n
    return sorted(per, key=lambda a: (-per[a], a))


def heading(target: str) -> str:
    """The line above a target's table."""
    return f"{TITLE} · {target}: each failed request's first wrong step"


def blame_table(found: Counter[tuple[str, str]]) -> Table:
    """Agent (rows) × kind (columns), the requests blamed on each."""
    table = Table(header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("agent", style="cyan")
    kinds = kinds_of(found)
    for kind in kinds:
        table.add_column(plain(kind), justify="right")
    table.add_column("all", justify="right")
    for agent in agents_of(found):
        cells = [found.get((agent, k), 0) for k in kinds]
        row = [Text(str(n)) if n else Text("·", style="dim") for n in cells]
        table.add_row(plain(agent), *row, Text(str(sum(cells)), style="bold"))
    return table


def rows(found: Counter[tuple[str, str]]) -> tuple[list[str], list[list[Any]]]:
    """``(header, rows)`` of the table as plain values, for Markdown and HTML."""
    kinds = kinds_of(found)
    body = []
    for agent in agents_of(found):
        cells = [found.get((agent, k), 0) for k in kinds]
        body.append([agent, *cells, sum(cells)])
    return ["agent", *kinds, "all"], body


def line(blame: dict[str, Any] | None) -> str | None:
    """One result's blame as a line: ``kind at step N (agent): why``; None when it did not
    fail."""
    if not blame:
        return None
    where = "no agent" if blame.get("step") is None else f"step {blame['step']}"
    agent = blame.get("agent") or NO_AGENT
    return f"{blame.get('kind')} at {where} ({agent}): {blame.get('why')}"
