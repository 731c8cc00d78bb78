"""Calling evaluators: parameters matched by name, any openevals/LangSmith return shape accepted."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from agenteval_cli.core.records import Score

KNOWN_PARAMETERS = ("inputs", "outputs", "reference_outputs", "trace", "run", "example")
# A summary (dataset-level) evaluator gets lists, one entry per result of a target.
SUMMARY_PARAMETERS = ("inputs", "outputs", "reference_outputs", "traces", "runs", "examples")


@lru_cache(maxsize=256)
def _wanted(fn: Callable[..., Any]) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """Parameter names ``fn`` declares, whether it takes ``**kwargs``, and its required ones."""
    params = list(inspect.signature(fn).parameters.values())
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    named = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    required = tuple(p.name for p in named if p.default is inspect.Parameter.empty)
    return tuple(p.name for p in named), var_kw, required


def wants(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` names a parameter ``name`` (a ``**kwargs`` does not)."""
    return name in _wanted(fn)[0]


def unknown_required(fn: Callable[..., Any], known: tuple[str, ...]) -> list[str]:
    """Required parameters that nothing can fill (the LangSmith ``(run, example)`` pair aside)."""
    names, _, required = _wanted(fn)
    if len(names) == 2 and not set(names) & set(known):
        return []
    return [n for n in required if n not in known]


def evaluator_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def arguments_for(fn: Callable[..., Any], available: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``available`` that ``fn`` asks for by name (all of it for ``**kwargs``).

    As in LangSmith, two parameters with other names are taken as ``(run, example)``.
    """
    names, var_kw, _ = _wanted(fn)
    if var_kw:
        return dict(available)
    if len(names) == 2 and not set(names) & set(available) and "run" in available:
        return {names[0]: available["run"], names[1]: available.get("example")}
    return {name: available[name] for name in names if name in available}


Plan = tuple[tuple[tuple[str, str], ...] | None, bool]


@lru_cache(maxsize=256)
def argument_plan(fn: Callable[..., Any], offered: tuple[str, ...]) -> Plan:
    """What :func:`arguments_for` passes ``fn`` when ``offered`` are the available names,
    worked out once: ``((parameter, available name), ...)``, or None for all of them
    (``**kwargs``); and whether ``run`` is among them."""
    names, var_kw, _ = _wanted(fn)
    if var_kw:
        return None, "run" in offered
    if len(names) == 2 and not set(names) & set(offered) and "run" in offered:
        return ((names[0], "run"), (names[1], "example")), True
    pairs = tuple((name, name) for name in names if name in offered)
    return pairs, any(name == "run" for name, _ in pairs)


def planned_arguments(plan: Plan, available: dict[str, Any]) -> dict[str, Any]:
    """The arguments :func:`argument_plan` chose, taken from ``available``."""
    pairs = plan[0]
    if pairs is None:
        return dict(available)
    return {parameter: available.get(name) for parameter, name in pairs}


def normalize(raw: Any, default_key: str) -> list[Score]:
    """Turn a dict, list of dicts, EvaluationResult(s), bool or number into Scores."""
    if type(raw) is dict and "score" in raw and "results" not in raw:
        # the common shape, {key, score, comment} with plain values: the same Score, directly
        number = raw["score"]
        key = raw.get("key")
        comment = raw.get("comment")
        if (
            (
                (type(number) is float and math.isfinite(number))
                or type(number) is bool
                or number is None
            )
            and (type(key) is str and key)
            and (comment is None or type(comment) is str)
        ):
            return [Score(key, number, comment)]
    if raw is None:
        raise ValueError("evaluator returned None; return {'key', 'score', 'comment'}")
    if isinstance(raw, list | tuple):
        return [score for item in raw for score in normalize(item, default_key)]
    if isinstance(raw, dict) and "results" in raw and isinstance(raw["results"], list):
        return normalize(raw["results"], default_key)
    if isinstance(raw, bool | numbers.Real):  # numpy's and Fraction's numbers too
        return [_score(default_key, raw, None, default_key)]
    if not isinstance(raw, dict):
        raw = getattr(raw, "__dict__", None) or _not_a_result(raw)
    if "score" not in raw and "value" not in raw:
        raise ValueError(f"evaluator result has no 'score': {sorted(raw)}")
    comment = raw.get("comment")
    return [
        _score(
            str(raw.get("key") or default_key),
            raw.get("score", raw.get("value")),
            None if comment is None else str(comment),
            default_key,
        )
    ]


def _score(key: str, value: Any, comment: str | None, evaluator: str) -> Score:
    """A score of ``value``; a NaN or infinite one is null, its comment saying that the
    evaluator failed (so one that does so on every result fails the run, as any other)."""
    if value is None or isinstance(value, bool):
        return Score(key, value, comment)
    if isinstance(value, numbers.Real):  # numpy's float32 and int64, a Fraction: their value
        number = float(value)
        if math.isfinite(number):
            return Score(key, number, comment)
        reason = (
            f"evaluator {evaluator!r} failed: it returned {number!r}, not a finite number; "
            "return a finite number, a bool or null"
        )
        return Score(key, None, reason if comment is None else f"{reason} (its comment: {comment})")
    raise ValueError(f"score must be a number, a bool or null, got {type(value).__name__}")


def _not_a_result(raw: Any) -> dict:
    raise ValueError(f"evaluator returned {type(raw).__name__}; return a dict with 'score'")
