"""One warning per target whose results came back untraced (no LangChain run was seen, so
its agents, handoffs and tokens are unknown), and one per target whose agents could not be
told apart (it switches agents in a way nothing names: ``Trace.unattributed``, which says what
to declare). Evaluators leave such figures out instead of scoring a silent 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agenteval_cli.core.records import Result

ResultHook = Callable[[str, "Result"], None]

FIX = (
    "run the graph in the calling thread or with asyncio.to_thread (threads and thread "
    "pools started during the call are followed too; a thread started earlier and fed through "
    "a queue, a process pool or a remote server is not), or pass it the config the target "
    "receives, if it takes one"
)


class UntracedResults:
    """Counts untraced and unattributed results per target while a run goes on, then words
    the warnings."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.reasons: dict[str, str] = {}  # the first reason seen per target
        self.unattributed: dict[str, int] = {}
        self.declare: dict[str, str] = {}  # the first unattributed reason per target

    def counting(self, hook: ResultHook | None = None) -> ResultHook:
        """A result hook that counts, then hands the result on to ``hook``."""

        def on_result(target: str, result: Result) -> None:
            reason = result.trace.untraced
            if reason is not None and result.error is None:
                self.counts[target] = self.counts.get(target, 0) + 1
                self.reasons.setdefault(target, reason)
            blind = result.trace.unattributed
            if blind is not None and reason is None:
                self.unattributed[target] = self.unattributed.get(target, 0) + 1
                self.declare.setdefault(target, blind)
            if hook is not None:
                hook(target, result)

        return on_result

    def warnings(self) -> list[str]:
        """One line per target with untraced results, then one per target whose agents were
        not told apart, each in the order they were first seen."""
        untraced = [
            f"target {target!r}: {count} result(s) untraced, their agents, handoffs and tokens "
            f"unknown ({self.reasons[target]}); fix: {FIX}"
            for target, count in self.counts.items()
        ]
        return untraced + [
            unattributed_warning(target, count, self.declare[target])
            for target, count in self.unattributed.items()
        ]


def unattributed_warning(target: str, count: int, reason: str) -> str:
    """The run's one line for a target whose agents were not told apart in ``count``
    results; ``reason`` says what to declare."""
    return (
        f"target {target!r}: {count} result(s) whose agents are not told apart, their "
        f"routing and handoff figures null until declared: {reason}"
    )
