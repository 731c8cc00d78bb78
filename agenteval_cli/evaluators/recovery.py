"""Recovery: how a request fared when the spec's ``faults:`` failed some of its calls.

Scored only for requests with an injected call in their trace (the rest are null, with the
reason): ``recovered`` (it still met its outcome check), ``graceful`` (it ended with an
answer, or a question to the user, rather than an exception, the recursion limit or a
timeout), ``fault_retries`` (the failed calls made again), ``fault_handoffs`` (handoffs
made after the first fault) and ``tokens_after_fault`` (what the model calls after it spent).
``fault_cost``, dataset-level, pairs each request a fault hit with the same example's run
by the target's fault-free twin, when the spec has one: the extra tokens and dollars.
"""

from __future__ import annotations

import json
from typing import Any

from agenteval_cli.core.records import ERROR, INTERRUPTED, ModelCall, Run, ToolCall, Trace
from agenteval_cli.evaluators.coverage import response_text
from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric

KEYS = ("recovered", "graceful", "fault_retries", "fault_handoffs", "tokens_after_fault")
NO_FAULT = "no fault injected into this request"


def injected_calls(trace: Trace) -> list[ToolCall | ModelCall]:
    """The calls a fault failed, in the order they started."""
    calls: list[ToolCall | ModelCall] = [c for c in trace.tool_calls if c.injected]
    calls += [c for c in trace.model_calls if c.injected]
    return sorted(calls, key=lambda c: c.started_at or 0.0)


def retries(trace: Trace) -> int:
    """Failed calls made again. A tool call's retry is a later call of the same tool by the
    same agent with the same arguments, after the first of them failed by a fault; a model
    call's is the same agent calling a model again as the next thing it does after a failed
    call, before any tool of its ran (the request sent again: retry middleware, a fallback)."""
    count = 0
    groups: dict[str, list[ToolCall]] = {}
    for call in trace.tool_calls:
        same = json.dumps([call.name, call.path, call.args], sort_keys=True, default=str)
        groups.setdefault(same, []).append(call)
    for calls in groups.values():
        failed = [c.started_at for c in calls if c.injected and c.started_at is not None]
        if failed:
            count += sum(1 for c in calls if _after(c.started_at, min(failed)))
    for model in (c for c in trace.model_calls if c.injected):
        count += _model_retry(trace, model)
    return count


def _model_retry(trace: Trace, failed: ModelCall) -> int:
    """1 when the next thing the failed call's agent did was another model call."""
    events: list[tuple[float, str]] = [
        (c.started_at or 0.0, "model")
        for c in trace.model_calls
        if c is not failed and c.path == failed.path and _after(c.started_at, failed.started_at)
    ]
    events += [
        (c.started_at or 0.0, "tool")
        for c in trace.tool_calls
        if c.path == failed.path and _after(c.started_at, failed.started_at)
    ]
    return int(bool(events) and min(events)[1] == "model")


def handoffs_after(trace: Trace, since: float | None) -> int:
    """Handoff tool calls that started after ``since`` (a graph's own return edges, which
    no tool runs, carry no time and are not counted)."""
    return sum(1 for c in trace.tool_calls if c.is_routing and _after(c.started_at, since))


def tokens_after(trace: Trace, since: float | None) -> int | None:
    """Tokens of the model calls that started after ``since``: what the request spent once
    the fault hit (None when one of them reported no usage)."""
    total: int | None = 0
    for call in trace.model_calls:
        if call.failed or not _after(call.started_at, since):
            continue
        if total is None or call.input_tokens is None or call.output_tokens is None:
            return None
        total += call.input_tokens + call.output_tokens
    return total


def _after(when: float | None, since: float | None) -> bool:
    return when is not None and since is not None and when > since


def graceful(run: Run) -> tuple[bool, str]:
    """Whether the request ended with an answer (or a question to the user), and why not."""
    if run.status == ERROR:
        error = run.error or ""
        if "GraphRecursionError" in error or "Recursion limit" in error:
            return False, f"it looped into the recursion limit ({error})"
        if error.startswith("TimeoutError: no answer within"):
            return False, f"it timed out ({error})"
        return False, f"it raised ({error})"
    if run.status == INTERRUPTED:
        return True, "it stopped to ask the user (interrupt)"
    if not run.final_response.strip():
        return False, "it ended with an empty answer"
    return True, "it answered"


def recovered(run: Run, reference: dict[str, Any], pass_mark: float) -> tuple[bool | None, str]:
    """Whether the request met its outcome check: the row's must_mention coverage at
    ``pass_mark`` or above; None when the row has nothing to check against."""
    terms = reference.get("must_mention") or []
    if isinstance(terms, str):
        terms = [terms]
    if not terms:
        return None, "the row has no must_mention to check the outcome against"
    if run.status != "ok":
        return False, "no answer to check"
    text = response_text(run.outputs)
    missing = [t for t in terms if str(t).lower() not in text]
    coverage = (len(terms) - len(missing)) / len(terms)
    met = coverage >= pass_mark
    shown = f"coverage {coverage:.0%} (pass mark {pass_mark:.0%})"
    return met, f"{shown}, missing {missing}" if missing else shown


