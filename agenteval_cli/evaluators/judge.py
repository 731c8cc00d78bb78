"""LLM-as-judge through openevals: ``llm_judge`` (any prompt) and ``trajectory_judge``.

The verdict and its reasoning are openevals'; this module adds what a batch run needs:
prompts from files or the bundle, a model by ``provider:name``, a reply that cannot be parsed
turned into score None with the reason (never a silent 0), credentials checked when the spec
loads (a judge without them is skipped with one warning), and the judge's own spend measured.

A call that fails is the evaluator's failure (``evaluator 'name' failed: judge call failed:
...``), so a judge failing on every result fails the run like any evaluator. The judge's first
call goes alone: when the provider refuses its key, that one request is the only one made, and
every result says which key was refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from agenteval_cli.core.records import Trace
from agenteval_cli.evaluators.judge_model import key_source, make_chat_model, measure
from agenteval_cli.evaluators.prompts import PromptError, Template, load_prompt, template_style
from agenteval_cli.evaluators.registry import register
from agenteval_cli.evaluators.trajectory import actual_messages, expand_expected_tools

if TYPE_CHECKING:
    from openevals.types import ChatCompletionMessage

PARSE_ERRORS = (ValueError, KeyError, TypeError, IndexError)


def model_kwargs_of(model_kwargs: Mapping[str, Any] | None, base_url: str | None) -> dict[str, Any]:
    """The chat model's keyword arguments, with ``base_url`` among them when given."""
    kwargs = dict(model_kwargs or {})
    if base_url:
        kwargs["base_url"] = base_url
    return kwargs


def _check_options(continuous: bool, choices: list[float] | None) -> None:
    if choices is not None and (
        not isinstance(choices, list)
        or not all(isinstance(c, int | float) and not isinstance(c, bool) for c in choices)
    ):
        raise ValueError(f"choices must be a list of numbers, got {choices!r}")


def trace_view(trace: Trace | None) -> dict[str, Any]:
    """What a prompt may show of the trace: the route and the tool calls (with the status of
    those that failed or never ran, so a judge does not take them for work done)."""
    if trace is None:
        return {}
    return {
        "agent_path": trace.agent_path,
        "handoffs": [h.as_dict() for h in trace.handoffs],
        "tool_calls": [
            {
                "agent": t.agent,
                "name": t.name,
                "args": t.args,
                **({} if t.succeeded else {"status": t.status}),
            }
            for t in trace.tool_calls
        ],
    }


# The statuses of a provider refusing the key: no later call can fare better.
REFUSED = {
    401: "was refused; set a valid key",
    403: "has no permission for this model; use a key allowed to call it",
}
# How a number from a true/false judge is explained, in the result's comment and the run's line.
NUMBER_FOR_BOOLEAN = "a number: set continuous: true to score numbers"


def refused_status(exc: BaseException) -> int | None:
    """401 or 403 when ``exc`` (or what it was raised from) is the provider refusing the key."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        status = getattr(seen, "status_code", None)
        if status in REFUSED:
            return int(status)
        seen = seen.__cause__ or seen.__context__
    return None


class FirstCalls(Protocol):
    """The judges' first calls of a run made by several processes (a Ray run's workers), in
    one place: :meth:`first` says whether the caller makes the judge's first call (``"go"``),
    or how it went (``"answered"``, or ``"refused"`` with the reason), waiting while another
    process makes it; :meth:`settle` says how the caller's went (None: it did not end, so
    another may make it)."""

    async def first(self, name: str) -> tuple[str, str | None]: ...

    async def settle(self, name: str, outcome: str | None, reason: str | None) -> None: ...


_shared: list[FirstCalls] = []  # set in each process of a run that has several


def share_first_calls(calls: FirstCalls | None) -> None:
    """Every judge of this process takes its first call from ``calls`` (None: alone)."""
    _shared[:] = [] if calls is None else [calls]


class JudgeCalls:
    """One judge's calls across the run: the first goes alone, so a refused key is found with
    one request; after a refusal no call is made, and each result gets the same reason. In a
    run of several processes the first call is the run's, not each process's
    (:func:`share_first_calls`): a refused key costs one request, however many workers."""

    def __init__(self, name: str, key: str) -> None:
        self.name = name
        self.key = key  # where the key comes from, e.g. "the key in OPENAI_API_KEY"
        self.refused: str | None = None
        self.answered = False  # a call came back without a refusal: the rest run freely
        self._first: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._first is None or self._first[0] is not loop:
            self._first = (loop, asyncio.Lock())
        return self._first[1]

    async def call(self, judge: Callable[..., Awaitable[Any]], **kwargs: Any) -> Any:
        if not self.answered and self.refused is None:
            async with self._lock():
                if not self.answered and self.refused is None:
                    if not _shared:
                        return await self._watched(judge, kwargs)
                    verdict, reason = await _shared[0].first(self.name)
                    if verdict == "go":
                        return await self._settled(_shared[0], judge, kwargs)
                    self.refused = reason if verdict == "refused" else None
                    self.answered = verdict == "answered"
        if self.refused is not None:
            raise KeyRefused(self.refused)
        return await judge(**kwargs)

    async def _settled(
        self, shared: FirstCalls, judge: Callable[..., Awaitable[Any]], kwargs: dict
    ) -> Any:
        """The run's first call of this judge, made here; how it went, told to the others."""
        try:
            return await self._watched(judge, kwargs)
        finally:
            outcome = "refused" if self.refused else "answered" if self.answered else None
            await asyncio.shield(shared.settle(self.name, outcome, self.refused))

    async def _watched(self, judge: Callable[..., Awaitable[Any]], kwargs: dict) -> Any:
        try:
            raw = await judge(**kwargs)
        except Exception as exc:
            status = refused_status(exc)
            if status is None:
                self.answered = True
                raise
            self.refused = (
                f"{status} {type(exc).__name__}: {self.key} {REFUSED[status]} (judge "
                f"{self.name!r} made no further calls)"
            )
            raise KeyRefused(self.refused) from None
        self.answered = True
        return raw


