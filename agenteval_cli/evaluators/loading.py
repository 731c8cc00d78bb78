"""From the spec's evaluator items to bound evaluators.

An item is ``name`` or ``{name, type?, sample?, seed?, <options>}``. ``type`` names the
registry entry when ``name`` is your own (``{name: routing_quality, type: llm_judge, ...}``);
without it the name is the registry entry. ``sample``/``seed`` work for every evaluator, and
so do ``label``, ``direction`` (or ``lower_is_better``), ``format`` and ``metrics: {key:
{...}}``, which declare how its scores read (see :func:`registry.entry_metrics`).
A judge that cannot run here (no credentials, no provider package) is left out with one
warning per missing variable, and the run goes on. Two evaluators that would write the same
score key are refused (the later would overwrite the earlier in every result), except two
built-ins whose own declarations share it (``soundness`` and ``unnecessary_steps``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Example
from agenteval_cli.evaluators.invoke import normalize
from agenteval_cli.evaluators.judge_model import JudgeUnavailable
from agenteval_cli.evaluators.registry import (
    METRIC_OPTIONS,
    EvaluatorInfo,
    build_evaluator,
    entry_metrics,
    lookup,
)
from agenteval_cli.evaluators.scoring import BoundEvaluator, apply_sampling
from agenteval_cli.metrics.registry import declare

Warn = Callable[[str], None]


def print_warning(message: str) -> None:
    """Warnings go to stderr, one line each, like the CLI's errors."""
    from rich.console import Console

    Console(stderr=True, soft_wrap=True, emoji=False).print(
        f"[bold yellow]warning:[/] {message}", highlight=False
    )


def _sample(value: Any, file: str, line: int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise UserError(
            f"sample must be a share of the examples in (0, 1], got {value!r}",
            file=file,
            line=line,
            hint="e.g. sample: 0.25",
        )
    return float(value)


def bind_evaluators(
    spec: Any, examples: Sequence[Example] | None = None, *, warn: Warn | None = None
) -> list[BoundEvaluator]:
    """Build every evaluator of ``spec``; bad items are UserErrors naming file:line."""
    warn = warn or print_warning
    file = str(spec.source)
    bound: list[BoundEvaluator] = []
    skipped: dict[str, list[str]] = {}
    writers: dict[str, _Writer] = {}
    customs: set[str] = set()  # your functions: the keys they return are known when called
    for index, item in enumerate(spec.evaluators):
        line = spec.line_of("evaluators", index)
        options = dict(item.options)
        kind = options.pop("type", None) or item.name
        if not isinstance(kind, str):
            raise UserError(f"evaluator type must be a name, got {kind!r}", file=file, line=line)
        sample = _sample(options.pop("sample", None), file, line)
        seed = options.pop("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise UserError(f"seed must be an integer, got {seed!r}", file=file, line=line)
        info = lookup(kind, file=file, line=line)
        if kind == "custom":
            customs.add(item.name)
        declared = {k: options.pop(k) for k in METRIC_OPTIONS if k in options}
        context = {
            "pricing": spec.pricing,
            "name": item.name,
            "base_dir": spec.base_dir,
            "spec_file": file,
            "spec_line": line,
        }
        try:
            fn = build_evaluator(kind, options, context=context, file=file, line=line)
        except JudgeUnavailable as exc:
            skipped.setdefault(str(exc), []).append(item.name)
            continue
        try:
            metrics = entry_metrics({"name": item.name, "type": kind, **options, **declared}, fn)
        except ValueError as exc:
            raise UserError(f"evaluator {item.name!r}: {exc}", file=file, line=line) from None
        keys = [m.key for m in metrics]
        summary = info.summary or bool(getattr(fn, "is_summary", False))
        writer = _Writer(item.name, line, info if kind == item.name else None, summary)
        for key in keys:
            _claim(writers, key, writer, file)
        declare(*metrics)
        bound.append(
            BoundEvaluator(
                name=item.name,
                fn=fn,
                keys=tuple(keys),
                sample=sample,
                seed=seed,
                summary=summary,
            )
        )
    owners = {key: w.name for key, w in writers.items() if not w.summary}
    for evaluator in bound:
        if evaluator.name in customs and not evaluator.summary:
            evaluator.fn = _keeping_to_its_keys(evaluator.fn, evaluator.name, owners)
    for reason, names in skipped.items():
        warn(f"skipping judge(s) {', '.join(names)}: {reason}; the other evaluators still run")
    if examples is not None:
        apply_sampling(bound, examples)
    return bound


@dataclass(frozen=True)
class _Writer:
    """An evaluator item of the spec, as the writer of its score keys."""

    name: str
    line: int | None
    builtin: EvaluatorInfo | None  # the registry entry, when the item is one under its name
    summary: bool  # a summary's keys are the dataset's, apart from the results'


def _claim(writers: dict[str, _Writer], key: str, writer: _Writer, file: str) -> None:
    """Record ``writer`` as the one evaluator writing ``key``; a second is a UserError
    naming both, unless both are built-ins declaring the key themselves (the same measure)."""
    first = writers.setdefault(key, writer)
    if first is writer or first.summary != writer.summary:
        return
    if (
        first.builtin is not None
        and writer.builtin is not None
        and first.builtin is not writer.builtin
        and key in first.builtin.keys
        and key in writer.builtin.keys
    ):
        return
    where = f" (line {first.line})" if first.line is not None else ""
    raise UserError(
        f"evaluators {first.name!r}{where} and {writer.name!r} both write the score key "
        f"{key!r}: one would overwrite the other in every result",
        file=file,
        line=writer.line,
        hint="rename one (a judge may set feedback_key:), or leave one out",
    )


def _keeping_to_its_keys(fn: Callable[..., Any], name: str, owners: dict[str, str]) -> Any:
    """``fn``, failing (on each result, loudly) when it returns a key another evaluator of
    the spec writes: what it returns is only known when it is called, and a silent overwrite
    would leave the other's figure wrong."""
    taken = {key: owner for key, owner in owners.items() if owner != name}

    def checked(raw: Any) -> Any:
        for found in normalize(raw, name):
            if found.key in taken:
                raise ValueError(
                    f"it returned the score key {found.key!r}, which evaluator "
                    f"{taken[found.key]!r} writes: return a key of its own, or leave one out"
                )
        return raw

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            return checked(await fn(*args, **kwargs))

        return guarded_async

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        raw = fn(*args, **kwargs)
        if inspect.isawaitable(raw):
            pending = raw

            async def later() -> Any:
                return checked(await pending)

            return later()
        return checked(raw)

    return guarded
