"""Whether a target's faults failed any call: a fault whose names match nothing in the
graph fails nothing, and the recovery figures would be empty without saying why."""

from __future__ import annotations

from collections.abc import Iterable

from agenteval_cli.core.records import Result
from agenteval_cli.spec.model import Spec
from agenteval_cli.targets import Target


class FaultsSeen:
    """Counts, per target with faults, the requests run and those a fault failed a call of."""

    def __init__(self, targets: Iterable[Target]) -> None:
        self._ran: dict[str, int] = {t.name: 0 for t in targets if t.faults}
        self._hit: set[str] = set()

    def saw(self, target: str, result: Result) -> None:
        if target not in self._ran or result.cached:
            return
        self._ran[target] += 1
        trace = result.trace
        if any(c.injected for c in trace.tool_calls) or any(c.injected for c in trace.model_calls):
            self._hit.add(target)

    def notes(self, spec: Spec) -> list[str]:
        """One line per target whose faults failed no call of the requests this run made."""
        found = []
        for target, ran in self._ran.items():
            if ran and target not in self._hit:
                line = spec.line_of("targets", target, "faults")
                found.append(
                    f"{spec.source}:{line}: target {target!r}: its faults failed none of the "
                    f"{ran} request(s) run: no call matched them, or their calls:/rate: chose "
                    "none (check the tool, agent and model names against --json's tool_calls "
                    "and model_calls)"
                )
        return found
