"""An experiment's figures by one rule per kind of metric: each score's mean over the
examples (each example's repetitions averaged first), the totals, error rate and latency
percentiles, pass^k and the flaky examples; what ``results.figures`` builds and every view
renders. An experiment's metrics are its evaluators' keys (see
:mod:`agenteval_cli.metrics.registry`), a stable interface for users' scripts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.core.records import Result
from agenteval_cli.metrics.catalog import BUILT_IN, Catalog
from agenteval_cli.metrics.exact_sum import ExactSum
from agenteval_cli.metrics.prices import call_gap
from agenteval_cli.metrics.repetitions import Flaky, Repeated, flaky_on_any, repeated
from agenteval_cli.metrics.stats import percentile, stdev


@dataclass
class Summary:
    """Aggregates of one experiment, built by streaming over its results. Sums are exact
    (:class:`ExactSum`), so no metric depends on the order the results came in."""

    count: int = 0
    errors: int = 0
    interrupts: int = 0  # results that stopped at interrupt() (status interrupted)
    sums: dict[str, ExactSum] = field(default_factory=dict)  # with the count of each key
    latencies: list[float] = field(default_factory=list)  # of the calls made, not cached
    cached: int = 0  # results served from the response cache: no latency of their own
    models: set[str] = field(default_factory=set)
    by_repetition: dict[tuple[str, int], ExactSum] = field(default_factory=dict)
    # key -> example -> the values of its repetitions: a score's figure is the mean of each
    # example's mean (kept only when examples can repeat; else each example has one value)
    by_example: dict[str, dict[str, ExactSum]] = field(default_factory=dict)
    # Per pass/fail key (``Catalog.is_binary``), per example (a conversation's, when rows are
    # conversations): whether each repetition passed.
    outcomes: dict[str, dict[str, list[bool]]] = field(default_factory=dict)
    # key -> a value of a single-turn result that is neither 0 nor 1 (no pass or fail)
    not_binary: dict[str, float] = field(default_factory=dict)
    # False when no example can repeat (one repetition): no outcome is kept per example.
    track_outcomes: bool = True
    # The experiment's metrics: its keys (its evaluators', in order; each is in metrics(),
    # None when no result gave it a value) and how each reads.
    catalog: Catalog = BUILT_IN
    has_latency: bool = True  # False for results read without their timing (a baseline)
    nulls: dict[str, int] = field(default_factory=dict)  # key -> results that scored it null
    # Models of calls whose usage is known but cost is not, by why (metrics.prices.price_gap):
    # ``unpriced`` (the run found no price for them), ``unstored`` (stored before prices
    # were kept with each call)
    price_gaps: dict[str, set[str]] = field(default_factory=dict)
    # Results that were conversations (rows with turns): their request figures are per
    # conversation, each the sum or the mean of its turns' (see MetricInfo.across_turns).
    conversations: int = 0
    # Model calls that finished yet reported no token usage, by why (the recorder's reason,
    # such as a stream without stream_usage=True; "" when it could not tell): the tokens
    # and cost that read n/a.
    without_usage: dict[str, int] = field(default_factory=dict)
    # The run's own figures (totals, error rate...) a source keeps instead of the results
    # they are over: a baseline file holds each example's means, not its results, so its
    # totals and rates are the ones it was written with.
    kept: dict[str, float | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._conversation_keys = frozenset(
            m.key for m in self.catalog if m.level == "conversation"
        )
        self._binary: dict[str, bool] = {}

    def add(self, result: Result) -> None:
        self.add_row(
            result.example_id,
            result.repetition,
            result.error,
            result.latency_s,
            [(score.key, score.score) for score in result.scores],
            [call.model for call in result.trace.model_calls],
            cached=result.cached,
            interrupted=result.interrupt is not None,
            price_gaps=[(call.model, call_gap(call)) for call in result.trace.model_calls],
            conversation=result.turns is not None,
            without_usage=[
                c.no_usage_reason or ""
                for c in result.trace.model_calls
                if reported_nothing(c.input_tokens, c.output_tokens, c.failed, c.cut_off)
            ],
        )

    def add_row(
        self,
        example_id: str,
        repetition: int,
        error: str | None,
        latency_s: float,
        scores: Sequence[tuple[str, Any]],
        models: Iterable[str],
        *,
        cached: bool = False,
        interrupted: bool = False,
        price_gaps: Iterable[tuple[str, str | None]] = (),
        conversation: bool = False,
        without_usage: Iterable[str] = (),
    ) -> None:
        """One result, as its parts: what the store's rows give without building a Result.
        A ``cached`` result's latency is the stored one of an earlier call, not a
        measurement: it is counted in ``cached`` and left out of the latency figures.

        The scores of a result that errored or was ``interrupted`` count like any other's:
        they are its trace's (the keys that need an answer are null for it, so they are
        over the answered results alone). A ``conversation`` (also known by a score only
        conversations have) is counted in ``conversations``."""
        self.count += 1
        conversation = conversation or any(key in self._conversation_keys for key, _ in scores)
        if conversation:
            self.conversations += 1
        if self.track_outcomes:
            answered = error is None and not interrupted
            self._add_outcomes(example_id, scores, answered=answered, conversation=conversation)
        if cached:
            self.cached += 1
        else:
            self.latencies.append(latency_s)
        self.models.update(models)
        for model, gap in price_gaps:
            if gap is not None:
                self.price_gaps.setdefault(gap, set()).add(model)
        for reason in without_usage:
            self.without_usage[reason] = self.without_usage.get(reason, 0) + 1
        if error is not None:
            self.errors += 1
        elif interrupted:
            self.interrupts += 1
        sums, by_repetition = self.sums, self.by_repetition
        for key, score in scores:
            if score is None:
                self.nulls[key] = self.nulls.get(key, 0) + 1
                continue
            value = float(score)
            total = sums.get(key)
            if total is None:
                total = sums[key] = ExactSum()
            total.add(value)
            if not self.track_outcomes:  # one repetition: no spread across repetitions
                continue
            of_repetition = by_repetition.get((key, repetition))
            if of_repetition is None:
                of_repetition = by_repetition[key, repetition] = ExactSum()
            of_repetition.add(value)
            of_example = self.by_example.setdefault(key, {}).get(example_id)
            if of_example is None:
                of_example = self.by_example[key][example_id] = ExactSum()
            of_example.add(value)

    def _is_binary(self, key: str) -> bool:
        found = self._binary.get(key)
        if found is None:
            found = self._binary[key] = self.catalog.is_binary(key)
        return found

    def _add_outcomes(
        self,
        example_id: str,
        scores: Sequence[tuple[str, Any]],
        *,
        answered: bool,
        conversation: bool,
    ) -> None:
        """Whether this repetition passed each pass/fail key it was scored on. One without an
        answer (it raised, or stopped at interrupt(): its keys that need the answer are null)
        fails every such key, whatever its trace scored, as it fails the example's checks; a
        null score of an answered one is no outcome. A conversation passes a request key
        when every turn did (its value is its turns' mean)."""
        for key, score in scores:
            if not self._is_binary(key):
                continue
            passed = False
            if answered:
                if score is None:
                    continue
                value = float(score)
                best = 1.0 if self.catalog.info(key).higher_is_better else 0.0
                if value not in (0.0, 1.0) and not (conversation and 0.0 <= value <= 1.0):
                    self.not_binary.setdefault(key, value)
                passed = value == best
            self.outcomes.setdefault(key, {}).setdefault(example_id, []).append(passed)

    @property
    def keys(self) -> tuple[str, ...]:
        return self.catalog.keys

    @property
    def counts(self) -> dict[str, int]:
        """key -> the results that gave it a value."""
        return {key: total.count for key, total in self.sums.items()}

    def per_example(self, key: str) -> dict[str, float]:
        """Each example's mean of ``key`` over its repetitions that scored it (kept when
        examples can repeat: ``track_outcomes``)."""
        found = self.by_example.get(key) or {}
        return {example: total.total() / total.count for example, total in found.items()}

    def mean(self, key: str, examples: Iterable[str] | None = None) -> float | None:
        """The figure of a score: the mean over the examples of each example's mean over
        its repetitions that scored it (docs/output.md), so a repetition left null or
        unanswered never weighs one example above another; over ``examples`` alone when
        given (compare's columns: the examples every side scored)."""
        if key not in self.by_example:
            total = self.sums.get(key)
            return None if total is None or examples is not None else total.mean()
        return example_mean(self.per_example(key), examples)

    def spread(self, key: str) -> float | None:
        """Sample standard deviation of the mean of ``key`` across repetitions (None for one)."""
        return stdev([t.total() / t.count for (k, _), t in self.by_repetition.items() if k == key])

    def repeated(self) -> dict[str, Repeated]:
        """Per pass/fail key, in the catalog's order: pass@k and pass^k for k = 1 to the
        repetitions, and the flaky examples; empty when no example was repeated. A key a
        single-turn result scored neither 0 nor 1 has no figures, and the reason."""
        if not any(len(o) > 1 for per in self.outcomes.values() for o in per.values()):
            return {}
        found = {}
        for key in self.catalog.ordered(self.outcomes):
            value = self.not_binary.get(key)
            if value is None:
                found[key] = repeated(key, self.outcomes[key])
                continue
            label = self.catalog.label(key)
            found[key] = Repeated(
                key,
                len(self.outcomes[key]),
                max(len(o) for o in self.outcomes[key].values()),
                reason=f"{label} scored {value:g}, not 0 or 1: no pass or fail to count",
            )
        return found

    def flaky(self) -> Flaky | None:
        """Examples whose repetitions disagree on some pass/fail key; None when no example
        was repeated."""
        if not self.repeated():
            return None
        readable = {k: v for k, v in self.outcomes.items() if k not in self.not_binary}
        return flaky_on_any(readable)

    def metrics(self) -> dict[str, float | None]:
        """The experiment's keys, then any other score's mean, then the run's own figures
        (error rate, latency over the results not served from the cache, totals), in
        :meth:`~agenteval_cli.metrics.catalog.Catalog.ordered` order."""
        values: dict[str, float | None] = {}
        run: dict[str, float | None] = {}
        run["error_rate"] = self.errors / self.count if self.count else None
        run["interrupt_rate"] = self.interrupts / self.count if self.count else None
        if self.has_latency:
            run["latency_p50_s"] = percentile(self.latencies, 0.50)
            run["latency_p95_s"] = percentile(self.latencies, 0.95)
        for declared in self.catalog.sums():
            key = declared.key
            unknown = declared.complete and any(self.nulls.get(k) for k in declared.of)
            if unknown or any(k in self.sums for k in declared.of):
                if unknown:
                    run[key] = None
                    continue
                together = ExactSum()
                for part in declared.of:
                    if part in self.sums:
                        together.merge(self.sums[part])
                run[key] = together.total()
        run.update(self.kept)
        for key in self.catalog.ordered({*self.keys, *self.sums, *run}):
            values[key] = run[key] if key in run else self.mean(key)
        return values


def example_mean(
    per_example: Mapping[str, float], examples: Iterable[str] | None = None
) -> float | None:
    """The mean of examples' means (of ``examples`` alone when given), summed exactly: the
    one rule a score's figure has, wherever a view shows one (the gate's before and after
    too). None over no example."""
    means = ExactSum()
    for example in per_example if examples is None else examples:
        means.add(per_example[example])
    return means.mean()


def reported_nothing(
    input_tokens: int | None, output_tokens: int | None, failed: bool, cut_off: bool
) -> bool:
    """Whether a model call finished without reporting its usage (one that failed made no
    tokens; one cut off is counted apart, as maybe billed)."""
    return not failed and not cut_off and (input_tokens is None or output_tokens is None)


def usage_note(summary: Summary) -> str | None:
    """Why a target's tokens and cost read n/a, for the line under the run table; None
    when every finished call reported its usage."""
    if not summary.without_usage:
        return None
    count = sum(summary.without_usage.values())
    reasons = [r for r in summary.without_usage if r]
    why = "; ".join(reasons) if reasons else "the model returned none"
    return f"{count} model call(s) reported no token usage, so tokens and cost read n/a: {why}"


def unanswered_note(summaries: Sequence[Summary]) -> str | None:
    """What the figures include when some result has no answer (it errored or stopped at
    interrupt()): the trace's figures (routing, handoffs, tokens, cost...) count every
    result, the answer's only the answered ones. None when every result answered."""
    errors = sum(s.errors for s in summaries)
    interrupts = sum(s.interrupts for s in summaries)
    if not errors and not interrupts:
        return None
    parts = [f"the {errors} errored"] if errors else []
    parts += [f"the {interrupts} stopped at interrupt()"] if interrupts else []
    every = "conversation" if all(s.conversations == s.count for s in summaries) else "request"
    return (
        f"trace figures (agents, handoffs, tokens, cost) count every {every}, "
        f"{' and '.join(parts)} too; figures that need an answer leave them out"
    )


def conversation_note(
    summaries: Sequence[Summary], catalog: Catalog, keys: Iterable[str]
) -> str | None:
    """What a request figure of ``keys`` (those some result has) means when results are
    conversations: its turns' sum (counts, spend) or mean (rates, outcomes), as each metric
    declares; None when no result is a conversation."""
    counted = [s.conversations for s in summaries]
    if not any(counted):
        return None
    valued = {k for s in summaries for k, n in s.counts.items() if n}
    shown = [
        m
        for m in (catalog.info(k) for k in keys if k in valued)
        if m.level == "request" and m.scope == "result" and m.shown and m.under is None
    ]
    summed = [m.label for m in shown if m.across_turns == "sum"]
    averaged = [m.label for m in shown if m.across_turns == "mean"]
    parts = [f"the sum of its turns' for {', '.join(summed)}"] if summed else []
    parts += (
        [
            f"the mean of its turns' for {', '.join(averaged)} (the whole conversation's score "
            "where only its top-level references give one)"
        ]
        if averaged
        else []
    )
    counts = " / ".join(str(n) for n in counted)
    text = f"conversations: {counts}" + (" (per target)" if len(counted) > 1 else "")
    if parts:
        text += f"; a request metric of a conversation is {', '.join(parts)}"
    return text
