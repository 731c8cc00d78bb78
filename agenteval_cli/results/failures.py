"""What went wrong in stored experiments: errored calls grouped by exception, and the
evaluators that failed, read with a few grouped queries (no result is loaded whole)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agenteval_cli.core.records import INTERRUPTED
from agenteval_cli.evaluators.judge import NUMBER_FOR_BOOLEAN
from agenteval_cli.evaluators.scoring import FAILED_LIKE
from agenteval_cli.store import diagnostics
from agenteval_cli.store.db import Store


@dataclass
class ErrorReason:
    kind: str  # the exception's name, or the evaluator key
    count: int
    first: str  # the first full message of this kind, in the order results were stored
    same: bool  # every message of this kind is ``first``

    @property
    def text(self) -> str:
        """How it is listed: the message, or its kind and the first of its messages."""
        return self.first if self.same else f"{self.kind}, first: {self.first}"


SHOWN_REASONS = 3  # the kinds listed per target; the others are counted


@dataclass
class TargetErrors:
    target: str
    calls: int
    errored: int
    reasons: list[ErrorReason]
    # evaluator key -> (results it scored, results it failed on, first failure's comment)
    evaluators: dict[str, tuple[int, int, str]]
    interrupted: int = 0  # calls whose graph stopped at interrupt(): no error, no answer
    # true/false judge key -> (results it scored, replies that were numbers)
    numbers_for_booleans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # dataset-level evaluator key -> its failure (called once, so it failed everywhere)
    summaries: dict[str, str] = field(default_factory=dict)
    conversations: int = 0  # results that are conversations (a call per turn)

    @property
    def unit(self) -> str:
        return unit_of(self.calls, self.conversations)

    @property
    def waiting_unit(self) -> str:
        """What stopped at interrupt(), as the interrupt lines count it."""
        return unit_of(self.calls, self.conversations, "request(s)")

    @property
    def rate(self) -> float:
        return self.errored / self.calls if self.calls else 0.0

    def evaluators_failing_everywhere(self) -> list[str]:
        """Per-result evaluator keys that failed on every result they scored, then the
        dataset-level ones that failed (their one call)."""
        every = [key for key, (n, failed, _) in self.evaluators.items() if n and failed == n]
        return every + [key for key in self.summaries if key not in every]

    def over(self, max_error_rate: float) -> bool:
        """Whether the calls errored more often than ``max_error_rate`` allows."""
        return self.errored > max_error_rate * self.calls

    @property
    def interrupt_rate(self) -> float:
        return self.interrupted / self.calls if self.calls else 0.0

    def over_interrupts(self, max_interrupt_rate: float) -> bool:
        """Whether more calls stopped at interrupt() than ``max_interrupt_rate`` allows."""
        return self.interrupted > max_interrupt_rate * self.calls


def unit_of(calls: int, conversations: int, single: str = "call(s)") -> str:
    """What was run, as the error lines count it: calls (``single``), or conversations (a
    call a turn)."""
    return "conversation(s)" if conversations == calls > 0 else single


def error_kind(message: str) -> str:
    """What errors are grouped by: the exception's name ("KeyError: ..." -> KeyError), or
    the whole message when it names none."""
    head = message.split(":", 1)[0]
    return head if head.isidentifier() else message


def group_errors(messages: Iterable[tuple[str, int, int]]) -> list[ErrorReason]:
    """Distinct error messages, each ``(message, count, position of its first
    appearance)``, grouped by :func:`error_kind`: the most common kind first (ties: the
    one seen first), each with its count and its first message."""
    by_kind: dict[str, list[tuple[int, int, str]]] = {}
    for message, count, first in messages:
        by_kind.setdefault(error_kind(message), []).append((first, count, message))
    ranked = []
    for kind, found in by_kind.items():
        found.sort()  # by first appearance
        count = sum(c for _, c, _ in found)
        reason = ErrorReason(kind, count, found[0][2], len(found) == 1)
        ranked.append((-count, found[0][0], reason))
    return [reason for *_, reason in sorted(ranked, key=lambda r: r[:2])]


def error_reasons(errors: Iterable[str | None]) -> list[ErrorReason]:
    """:func:`group_errors` of the errors of results in order (None: no error)."""
    seen: dict[str, list[int]] = {}  # message -> [count, first position]
    for position, message in enumerate(errors):
        if message is None:
            continue
        entry = seen.setdefault(message, [0, position])
        entry[0] += 1
    return group_errors((m, count, first) for m, (count, first) in seen.items())


def collect_errors(store: Store, experiment_id: str, target: str) -> TargetErrors:
    """The errored calls of an experiment grouped by exception, and its evaluators' failures,
    read with a few grouped queries (no result is loaded whole)."""
    calls, errored, conversations = diagnostics.call_counts(store, experiment_id)
    reasons = group_errors(diagnostics.error_messages(store, experiment_id))
    evaluators = diagnostics.evaluator_failures(store, experiment_id, FAILED_LIKE)
    interrupted = store.status_counts(experiment_id).get(INTERRUPTED, 0)
    # the true/false judges that got numbers back: the spec lacks ``continuous: true``
    numbers = diagnostics.null_scores_saying(store, experiment_id, NUMBER_FOR_BOOLEAN)
    summaries = _failed_summaries(store, experiment_id)
    return TargetErrors(
        target, calls, errored, reasons, evaluators, interrupted, numbers, summaries, conversations
    )


def _failed_summaries(store: Store, experiment_id: str) -> dict[str, str]:
    """The dataset-level evaluators' keys whose one call failed (it raised, timed out, or
    returned no finite number), with the failure."""
    from agenteval_cli.evaluators.summaries import SUMMARY_FAILED
    from agenteval_cli.store.summaries import summary_scores

    return {
        s.key: s.comment
        for s in summary_scores(store, experiment_id)
        if s.score is None
        and s.comment is not None
        and s.comment.startswith((SUMMARY_FAILED, "evaluator "))
        and " failed: " in s.comment
    }


def run_errors(store: Store, experiment_ids: list[str]) -> list[TargetErrors]:
    """:func:`collect_errors` of each experiment, in the order given."""
    return [collect_errors(store, i, store.experiment(i).target) for i in experiment_ids]
