"""What a run's results show, gathered as each is stored: the names their traces show
(:class:`~agenteval_cli.execution.names.NamesSeen`) and whether they show one agent only
(:class:`~agenteval_cli.evaluators.routing.OneAgent`), per target. The run's end reads them
here instead of reading every result back from the store; a resumed run, whose earlier
results are in the store only, reads them from there."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agenteval_cli.core.records import Result
from agenteval_cli.evaluators.routing import OneAgent
from agenteval_cli.execution.names import NamesSeen
from agenteval_cli.store.db import ExperimentRecord, Store
from agenteval_cli.targets.names import SystemNames


class Observed:
    """Per target: the names its results' traces show, and its one-agent verdict (over the
    single-request results, as :func:`~agenteval_cli.evaluators.routing.one_agent_only`)."""

    def __init__(self, targets: Iterable[str]) -> None:
        self._names = {target: NamesSeen() for target in targets}
        self._agents = {target: OneAgent() for target in self._names}

    def saw(self, target: str, reference: dict[str, Any] | None, result: Result) -> None:
        """A result as it is stored (its trace as written)."""
        self._names[target].add_result(result)
        if result.turns is None:
            self._agents[target].add(reference, result.trace)

    def names(self, target: str) -> SystemNames:
        return self._names[target].names()

    def one_agent(self, target: str) -> str | None:
        return self._agents[target].reason()

    @classmethod
    def stored(cls, experiments: Mapping[str, ExperimentRecord], store: Store) -> Observed:
        """What the experiments' stored results show (a resumed run's, earlier ones too)."""
        observed = cls(experiments)
        for target, record in experiments.items():
            for each in store.results(record.id):
                observed.saw(target, each.reference_outputs, each.result)
        return observed
