"""The LangChain run trees a Ray worker records, sent back with their results.

A run that will be uploaded keeps each call's run tree (:mod:`agenteval_cli.langsmith.capture`);
in-process the tree goes straight to the store. A worker has no store: it records the tree
the same way, as the JSON the store would write (plain data that travels, whatever the
graph put in its runs), and the driver stores it with the call's result, so an upload
after a run on Ray sends the same runs as after a run in-process.
"""

from __future__ import annotations

import json
from typing import Any

from agenteval_cli.execution.runner import WorkItem
from agenteval_cli.store.results import dumps

Tree = list[dict[str, Any]]  # a call's runs, parents before children (capture.flat)
ItemKey = tuple[str, str, int]  # (target name, example id, repetition)


class RecordedTrees:
    """The latest tree of each work item a worker runs, until its result is sent."""

    def __init__(self) -> None:
        self.trees: dict[ItemKey, Tree] = {}

    def wrap(self, items: list[WorkItem]) -> list[WorkItem]:
        """``items`` whose targets record their run tree here, by target name (the
        driver knows the experiments)."""
        from agenteval_cli.langsmith.capture import wrap_items

        names = {item.target.name: item.target.name for item in items}
        return list(wrap_items(items, names, self._keep))

    def take(self, target: str, example_id: str, repetition: int) -> Tree | None:
        """The tree the item's call recorded (None when no call ran: a cached answer)."""
        return self.trees.pop((target, example_id, repetition), None)

    def _keep(self, target: str, example_id: str, repetition: int, runs: Tree) -> None:
        # a conversation's trees are sent again after each turn: the last one holds them all
        self.trees[(target, example_id, repetition)] = json.loads(dumps(runs))
