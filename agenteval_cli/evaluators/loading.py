"""From the spec's evaluator items to bound evaluators.

An item is ``name`` or ``{name, type?, sample?, seed?, level?, <options>}``. ``type`` names
the registry entry when ``name`` is your own (``{name: routing_quality, type: llm_judge,
...}``); without it the name is the registry entry. ``sample``/``seed`` work for every
evaluator, and so do ``label``, ``direction`` (or ``lower_is_better``), ``format`` and
``metrics: {key: {...}}``, which declare how its scores read (see
:func:`registry.entry_metrics`). ``level: conversation`` scores a conversation once, on its
whole transcript, instead of each turn (see :mod:`agenteval_cli.evaluators.conversation`).
A judge that cannot run here (no credentials, no provider package) is left out with one
warning per missing variable, and the run goes on. Two evaluators that would write the same
score key are refused (the later would overwrite the earlier in every result), except two
built-ins whose own declarations share it (``soundness`` and ``unnecessary_steps``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    entry_references,
    function_metrics,
    lookup,
)
from agenteval_cli.evaluators.scoring import BoundEvaluator, apply_sampling, reads_turns
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.registry import LEVELS, Level, MetricInfo

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


def _level(value: Any, file: str, line: int | None) -> Level | None:
    """An item's ``level``: ``conversation`` scores a conversation once, on its whole
    transcript, instead of each turn; ``request`` (the default) each turn."""
    if value is None:
        return None
    if value not in LEVELS:
        raise UserError(
            f"level must be one of {', '.join(LEVELS)}, got {value!r}",
            file=file,
            line=line,
            hint="level: conversation scores a conversation once, on its whole transcript",
        )
    found: Level = value
    return found


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
        level = _level(options.pop("level", None), file, line)
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
        given = {"level": level} if level is not None else {}
        try:
            metrics = entry_metrics(
                {"name": item.name, "type": kind, **options, **declared, **given}, fn
            )
        except ValueError as exc:
            raise UserError(f"evaluator {item.name!r}: {exc}", file=file, line=line) from None
        if kind != item.name and not info.names_its_score:  # a built-in under a name of its own
            fn, metrics = _under_its_name(fn, info, item.name, metrics)
        if level == "conversation":  # every key it scores is the conversation's
            metrics = [replace(m, level="conversation") for m in metrics]
        keys = [m.key for m in metrics]
        needed, optional = entry_references(kind, fn)
        summary = info.summary or bool(getattr(fn, "is_summary", False))
        renamable = info.names_its_score or len(function_metrics(fn) or info.metrics) == 1
        writer = _Writer(item.name, line, info if kind == item.name else None, summary, renamable)
        for key in keys:
            _claim(writers, key, writer, file)
        bound.append(
            BoundEvaluator(
                name=item.name,
                fn=fn,
                keys=tuple(keys),
                sample=sample,
                seed=seed,
                summary=summary,
                metrics=tuple(metrics),
                level="conversation" if level == "conversation" or reads_turns(fn) else "request",
                references=tuple(dict.fromkeys((*needed, *optional))),
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
    renamable: bool = True  # a name of its own is its score key (it writes one key)


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
        hint=_apart(first, writer, key),
    )


def _apart(first: _Writer, second: _Writer, key: str) -> str:
    """How to keep two items' scores apart: a name of its own for one (its score key), when
    one of them writes a single key; else leave one out."""
    kind = second.builtin.name if second.builtin is not None else None
    if second.renamable and kind is not None:
        return (
            f"give one a name of its own, its score key: {{name: {key}_2, type: {kind}, "
            "...}; or leave one out"
        )
    if second.renamable:
        return "give one of them another name (its score key), or leave one out"
    if first.renamable and first.builtin is not None:
        return (
            f"give {first.name!r} a name of its own, its score key: {{name: {key}_2, "
            f"type: {first.builtin.name}, ...}}; or leave one out"
        )
    return (
        f"{key!r} is one of several keys that {second.name!r} writes, which a name does not "
        "change: leave one of them out"
    )


def _under_its_name(
    fn: Callable[..., Any], info: EvaluatorInfo, name: str, metrics: list[MetricInfo]
) -> tuple[Callable[..., Any], list[MetricInfo]]:
    """A built-in that writes its own keys, given a name of its own
    (``{name: precision_no_router, type: routing_precision, ...}``): one key is written under
    that name, so the same built-in with other options sits beside it; several keys (or
    keys it makes up, ``precision@3``) stay its own, declared so, and a second item writing
    them is refused (:func:`_claim`)."""
    own = function_metrics(fn) or list(info.metrics)
    if len(own) != 1 or len(metrics) != 1:
        return fn, own
    key = own[0].key

    def renamed(raw: Any) -> Any:
        return [
            {"key": name if s.key == key else s.key, "score": s.score, "comment": s.comment}
            for s in normalize(raw, key)
        ]

    return _then(fn, renamed), metrics


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

    return _then(fn, checked)


def _then(fn: Callable[..., Any], checked: Callable[[Any], Any]) -> Any:
    """``fn`` whose result (awaited, for an async one) goes through ``checked``."""
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


def catalog_of(evaluators: Sequence[BoundEvaluator]) -> Catalog:
    """The catalog of a run's bound evaluators: how every key they score reads, and the
    per-result keys in the spec's order (what its experiments keep)."""
    return Catalog.of(
        (m for e in evaluators for m in e.metrics),
        (k for e in evaluators if not e.summary for k in e.keys),
    )