@register(
    "recovery",
    family="recovery",
    reads="trace's injected calls (faults:), status, outputs.must_mention",
    references=("must_mention",),
    description="requests with an injected fault: recovered (outcome met), graceful "
    "(answered rather than raised), the failed calls retried, the handoffs and tokens after "
    "the fault",
    # no pass mark: only a faulted run scores these, so they are no check of every example
    # (an errored one's JUnit case included); a spec gates on them with thresholds:
    metrics=[
        metric(
            "recovered",
            "recovered under faults",
            fmt="percent",
            short="recovered",
            binary=True,
        ),
        metric(
            "graceful",
            "graceful under faults",
            fmt="percent",
            short="graceful",
            binary=True,
        ),
        metric(
            "fault_retries", "retries after a fault", lower=True, quantity=True, short="retries"
        ),
        metric(
            "fault_handoffs",
            "handoffs after a fault",
            lower=True,
            quantity=True,
            short="fault handoffs",
        ),
        metric(
            "tokens_after_fault",
            "tokens after a fault",
            lower=True,
            quantity=True,
            short="tokens after fault",
        ),
    ],
    headline="recovered",
    example="- {name: recovery, pass_mark: 0.5}",
    needs_answer=False,
)
def recovery(*, pass_mark: float = 1.0) -> Any:
    """``pass_mark``: the share of the row's must_mention terms a recovered answer mentions."""
    if not 0 < pass_mark <= 1:
        raise ValueError(f"pass_mark must be above 0 and at most 1, got {pass_mark!r}")

    def evaluate(run: Run, trace: Trace, reference_outputs: dict) -> list[dict]:
        failed = injected_calls(trace)
        if not failed:
            return [{"key": key, "score": None, "comment": NO_FAULT} for key in KEYS]
        what = ", ".join(
            f"{c.name if isinstance(c, ToolCall) else c.model} ({c.injected})" for c in failed
        )
        first = what.split(", ")[0]
        spent = tokens_after(trace, failed[0].started_at)
        met, why = recovered(run, reference_outputs or {}, pass_mark)
        ended, how = graceful(run)
        return [
            {"key": "recovered", "score": met, "comment": why},
            {"key": "graceful", "score": ended, "comment": how},
            {"key": "fault_retries", "score": float(retries(trace)), "comment": f"failed: {what}"},
            {
                "key": "fault_handoffs",
                "score": float(handoffs_after(trace, failed[0].started_at)),
                "comment": f"after {first}",
            },
            {
                "key": "tokens_after_fault",
                "score": None if spent is None else float(spent),
                "comment": f"after {first}"
                if spent is not None
                else "a model call after the fault reported no usage",
            },
        ]

    return evaluate


NO_TWIN = (
    "no fault-free twin in this run: add the same target without faults: (same target, "
    "input, output and config) to pair each request with"
)


def spent_tokens(trace: Trace) -> int | None:
    """Input plus output tokens of every model call the request made (failed attempts'
    included: spent too); None when one reported no usage."""
    total = 0
    for call in trace.model_calls:
        if call.failed:
            continue
        if call.input_tokens is None or call.output_tokens is None:
            return None
        total += call.input_tokens + call.output_tokens
    return total


def paired_costs(runs: list[Run], fault_free: list[Run]) -> tuple[list[float], list[float], int]:
    """For each request a fault hit, its tokens and dollars minus those of the same example
    and repetition in the fault-free run: (token differences, dollar differences, requests
    hit that had no fault-free result to pair with). A difference is left out where either
    side's is unknown (dollars: ``cost_usd`` needs ``token_cost``)."""
    twins = {(r.example_id, r.repetition): r for r in fault_free}
    tokens: list[float] = []
    dollars: list[float] = []
    unpaired = 0
    for run in runs:
        if not injected_calls(run.trace):
            continue
        twin = twins.get((run.example_id, run.repetition))
        if twin is None:
            unpaired += 1
            continue
        mine, theirs = spent_tokens(run.trace), spent_tokens(twin.trace)
        if mine is not None and theirs is not None:
            tokens.append(float(mine - theirs))
        cost, twin_cost = run.scores.get("cost_usd"), twin.scores.get("cost_usd")
        if isinstance(cost, int | float) and isinstance(twin_cost, int | float):
            dollars.append(float(cost) - float(twin_cost))
    return tokens, dollars, unpaired


@register(
    "fault_cost",
    family="recovery",
    reads="trace tokens and token_cost's cost_usd, of a faulted target and its fault-free twin",
    description="dataset-level: mean extra tokens and dollars of a request a fault hit, against "
    "the same example's run by the spec's fault-free twin of the target (paired)",
    summary=True,
    metrics=[
        metric("fault_cost_tokens", "extra tokens under faults", lower=True, quantity=True),
        metric("fault_cost_usd", "extra cost under faults", lower=True, fmt="money", quantity=True),
    ],
    example="- fault_cost          # with token_cost, for the dollars",
    needs_answer=False,
)
def fault_cost() -> Any:
    """The paired difference, averaged over the requests a fault hit that have a twin."""

    def evaluate(runs: list[Run], fault_free: list[Run] | None = None) -> list[dict]:
        if not any(injected_calls(run.trace) for run in runs):
            return [
                {"key": key, "score": None, "comment": "no fault injected into any request"}
                for key in ("fault_cost_tokens", "fault_cost_usd")
            ]
        if fault_free is None:
            return [
                {"key": key, "score": None, "comment": NO_TWIN}
                for key in ("fault_cost_tokens", "fault_cost_usd")
            ]
        tokens, dollars, unpaired = paired_costs(runs, fault_free)
        missing = f"; {unpaired} without a fault-free result" if unpaired else ""
        return [
            _mean("fault_cost_tokens", tokens, missing, "a request's tokens were unknown"),
            _mean("fault_cost_usd", dollars, missing, "no cost_usd (add token_cost)"),
        ]

    return evaluate


def _mean(key: str, values: list[float], missing: str, why_none: str) -> dict[str, Any]:
    if not values:
        return {"key": key, "score": None, "comment": f"no pair to compare: {why_none}{missing}"}
    mean = sum(values) / len(values)
    return {"key": key, "score": mean, "comment": f"over {len(values)} paired request(s){missing}"}