class KeyRefused(Exception):
    """The provider refused the judge's key: the message names where the key comes from."""


def _failure(exc: BaseException, name: str) -> str:
    from langchain_core.exceptions import OutputParserException

    text = " ".join((str(exc).splitlines() or [""])[0].split())[:300]
    if isinstance(exc, PromptError):
        return f"prompt could not be filled: {text}"
    if isinstance(exc, (OutputParserException, *PARSE_ERRORS)):  # no verdict: its failure
        kind = type(exc).__name__
        return f"evaluator {name!r} failed: judge reply could not be parsed: {kind}: {text}"
    if isinstance(exc, KeyRefused):  # the provider's own text may show the key: left out
        return f"evaluator {name!r} failed: judge call failed: {text}"
    return f"evaluator {name!r} failed: judge call failed: {type(exc).__name__}: {text}"


def _checked(
    raw: Any, key: str, continuous: bool, choices: list[float] | None, name: str = ""
) -> dict:
    """openevals' result, with a score of the wrong type or range turned into None: the
    judge's failure (a judge doing so on every result fails the run), except a number from
    a true/false judge, which its own line after the table explains (``continuous: true``)."""
    score, comment = raw.get("score"), raw.get("comment")
    if choices:
        ok = isinstance(score, int | float) and not isinstance(score, bool) and score in choices
        expected = f"one of {choices}"
    elif continuous:
        ok = isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1
        expected = "a number from 0 to 1"
    else:
        ok = isinstance(score, bool)
        expected = "true or false"
        if isinstance(score, int | float) and not ok:
            expected += f" ({NUMBER_FOR_BOOLEAN})"
    if not ok:
        comment = f"judge returned {score!r}, not {expected}"
        if NUMBER_FOR_BOOLEAN not in expected:
            comment = f"evaluator {name or key!r} failed: {comment}"
        return {"key": key, "score": None, "comment": comment}
    return {"key": key, "score": score, "comment": comment}


async def run_judge(
    judge: Any,
    *,
    key: str,
    model: str,
    pricing: Mapping[str, Any] | None,
    continuous: bool,
    choices: list[float] | None,
    calls: JudgeCalls,
    **kwargs: Any,
) -> dict:
    with measure(model, pricing):
        try:
            raw = await calls.call(judge, **kwargs)
        except Exception as exc:
            return {"key": key, "score": None, "comment": _failure(exc, calls.name)}
    return _checked(raw, key, continuous, choices, calls.name)


def prompt_messages(
    prompt: str, template: str, system: str | None, roots: tuple[str, ...], base_dir: Any
) -> Callable[..., list[ChatCompletionMessage]]:
    """The judge's messages from a prompt (inline, a file or a bundled name) filled with
    the values of ``roots`` it is called with, after ``system`` when given."""
    text, origin = load_prompt(prompt, base_dir)
    rendered = Template(text, style=template_style(template, origin))

    def messages(**values: Any) -> list[ChatCompletionMessage]:
        content = rendered.fill({root: values.get(root) or {} for root in roots})
        head: list[ChatCompletionMessage] = (
            [{"role": "system", "content": system}] if system else []
        )
        return [*head, {"role": "user", "content": content}]

    return messages


