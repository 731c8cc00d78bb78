"""Each registered evaluator described once: what ``agenteval evaluators show`` prints and what
``docs/evaluator-reference.md`` holds (written by ``agenteval evaluators list --markdown``
and checked against the registry by the tests, so it is never stale)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from agenteval_cli.evaluators.registry import EvaluatorInfo, common_options
from agenteval_cli.metrics.registry import MetricInfo

# Options every evaluator entry takes, handled by the loader rather than the factory.
COMMON_OPTIONS = tuple(common_options())
# Evaluators whose score key is the name they are given in the spec.
NAMED_BY_SPEC = ("llm_judge", "custom", "trajectory_judge")


@dataclass(frozen=True)
class Option:
    name: str
    default: str  # "required", or the default as YAML would write it
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Description:
    name: str
    family: str
    summary: bool  # a dataset-level evaluator
    description: str
    reads: str
    scores: str
    details: str  # the factory's docstring, as plain text
    options: tuple[Option, ...]
    example: str
    without_answer: str = ""  # its keys on a result that raised or stopped at interrupt()


def without_answer(info: EvaluatorInfo) -> str:
    """What the evaluator scores for a result with no final answer (an error, an interrupt)."""
    needing = [m.key for m in info.metrics if m.needs_answer]
    if info.family == "custom":
        return "null, unless its keys are declared `needs_answer: false` (docs/evaluators.md)"
    if not needing:
        return "scored from its trace"
    if len(needing) == len(info.metrics) or info.name in NAMED_BY_SPEC:
        return "null, the reason in the comment (it needs the final answer)"
    return f"{', '.join(needing)} null (they need the final answer); the others from its trace"


def describe(info: EvaluatorInfo) -> Description:
    keys = ", ".join(f"{m.key} ({_reads(m)})" for m in info.metrics)
    if info.name == "retrieval":
        keys = f"one key per metric and k, and {keys}"
    if info.name in NAMED_BY_SPEC:
        keys = "the evaluator's name (label, direction, format: see docs/evaluators.md)"
    choices = info.choices()
    options = tuple(
        Option(
            name,
            "required" if default is inspect.Parameter.empty else _yaml(default),
            tuple(str(c) for c in choices.get(name, ())),
        )
        for name, default in info.options()
    )
    return Description(
        name=info.name,
        family=info.family,
        summary=info.summary,
        description=info.description,
        reads=info.reads,
        scores=keys,
        details=plain_text(inspect.getdoc(info.factory) or ""),
        options=options,
        example=info.example,
        without_answer=without_answer(info),
    )


def _reads(declared: MetricInfo) -> str:
    """``count, lower is better`` (``pass/fail`` for a binary outcome), and how a
    conversation has it when it says."""
    kind = ", pass/fail" if declared.binary else ""
    text = f"{declared.format}{kind}, {declared.direction} is better"
    if declared.level == "conversation":
        return text + ", per conversation"
    if declared.across_turns == "sum":
        return text + ", summed over a conversation's turns"
    return text


def plain_text(doc: str) -> str:
    """A docstring as prose: ````code```` as `code`, each paragraph on one line."""
    doc = re.sub(r"``([^`]+)``", r"`\1`", doc)
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def option_text(option: Option) -> str:
    """``mode: one of strict, unordered (default strict)``."""
    if option.choices:
        listed = ", ".join(option.choices)
        return (
            f"one of {listed} ({option.default})"
            if option.default == "required"
            else (f"one of {listed} (default {option.default})")
        )
    return option.default if option.default == "required" else f"default {option.default}"


def markdown(infos: Iterable[EvaluatorInfo]) -> str:
    """The reference page: every evaluator by family, with its keys, options and an example."""
    lines = [
        "# Evaluator reference",
        "",
        "Every evaluator a spec can name, written from the registry by",
        "`agenteval evaluators list --markdown` (so it matches the installed version). How to",
        "choose and combine them: [Evaluators](evaluators.md).",
        "",
        "Every evaluator also takes these options:",
        "",
        *(f"- `{name}`: {text}" for name, text in COMMON_OPTIONS),
    ]
    described = sorted((describe(i) for i in infos), key=lambda d: (d.family, d.name))
    family = None
    for d in described:
        if d.family != family:
            family = d.family
            lines += ["", f"## {family}"]
        title = f"{d.name} (dataset-level)" if d.summary else d.name
        lines += ["", f"### `{title}`", "", f"{d.description}.", ""]
        lines += [f"- **reads**: {d.reads}", f"- **scores**: {d.scores}"]
        lines += [f"- **without an answer** (an error, an interrupt): {d.without_answer}"]
        if d.details:
            lines += ["", d.details]
        lines += ["", "Options:", ""]
        if not d.options:
            lines.append("- (none of its own)")
        lines += [f"- `{o.name}`: {option_text(o)}" for o in d.options]
        lines += ["", "```yaml", "evaluators:", *(f"  {e}" for e in d.example.splitlines()), "```"]
    return "\n".join(lines) + "\n"


def _yaml(value: object) -> str:
    """A default as a spec would write it: null, true, 0.5, a bare word."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