@register(
    "llm_judge",
    family="judge",
    reads="whatever the prompt names: inputs, outputs, reference_outputs, trace",
    description="openevals LLM-as-judge with a prompt (inline, file, bundled) and a model",
    example=(
        "- {name: routing_quality, type: llm_judge, prompt: routing_quality,\n"
        '   model: "openai:gpt-4o-mini", continuous: true}'
    ),
)
def llm_judge(
    *,
    prompt: str,
    model: str,
    continuous: bool = False,
    choices: list[float] | None = None,
    use_reasoning: bool = True,
    few_shot_examples: list[dict[str, Any]] | None = None,
    system: str | None = None,
    feedback_key: str | None = None,
    template: str = "auto",
    model_kwargs: dict[str, Any] | None = None,
    base_url: str | None = None,
    name: str = "llm_judge",
    pricing: Mapping[str, Any] | None = None,
    base_dir: Any = None,
) -> Any:
    """Score key: ``feedback_key``, else the evaluator's YAML name."""
    from openevals.llm import create_async_llm_as_judge

    _check_options(continuous, choices)
    roots = ("inputs", "outputs", "reference_outputs", "trace")
    messages = prompt_messages(prompt, template, system, roots, base_dir)
    kwargs = model_kwargs_of(model_kwargs, base_url)
    chat = make_chat_model(model, kwargs)
    calls = JudgeCalls(name, key_source(model, kwargs))
    key = feedback_key or name
    judge = create_async_llm_as_judge(
        prompt=messages,
        judge=chat,
        feedback_key=key,
        continuous=continuous,
        choices=choices,
        use_reasoning=use_reasoning,
        few_shot_examples=few_shot_examples,  # type: ignore[arg-type]
    )

    async def evaluate(
        inputs: dict, outputs: dict, reference_outputs: dict, trace: Trace | None = None
    ) -> dict:
        return await run_judge(
            judge,
            key=key,
            model=model,
            pricing=pricing,
            continuous=continuous,
            choices=choices,
            calls=calls,
            inputs=inputs,
            outputs=outputs,
            reference_outputs=reference_outputs,
            trace=trace_view(trace),
        )

    evaluate.score_keys = (key,)  # type: ignore[attr-defined]
    evaluate.judge_calls = calls  # type: ignore[attr-defined]  # a judge: see FirstCalls
    return evaluate


@register(
    "trajectory_judge",
    family="judge",
    reads="returned or traced messages; outputs.trajectory / expected_tools if present",
    optional_references=("trajectory", "expected_tools"),
    description="openevals trajectory LLM-as-judge, with the reference when the example has one",
    example='- {name: trajectory_judge, model: "openai:gpt-4o-mini", sample: 0.25}',
)
def trajectory_judge(
    *,
    model: str,
    prompt: str | None = None,
    continuous: bool = False,
    choices: list[float] | None = None,
    use_reasoning: bool = True,
    few_shot_examples: list[dict[str, Any]] | None = None,
    system: str | None = None,
    source: str = "auto",
    model_kwargs: dict[str, Any] | None = None,
    base_url: str | None = None,
    name: str = "trajectory_judge",
    pricing: Mapping[str, Any] | None = None,
    base_dir: Any = None,
) -> Any:
    """openevals' TRAJECTORY_ACCURACY_PROMPT(_WITH_REFERENCE), or ``prompt`` for both."""
    from openevals.prompts import (
        TRAJECTORY_ACCURACY_PROMPT,
        TRAJECTORY_ACCURACY_PROMPT_WITH_REFERENCE,
    )
    from openevals.trajectory.llm import create_async_trajectory_llm_as_judge

    _check_options(continuous, choices)
    kwargs = model_kwargs_of(model_kwargs, base_url)
    chat = make_chat_model(model, kwargs)
    calls = JudgeCalls(name, key_source(model, kwargs))
    custom = load_prompt(prompt, base_dir)[0] if prompt else None
    options = {
        "judge": chat,
        "feedback_key": name,
        "continuous": continuous,
        "choices": choices,
        "use_reasoning": use_reasoning,
        "few_shot_examples": few_shot_examples,
        "system": system,
    }
    with_ref = create_async_trajectory_llm_as_judge(
        prompt=custom or TRAJECTORY_ACCURACY_PROMPT_WITH_REFERENCE, **options
    )
    without_ref = create_async_trajectory_llm_as_judge(
        prompt=custom or TRAJECTORY_ACCURACY_PROMPT, **options
    )

    async def evaluate(outputs: dict, reference_outputs: dict, trace: Trace) -> dict:
        actual, _ = actual_messages(outputs, trace, source)
        reference_outputs = reference_outputs or {}
        reference = reference_outputs.get("trajectory")
        if reference is None and reference_outputs.get("expected_tools") is not None:
            reference = expand_expected_tools(reference_outputs["expected_tools"])[0]
        judge, extra = (
            (with_ref, {"reference_outputs": reference}) if reference else (without_ref, {})
        )
        return await run_judge(
            judge,
            key=name,
            model=model,
            pricing=pricing,
            continuous=continuous,
            choices=choices,
            calls=calls,
            outputs=actual,
            **extra,
        )

    evaluate.judge_calls = calls  # type: ignore[attr-defined]  # a judge: see FirstCalls
    return evaluate
